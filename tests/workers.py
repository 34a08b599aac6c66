"""Real Celery processes for tests whose flow crosses the broker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings


def test_database_url() -> str:
    db = settings.DATABASES["default"]  # the test database pytest-django created
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def committed_version(name: str) -> str | None:
    """The shared version ``name`` as another process reads it: only what is committed
    (ops.process_memo)."""
    import psycopg

    with psycopg.connect(test_database_url()) as other:
        found = other.execute("SELECT value FROM ops_sharedversion WHERE name = %s", [name])
        row = found.fetchone()
    return row[0] if row else None


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": test_database_url(),
        "DATABASE_CONN_MAX_AGE": "0",
        **(extra or {}),
    }


def in_another_process(code: str, env: dict[str, str] | None = None) -> None:
    """Runs ``code`` in ``manage.py shell`` in a process of its own (an admin's change, a
    command), against the test database, with ``env`` on top of this process's."""
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=settings.BASE_DIR,
        env=_env(env),
        check=True,
        timeout=120,
    )


def start_worker(
    queue: str,
    env: dict[str, str] | None = None,
    pool: str = "solo",
    concurrency: int = 1,
    log: Path | None = None,
) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "-Q",
        queue,
        f"--pool={pool}",
        f"--concurrency={concurrency}",
        "--loglevel=INFO",
        "--without-heartbeat",
        "--without-mingle",
        "--without-gossip",
        "-n",
        f"{queue}-{uuid.uuid4().hex[:6]}@%h",
    ]
    output = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(
        command, cwd=settings.BASE_DIR, env=_env(env), stdout=output, stderr=subprocess.STDOUT
    )


def start_beat(
    schedule: Path, env: dict[str, str] | None = None, log: Path | None = None
) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "beat",
        "--loglevel=INFO",
        "-s",
        str(schedule),
    ]
    output = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115
    return subprocess.Popen(
        command, cwd=settings.BASE_DIR, env=_env(env), stdout=output, stderr=subprocess.STDOUT
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def celery_worker(queue: str | None = None, env: dict[str, str] | None = None) -> Iterator[str]:
    """A worker on its own queue (so parallel test processes never share messages)
    against the test database; yields the queue name."""
    queue = queue or f"test-{uuid.uuid4().hex[:12]}"
    process = start_worker(queue, env)
    try:
        yield queue
    finally:
        stop(process)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A redis-server of the test's own, on a free port, that the test may restart."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert wait_until(self._answers, timeout=10), "redis-server did not start"

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def restart(self, down_seconds: float = 2.0) -> None:
        stop(self.process)
        time.sleep(down_seconds)
        self.start()

    def stop(self) -> None:
        stop(self.process)


def wait_until(condition, timeout: float = 30.0, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


class Supervised:
    """Keeps a process running as a supervisor would (docker's restart policy, systemd):
    a process that exits is started again on the next `check`."""

    def __init__(self, start) -> None:
        self._start = start
        self.process = start()
        self.restarts = 0

    def check(self) -> None:
        if self.process.poll() is not None:
            self.process = self._start()
            self.restarts += 1

    def kill(self) -> None:
        self.process.send_signal(9)  # SIGKILL: no warm shutdown, no acks
        self.process.wait()

    def stop(self) -> None:
        stop(self.process)


def send_through(task, broker_url: str, monkeypatch) -> Callable[[], None]:
    """This process sends ``task`` (services send by name, ops.jobs.send) to the test's own
    broker (a PrivateRedis), where the test's worker listens, instead of the configured one.
    Returns a function that connects again (after the test restarted that broker)."""
    from celery import current_app

    broker = {"connection": current_app.connection_for_write(broker_url)}
    send_task = current_app.send_task

    def send_to_the_private_broker(name, *args, **options):
        if name == task.name:
            options = {**options, "connection": broker["connection"], "retry": False}
        return send_task(name, *args, **options)

    def reconnect() -> None:
        broker["connection"] = current_app.connection_for_write(broker_url)

    monkeypatch.setattr(current_app, "send_task", send_to_the_private_broker)
    return reconnect


def refuse_the_send_of(job_id: int, monkeypatch) -> None:
    """The broker refuses the task sent for ``job_id`` (args ``(job_id,)``) and takes every
    other send, as a connection reset in the middle of a requeue would."""
    from celery import current_app
    from kombu.exceptions import OperationalError

    send_task = current_app.send_task

    def refuse_one(name, args=None, *rest, **options):
        if tuple(args or ()) == (job_id,):
            raise OperationalError("connection reset by the broker")
        return send_task(name, args, *rest, **options)

    monkeypatch.setattr(current_app, "send_task", refuse_one)
