"""Content-Security-Policy and Permissions-Policy for every page.

Scripts come only from the tool's own static files (no inline script anywhere, so an
injected `<script>` or `javascript:` URL does not run), no plugins, no `<base>`, and forms
post to the tool itself, or to the platform where a page must (the deep-linking return).
Framing: the registered platforms may frame the tool (LTI embeds it in an iframe), nobody
else; the admin site is never framed; a view may name its own frame ancestors (the
registration page, framed by the platform that is registering)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

from .models import Registration

# Kept per process. A registration saved or deleted (by any process, a command included)
# bumps a version in the shared cache, which each process reads at most once every
# VERSION_CHECK_SECONDS rather than on every response (a cache read per page was as costly
# as the rest of the page's cache work): a new platform may frame the tool (e.g. its
# deep-linking picker) at once in the process that registered it and within that second in
# every other. The minute bounds how stale a process can be while the cache is unreachable.
VERSION_CHECK_SECONDS = 1.0
MEMO_SECONDS = 60
REGISTRATIONS_VERSION_KEY = "lti:registrations:version"


@dataclass
class _Origins:
    version: object
    check_after: float  # when to read the version again
    expires: float
    origins: list[str]


_memo: dict[str, _Origins] = {}


def _origin(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket
        return None
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


def frame_ancestors() -> list[str]:
    now = time.monotonic()
    memo = _memo.get("origins")
    if memo and now < memo.check_after:
        return memo.origins
    version = cache.get(REGISTRATIONS_VERSION_KEY)
    if memo and memo.version == version and now < memo.expires:
        memo.check_after = min(now + VERSION_CHECK_SECONDS, memo.expires)
        return memo.origins
    found = set(settings.LTI_FRAME_ANCESTORS)
    try:
        registered = list(
            Registration.objects.filter(is_active=True).values_list("issuer", "auth_login_url")
        )
    except DatabaseError:
        # The database is down: keep what was known (the probes must still answer).
        return memo.origins if memo else sorted(found)
    for issuer, login_url in registered:
        found.update(filter(None, (_origin(issuer), _origin(login_url))))
    origins = sorted(found)
    expires = now + MEMO_SECONDS
    _memo["origins"] = _Origins(
        version, min(now + VERSION_CHECK_SECONDS, expires), expires, origins
    )
    return origins


@receiver([post_save, post_delete], sender=Registration)
def _registrations_changed(**kwargs) -> None:
    _memo.clear()
    cache.set(REGISTRATIONS_VERSION_KEY, secrets.token_hex(8), None)


PERMISSIONS_POLICY = ", ".join(
    f"{feature}=()"
    for feature in (
        "accelerometer",
        "camera",
        "geolocation",
        "gyroscope",
        "magnetometer",
        "microphone",
        "payment",
        "usb",
    )
)


def allow_framing_by(response: HttpResponse, url: str) -> None:
    """This response, and only it, may be framed by the origin of `url` and the operator's
    LTI_FRAME_ANCESTORS (a Canvas institution's domain), and no one else."""
    origins = [origin for origin in [_origin(url), *settings.LTI_FRAME_ANCESTORS] if origin]
    response.csp_frame_ancestors = origins or ["'none'"]


def allow_form_action(response: HttpResponse, url: str) -> None:
    """This response's forms may also post to the origin of `url`."""
    origin = _origin(url)
    if origin:
        response.csp_form_action = [*getattr(response, "csp_form_action", []), origin]


def content_security_policy(request: HttpRequest, response: HttpResponse) -> str:
    if request.path.startswith("/admin/"):
        ancestors = ["'none'"]
    else:
        ancestors = getattr(response, "csp_frame_ancestors", None) or [
            "'self'",
            *frame_ancestors(),
        ]
    directives = {
        "script-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'", *getattr(response, "csp_form_action", [])],
        "frame-ancestors": ancestors,
    }
    return "; ".join(f"{name} {' '.join(values)}" for name, values in directives.items())


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = content_security_policy(request, response)
        return response
