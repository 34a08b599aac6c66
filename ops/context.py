"""The id of the request (or of the request that enqueued the running task)."""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

REQUEST_ID_HEADER = "X-Request-ID"
_ACCEPTED = re.compile(r"[A-Za-z0-9._-]{8,64}")
request_id: ContextVar[str | None] = ContextVar("request_id", default=None)


def new_request_id(offered: str | None = None) -> str:
    """The id a front proxy or client offered, if it looks like one; else a fresh one."""
    if offered and _ACCEPTED.fullmatch(offered):
        return offered
    return uuid.uuid4().hex
