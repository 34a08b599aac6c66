"""The way round a browser that blocks the tool's cookie inside the LMS page.

Safari, and any browser set to block third-party cookies, drops the session cookie that a
launch sets inside the LMS iframe, so the page the launch redirects to arrives signed out.
The launch therefore names a handoff in that redirect. A page that arrives without its
session offers to open the activity in a new window, where the cookie is first-party, and
the handoff's link carries the launch's session there. A handoff serves once, for
``HANDOFF_SECONDS``, in the browser (User-Agent) that launched; a page that arrives with its
session drops it at once, so a handoff lives only where it is needed.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.cache import cache
from django.http import HttpRequest

logger = logging.getLogger(__name__)

HANDOFF_PARAM = "handoff"
HANDOFF_SECONDS = 120


@dataclass(frozen=True)
class Handoff:
    session_key: str
    next_url: str


def _cache_key(token: str) -> str:
    return f"lti-handoff:{token}"


def _browser(request: HttpRequest) -> str:
    return hashlib.sha256(request.META.get("HTTP_USER_AGENT", "").encode()).hexdigest()


class _Unavailable(Exception):
    pass


def _cache_call(operation: Any, *args: Any) -> Any:
    try:
        return operation(*args)
    except Exception as error:  # noqa: BLE001 (any cache failure: there is no handoff then)
        logger.warning("handoff cache unavailable for %s", operation.__name__)
        raise _Unavailable from error


def with_handoff(request: HttpRequest, next_url: str) -> str:
    """``next_url`` naming a new handoff of this request's session to it (``next_url`` alone
    when the cache cannot keep one)."""
    token = secrets.token_urlsafe(32)
    entry = {
        "session_key": request.session.session_key,
        "next_url": next_url,
        "browser": _browser(request),
    }
    try:
        _cache_call(cache.set, _cache_key(token), entry, HANDOFF_SECONDS)
    except _Unavailable:
        return next_url  # the launch goes on; only a browser blocking its cookie misses out
    separator = "&" if "?" in next_url else "?"
    return f"{next_url}{separator}{urlencode({HANDOFF_PARAM: token})}"


def offered(token: str) -> bool:
    """Whether a handoff by this token is still there to take."""
    try:
        return bool(token) and _cache_call(cache.get, _cache_key(token)) is not None
    except _Unavailable:
        return False


def take(request: HttpRequest, token: str) -> Handoff | None:
    """The handoff, once: None when it expired, was taken or dropped, or was made in
    another browser."""
    try:
        entry = _cache_call(cache.get, _cache_key(token))
        if not entry or entry["browser"] != _browser(request):
            return None
        if not _cache_call(cache.delete, _cache_key(token)):
            return None  # another request took it first
    except _Unavailable:
        return None
    return Handoff(session_key=entry["session_key"], next_url=entry["next_url"])


def drop(token: str) -> None:
    with contextlib.suppress(_Unavailable):  # it expires by itself
        _cache_call(cache.delete, _cache_key(token))
