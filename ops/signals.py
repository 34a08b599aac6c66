"""Celery: a task carries the id of the request that enqueued it, and runs with it; a worker
and beat announce themselves in a log line (production runs them with ``--quiet``, whose
banners are plain text)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time

from celery.signals import (
    beat_init,
    before_task_publish,
    celeryd_after_setup,
    task_postrun,
    task_prerun,
)

from .context import new_request_id, request_id
from .logs import JsonFormatter
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


def say_as_json(message: str, stream=sys.__stderr__) -> None:
    """Celery's ``safe_say`` (its shutdown notices), as a JSON line. Celery writes them from
    signal handlers with a bare ``os.write``, where logging's locks could deadlock: so does
    this."""
    record = logging.LogRecord(
        "celery.worker",
        logging.INFO,
        __file__,
        0,
        message.strip(),
        (),
        None,
    )
    with contextlib.suppress(OSError, ValueError):  # a lost notice must never break a shutdown
        os.write(stream.fileno(), (JsonFormatter().format(record) + "\n").encode())


@celeryd_after_setup.connect
def announce_worker(sender: str, instance=None, **kwargs) -> None:
    from celery.apps import worker as worker_module
    from django.conf import settings

    if settings.LOG_FORMAT == "json":
        worker_module.safe_say = say_as_json
    queues = sorted(instance.app.amqp.queues.consume_from) if instance else []
    logger.info(
        "worker %s starting: queues %s, concurrency %s (%s pool)",
        sender,
        ", ".join(queues),
        getattr(instance, "concurrency", "?"),
        getattr(getattr(instance, "pool_cls", None), "__module__", "?").rsplit(".", 1)[-1],
    )


@beat_init.connect
def announce_beat(sender=None, **kwargs) -> None:
    scheduler = getattr(sender, "scheduler", None)
    logger.info(
        "beat starting: %d scheduled tasks, schedule file %s",
        len(getattr(scheduler, "schedule", {}) or {}),
        getattr(sender, "schedule_filename", "?"),
    )
