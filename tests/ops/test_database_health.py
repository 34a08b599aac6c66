"""A connection the database ended (PostgreSQL restarted, an administrator ending the web's
connections) costs no failed request, and a live one is not asked (ops.postgresql,
decision 62)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from django.db.backends.postgresql.base import DatabaseWrapper as DjangoWrapper

from tests import workers
from tests.workers import free_port, stop, wait_until


def _end_other_connections() -> int:
    """Ends every other connection to this test database, as a restart would; how many."""
    with psycopg.connect(workers.test_database_url(), autocommit=True) as admin:
        ended = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]
    time.sleep(0.2)  # the ended backends' messages reach their sockets
    return ended


@pytest.mark.django_db(transaction=True)
def test_a_live_idle_connection_is_usable_without_a_round_trip(monkeypatch):
    connection.ensure_connection()
    asked = []
    real = DjangoWrapper.is_usable
    monkeypatch.setattr(DjangoWrapper, "is_usable", lambda self: asked.append(1) or real(self))
    assert connection.is_usable()
    assert asked == []  # Django's SELECT 1 not sent

    assert _end_other_connections() >= 1  # this test's own connection among them
    try:
        assert not connection.is_usable()
    finally:
        connection.close()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_first_request_after_the_database_ended_the_web_s_connection_succeeds(tmp_path):
    port = free_port()
    log = tmp_path / "gunicorn.log"
    env = {
        **os.environ,
        "DATABASE_URL": workers.test_database_url(),
        "DATABASE_CONN_MAX_AGE": "600",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "1",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
    }
    with open(log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "config.wsgi"],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )

    def ready() -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as answer:
                return answer.status, json.load(answer)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    try:
        assert wait_until(lambda: _answers(port), timeout=30), log.read_text()
        assert ready()[0] == 200  # the worker holds its connection now
        assert _end_other_connections() >= 1
        status, body = ready()
        assert (status, body["database"]) == (200, "ok"), log.read_text()
    finally:
        stop(server)


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
            return True
    except OSError:
        return False
