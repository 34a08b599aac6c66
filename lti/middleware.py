"""Content-Security-Policy and Permissions-Policy for every page.

Scripts come only from the tool's own static files (no inline script anywhere, so an
injected `<script>` or `javascript:` URL does not run), no plugins, no `<base>`, and forms
post to the tool itself, or to the platform where a page must (the deep-linking return).
Framing: the registered platforms may frame the tool (LTI embeds it in an iframe), nobody
else; the admin site is never framed; a view may name its own frame ancestors (the
registration page, framed by the platform that is registering)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

from . import registrations_memo
from .models import Registration


def _origin(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket
        return None
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


FRAMING_ORIGINS = "framing origins"  # their key in lti.registrations_memo


def frame_ancestors() -> list[str]:
    """The origins that may frame the tool: the operator's LTI_FRAME_ANCESTORS and every
    active registration's platform, kept per process (lti.registrations_memo)."""
    try:
        # Kept even when empty: a tool with no platform yet still answers every page.
        return registrations_memo.remembered(
            FRAMING_ORIGINS, _framing_origins, keep=lambda _origins: True
        )
    except DatabaseError:
        # The database is down: keep what was known (the probes must still answer).
        return registrations_memo.last_known(FRAMING_ORIGINS) or sorted(
            settings.LTI_FRAME_ANCESTORS
        )


def _framing_origins() -> list[str]:
    found = set(settings.LTI_FRAME_ANCESTORS)
    registered = Registration.objects.filter(is_active=True).values_list("issuer", "auth_login_url")
    for issuer, login_url in registered:
        found.update(filter(None, (_origin(issuer), _origin(login_url))))
    return sorted(found)


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
