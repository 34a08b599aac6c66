"""Rate limits per client address, on DRF's throttles (decision 30).

One limiter for the API and for the pages that need one (OIDC login, launch, dynamic
registration, the demo entry): DRF's ``SimpleRateThrottle`` with its rates and its client
address (``REMOTE_ADDR``, or the address the trusted proxies saw with ``TRUSTED_PROXY_COUNT``;
never a client's own ``X-Forwarded-For``), counting in fixed windows of the rate's duration
with the cache's atomic ``incr`` (Redis's ``INCR``), and ``add`` (``SET NX``) for a window's
first request. DRF's own count (read the request log, append, write it back) let a burst of
requests arriving together all read the same log: 13 to 15 of 24 went through a limit of 3.
A window lets an address up to twice its rate across a window's edge, never more. Rates are
``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``, read when a request is counted, so a changed
setting applies at once. While Redis is down the cache remembers nothing (ops.cache) and
requests go through: an outage must not lock everyone out. Admin sign-in has django-axes.
"""

from __future__ import annotations

import contextlib
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
    """Requests of one scope per client address, per window of the rate's duration."""

    def __init__(self, scope: str | None = None) -> None:
        self.scope = scope or self.scope
        super().__init__()

    def get_rate(self) -> str | None:
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_address(request)}

    def allow_request(self, request: Any, view: Any) -> bool:
        if self.rate is None:
            return True
        self._find_window(request)
        return self._counted() <= self.num_requests

    def wait(self) -> float:
        return self.window_ends - self.now

    def give_back(self) -> None:
        """Takes back this request's place in the count, taken by ``allow_request``: for
        limits that count only some outcomes (a token that turned out valid), each request
        still takes its place before it is looked at, so that a burst arriving together
        cannot all be looked at before any is counted."""
        if self.rate is None:
            return
        # The window's entry may be gone (its window over), or the cache unreachable.
        with contextlib.suppress(ValueError):
            self.cache.decr(self.key)

    def _find_window(self, request: Any) -> None:
        self.now = self.timer()
        window = int(self.now // self.duration)
        self.window_ends = (window + 1) * self.duration
        self.key = f"{self.get_cache_key(request, None)}:{window}"

    def _counted(self) -> int:
        """This request counted in its window; the window's count so far, this one included
        (0 while the cache is unreachable: an outage must not lock everyone out)."""
        # Counted where the window's entry is there already, in one round trip; the first
        # request of a window adds it. The entry outlives its window by a little, so that a
        # count that started just before its end is still there to add to.
        with contextlib.suppress(ValueError):
            return int(self.cache.incr(self.key))
        self.cache.add(self.key, 0, math.ceil(self.window_ends - self.now) + 1)
        try:
            return int(self.cache.incr(self.key))
        except ValueError:  # not there: the cache is unreachable
            return 0


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
