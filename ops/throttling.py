"""Rate limits per client address, on DRF's throttles (decision 30).

One limiter for the API and for the pages that need one (OIDC login, launch, dynamic
registration, the demo entry): DRF's ``SimpleRateThrottle``, counting in the cache, keyed by
the client's address as DRF finds it (``REMOTE_ADDR``, or the address the trusted proxies
saw with ``TRUSTED_PROXY_COUNT``; never a client's own ``X-Forwarded-For``). Rates are
``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``, read when a request is counted, so a changed
setting applies at once. While Redis is down the cache remembers nothing (ops.cache) and
requests go through: an outage must not lock everyone out. Admin sign-in has django-axes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle


def client_address(request: HttpRequest) -> str:
    """The client's address, as every limit counts it (the API's, the pages', axes')."""
    return BaseThrottle().get_ident(request)


class AddressThrottle(SimpleRateThrottle):
    """Requests of one scope per client address."""

    def __init__(self, scope: str | None = None) -> None:
        self.scope = scope or self.scope
        super().__init__()

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}

    def exhausted(self, request: Any) -> bool:
        """Whether the address has used its requests, without counting this one."""
        if self.rate is None:
            return False
        self.key = self.get_cache_key(request, None)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return len(self.history) >= self.num_requests

    def count(self) -> None:
        """Counts a request after ``exhausted`` said there was room."""
        if self.rate is not None:
            self.throttle_success()


class TokenFailureThrottle(AddressThrottle):
    """API calls with a token that failed: an address that keeps guessing is refused before
    its token is looked at, valid or not."""

    scope = "api_token_failures"


def too_many(request: HttpRequest, wait: float | None) -> HttpResponse:
    seconds = max(1, math.ceil(wait or 1))
    response = render(request, "429.html", {"seconds": seconds}, status=429)
    response["Retry-After"] = str(seconds)
    return response


def admin_locked_out(request: HttpRequest, *args: Any) -> HttpResponse:
    """django-axes' answer to a locked-out address: the same page, for the cool-off time."""
    return too_many(request, settings.AXES_COOLOFF_TIME.total_seconds())


def limited(scope: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """A view that answers 429 (a page, with Retry-After) to an address past the scope's rate."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def limited_view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            throttle = AddressThrottle(scope)
            if not throttle.allow_request(request, None):
                return too_many(request, throttle.wait())
            return view(request, *args, **kwargs)

        return limited_view

    return decorate
