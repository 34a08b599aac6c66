"""Celery: a task carries the id of the request that enqueued it, and runs with it."""

from __future__ import annotations

import logging
import time

from celery.signals import before_task_publish, task_postrun, task_prerun

from .context import new_request_id, request_id
from .metrics import TASK_SECONDS, TASKS

logger = logging.getLogger("ops.tasks")
HEADER = "request_id"
_tokens: dict[str, object] = {}
_started: dict[str, float] = {}


@before_task_publish.connect
def carry_request_id(headers: dict | None = None, **kwargs) -> None:
    current = request_id.get()
    if headers is not None and current and HEADER not in headers:
        headers[HEADER] = current


@task_prerun.connect
def adopt_request_id(task_id: str | None = None, task=None, **kwargs) -> None:
    offered = getattr(task.request, HEADER, None) or (task.request.headers or {}).get(HEADER)
    _tokens[task_id] = request_id.set(new_request_id(offered))
    _started[task_id] = time.perf_counter()
    logger.info("task %s started", task.name, extra={"task_name": task.name, "task_id": task_id})


@task_postrun.connect
def forget_request_id(
    task_id: str | None = None, task=None, state: str | None = None, **kwargs
) -> None:
    logger.info(
        "task %s finished: %s", task.name, state, extra={"task_name": task.name, "task_id": task_id}
    )
    started = _started.pop(task_id, None)
    if started is not None:
        TASK_SECONDS.labels(task.name).observe(time.perf_counter() - started)
    TASKS.labels(task.name, state or "UNKNOWN").inc()
    token = _tokens.pop(task_id, None)
    if token is not None:
        request_id.reset(token)
