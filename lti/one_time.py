"""Secrets that serve once, kept in the cache.

The new-window handoff (``handoff``) and the deep-linking relay (``deep_link_relay``) each
give a browser a random token and let one request take what the token names: the same
shape of token, refused without a cache read when it cannot be one of ours, and the same
take, which a racing request or an unreachable cache leaves empty-handed.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from django.core.cache import cache

_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def is_token(value: str) -> bool:
    """Whether ``value`` has the shape of ``new_token()``'s tokens."""
    return bool(_TOKEN.fullmatch(value))


def take(key: str) -> Any:
    """What the cache holds under ``key``, removed so that it serves once: None when nothing
    is there, when another request took it first (its delete removed nothing), or when the
    cache is unreachable."""
    entry = cache.get(key)
    if entry is None or not cache.delete(key):
        return None
    return entry
