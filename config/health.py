"""GET /healthz: the service answers, and says whether its database and broker do."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from .celery import app as celery_app


def _database_ok() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # any failure means "not reachable"; the reason is reported
        return False, f"{type(error).__name__}: {error}"
    return True, "ok"


def _broker_ok() -> tuple[bool, str]:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)
    except Exception as error:
        return False, f"{type(error).__name__}: {error}"
    return True, "ok"


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    database_ok, database = _database_ok()
    broker_ok, broker = _broker_ok()
    healthy = database_ok and broker_ok
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", "database": database, "broker": broker},
        status=200 if healthy else 503,
    )
