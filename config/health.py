"""Probes. GET /healthz: liveness, the process answers (a load balancer or an orchestrator
restarts it when it does not). GET /readyz: readiness, it can serve: the database answers
and every migration is applied; 503 with the reason otherwise (take it out of rotation, do
not restart it). Redis and the broker are reported too, but an instance serves without them
(decision 29), and every instance shares them: their outage answers 200 "degraded", since
taking every instance out of rotation would turn a degraded service into no service."""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from .celery import app as celery_app

PROBE_TIMEOUT_SECONDS = 2
logger = logging.getLogger(__name__)


def _database() -> str:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def _redis() -> str:
    if not settings.REDIS_URL:
        return "not used"
    client = redis.Redis.from_url(
        settings.REDIS_URL,
        socket_timeout=PROBE_TIMEOUT_SECONDS,
        socket_connect_timeout=PROBE_TIMEOUT_SECONDS,
    )
    try:
        client.ping()
    finally:
        client.close()
    return "ok"


def _broker() -> str:
    with celery_app.connection_for_write() as conn:
        conn.ensure_connection(
            max_retries=1, interval_start=0, interval_step=0, timeout=PROBE_TIMEOUT_SECONDS
        )
    return "ok"


_migrations_applied = False


def _migrations() -> str:
    global _migrations_applied
    if _migrations_applied:  # applied migrations stay applied for this process's life
        return "ok"
    connection = connections[DEFAULT_DB_ALIAS]
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        names = ", ".join(f"{m.app_label}.{m.name}" for m, _backwards in pending[:5])
        raise RuntimeError(f"{len(pending)} not applied ({names})")
    _migrations_applied = True
    return "ok"


CHECKS: dict[str, Callable[[], str]] = {
    "database": _database,
    "redis": _redis,
    "broker": _broker,
    "migrations": _migrations,
}
# What the service cannot serve without; the others degrade it (decision 29).
REQUIRED = frozenset({"database", "migrations"})


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    results: dict[str, str] = {}
    ready, degraded = True, False
    for name, check in CHECKS.items():
        if name == "migrations" and results.get("database") != "ok":
            results[name] = "unknown (no database)"
            continue
        try:
            results[name] = check()
        except Exception as error:  # the reason is reported; only REQUIRED ones gate readiness
            if name in REQUIRED:
                ready = False
            else:
                degraded = True
            # The probe is public: the kind of failure, not addresses or credentials (the
            # log has the full message).
            results[name] = (
                str(error) if name == "migrations" else f"unavailable ({type(error).__name__})"
            )
            logger.warning("readiness: %s failed: %s", name, error)
            if name == "database":
                connections[DEFAULT_DB_ALIAS].close()  # reconnect on the next probe
    status = "unavailable" if not ready else "degraded" if degraded else "ready"
    return JsonResponse({"status": status, **results}, status=200 if ready else 503)
