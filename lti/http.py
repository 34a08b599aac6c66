"""Outbound HTTP to platforms: every call has a connect and a read timeout."""

from __future__ import annotations

from typing import Any

import requests
from django.conf import settings

USER_AGENT = "gcquiz-lti-tool/1.0"


def timeout() -> tuple[float, float]:
    return (settings.LTI_HTTP_CONNECT_TIMEOUT, settings.LTI_HTTP_READ_TIMEOUT)


def get(url: str, **kwargs: Any) -> requests.Response:
    kwargs.setdefault("timeout", timeout())
    headers = {"User-Agent": USER_AGENT, **kwargs.pop("headers", {})}
    return requests.get(url, headers=headers, **kwargs)


def post(url: str, **kwargs: Any) -> requests.Response:
    kwargs.setdefault("timeout", timeout())
    headers = {"User-Agent": USER_AGENT, **kwargs.pop("headers", {})}
    return requests.post(url, headers=headers, **kwargs)
