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

import hashlib
from dataclasses import dataclass
from urllib.parse import urlencode

from django.core.cache import cache
from django.http import HttpRequest

from . import one_time

HANDOFF_PARAM = "handoff"
HANDOFF_SECONDS = 120


@dataclass(frozen=True)
class Handoff:
    session_key: str
    next_url: str
    language: str | None


def _cache_key(token: str) -> str:
    return f"lti-handoff:{token}"


def _browser(request: HttpRequest) -> str:
    return hashlib.sha256(request.META.get("HTTP_USER_AGENT", "").encode()).hexdigest()


def with_handoff(request: HttpRequest, next_url: str, language: str | None) -> str:
    """``next_url`` naming a new handoff of this request's session (and the launch's
    interface language) to it; ``next_url`` alone when the cache cannot keep one."""
    token = one_time.new_token()
    entry = {
        "session_key": request.session.session_key,
        "next_url": next_url,
        "language": language,
        "browser": _browser(request),
    }
    if not cache.add(_cache_key(token), entry, HANDOFF_SECONDS):
        # The cache is unreachable (ops.cache): the launch goes on; only a browser that
        # blocks its cookie misses out.
        return next_url
    separator = "&" if "?" in next_url else "?"
    return f"{next_url}{separator}{urlencode({HANDOFF_PARAM: token})}"


def offered(token: str) -> bool:
    """Whether a handoff by this token is still there to take."""
    return one_time.is_token(token) and cache.get(_cache_key(token)) is not None


def take(request: HttpRequest, token: str) -> Handoff | None:
    """The handoff, once: None when it expired or was taken, or when it was made in another
    browser (which spends it: a token that travelled is no good to anyone)."""
    entry = one_time.take(_cache_key(token)) if one_time.is_token(token) else None
    if entry is None or entry["browser"] != _browser(request):
        return None
    return Handoff(
        session_key=entry["session_key"], next_url=entry["next_url"], language=entry["language"]
    )


def drop(token: str) -> None:
    if one_time.is_token(token):
        cache.delete(_cache_key(token))  # unreachable: it expires by itself
