from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .context import REQUEST_ID_HEADER, new_request_id, request_id
from .metrics import REQUEST_SECONDS, REQUESTS


class RequestIdMiddleware:
    """Gives each request an id (the front proxy's X-Request-ID when it sends one), puts it
    on every log line of the request and in every task the request enqueues, and returns
    it in the response's X-Request-ID."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        current = new_request_id(request.headers.get(REQUEST_ID_HEADER))
        token = request_id.set(current)
        try:
            response = self.get_response(request)
        finally:
            request_id.reset(token)
        response[REQUEST_ID_HEADER] = current
        return response


KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class MetricsMiddleware:
    """Counts requests and times them, labelled by the view (never the raw path, whose
    ids would make a series per object)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        view = match.view_name if match else "unmatched"
        method = request.method if request.method in KNOWN_METHODS else "other"
        REQUEST_SECONDS.labels(method, view).observe(time.perf_counter() - started)
        REQUESTS.labels(method, view, str(response.status_code)).inc()
        return response
