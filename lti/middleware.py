"""Content-Security-Policy frame-ancestors: the registered platforms may frame the tool
(LTI embeds it in an iframe), nobody else; the admin site is never framed."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.db import DatabaseError
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

from .models import Registration

# Kept per process for a minute: a registration saved here clears it at once, one saved
# by another process is seen within the minute.
MEMO_SECONDS = 60
_memo: dict[str, tuple[float, list[str]]] = {}


def _origin(url: str) -> str | None:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


def frame_ancestors() -> list[str]:
    memo = _memo.get("origins")
    if memo and memo[0] > time.monotonic():
        return memo[1]
    found = set(settings.LTI_FRAME_ANCESTORS)
    try:
        registered = list(
            Registration.objects.filter(is_active=True).values_list("issuer", "auth_login_url")
        )
    except DatabaseError:
        # The database is down: keep what was known (the probes must still answer).
        return memo[1] if memo else sorted(found)
    for issuer, login_url in registered:
        found.update(filter(None, (_origin(issuer), _origin(login_url))))
    origins = sorted(found)
    _memo["origins"] = (time.monotonic() + MEMO_SECONDS, origins)
    return origins


@receiver([post_save, post_delete], sender=Registration)
def _registrations_changed(**kwargs) -> None:
    _memo.clear()


class FrameAncestorsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" in response:
            return response
        if request.path.startswith("/admin/"):
            ancestors = "'none'"
        else:
            ancestors = " ".join(["'self'", *frame_ancestors()])
        response["Content-Security-Policy"] = f"frame-ancestors {ancestors}"
        return response
