"""The way round a browser that blocks the tool's cookie inside the LMS page.

Safari, and any browser set to block third-party cookies, drops the session cookie that a
launch sets inside the LMS iframe, so the page the launch redirects to arrives signed out.
The launch therefore names a handoff in that redirect. A page that arrives without its
session offers to open the activity in a new window, where the cookie is first-party, and
the handoff's link carries the launch's session there. A handoff serves once, for
``HANDOFF_SECONDS``, in the browser (User-Agent) that launched; a page that arrives with its
session drops it at once, so a handoff lives only where it is needed. Deep linking has no
handoff: the content picker must answer the LMS from the LMS page itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.cache import cache
from django.http import HttpRequest

logger = logging.getLogger(__name__)

HANDOFF_PARAM = "handoff"
HANDOFF_SECONDS = 120


_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Handoff:
    session_key: str
    next_url: str
    language: str | None


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


def with_handoff(request: HttpRequest, next_url: str, language: str | None) -> str:
    """``next_url`` naming a new handoff of this request's session (and the launch's
    interface language) to it; ``next_url`` alone when the cache cannot keep one."""
    token = secrets.token_urlsafe(32)
    entry = {
        "session_key": request.session.session_key,
        "next_url": next_url,
        "language": language,
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
        return (
            bool(_TOKEN.fullmatch(token)) and _cache_call(cache.get, _cache_key(token)) is not None
        )
    except _Unavailable:
        return False


def take(request: HttpRequest, token: str) -> Handoff | None:
    """The handoff, once: None when it expired or was taken, or when it was made in another
    browser (which spends it: a token that travelled is no good to anyone)."""
    if not _TOKEN.fullmatch(token):
        return None
    try:
        entry = _cache_call(cache.get, _cache_key(token))
        if not entry or not _cache_call(cache.delete, _cache_key(token)):
            return None  # gone, or another request took it first
    except _Unavailable:
        return None
    if entry["browser"] != _browser(request):
        return None
    return Handoff(
        session_key=entry["session_key"], next_url=entry["next_url"], language=entry["language"]
    )


def drop(token: str) -> None:
    if _TOKEN.fullmatch(token):
        with contextlib.suppress(_Unavailable):  # it expires by itself
            _cache_call(cache.delete, _cache_key(token))
