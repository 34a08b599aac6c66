"""Outbound HTTP to platforms: every call has a connect and a read timeout, and each thread
keeps its connections to a platform alive between calls (a worker posts many scores)."""

from __future__ import annotations

import threading
from typing import Any

import requests
from django.conf import settings

USER_AGENT = "gcquiz-lti-tool/1.0"
_local = threading.local()


def timeout() -> tuple[float, float]:
    return (settings.LTI_HTTP_CONNECT_TIMEOUT, settings.LTI_HTTP_READ_TIMEOUT)


def _session() -> requests.Session:
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = requests.Session()
        session.headers["User-Agent"] = USER_AGENT
    return session


def request(method: str, url: str, **kwargs: Any) -> requests.Response:
    kwargs.setdefault("timeout", timeout())
    try:
        return _session().request(method, url, **kwargs)
    except requests.ConnectionError:
        # A kept-alive connection the platform closed, or a real failure: drop the pool so
        # the caller's retry (or the next call) starts on fresh connections.
        _local.session = None
        raise


def get(url: str, **kwargs: Any) -> requests.Response:
    return request("GET", url, **kwargs)


def post(url: str, **kwargs: Any) -> requests.Response:
    return request("POST", url, **kwargs)
