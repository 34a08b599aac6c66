"""A real Celery worker process for tests whose flow crosses the broker."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings


def _database_url() -> str:
    db = settings.DATABASES["default"]  # the test database pytest-django created
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


@contextmanager
def celery_worker(queue: str | None = None) -> Iterator[str]:
    """Start `celery worker` on its own queue (so parallel test workers never share
    messages) against the test database; yields the queue name."""
    queue = queue or f"test-{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "DATABASE_URL": _database_url(), "DATABASE_CONN_MAX_AGE": "0"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            queue,
            "--pool=solo",
            "--loglevel=INFO",
            "--without-heartbeat",
            "--without-mingle",
            "--without-gossip",
            "-n",
            f"{queue}@%h",
        ],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield queue
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until(condition, timeout: float = 30.0, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()
