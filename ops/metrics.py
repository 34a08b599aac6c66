"""Prometheus metrics: requests and their latency, Celery tasks and their duration (counted
in whichever process runs them), and, read from the database at scrape time, the grade-sync
backlog and the lab queue.

With several processes (gunicorn workers, Celery's prefork pool, several containers) set
PROMETHEUS_MULTIPROC_DIR to a folder they share; /metrics then adds up every process's figures,
dead ones included (ops.multiprocess names the files and folds the dead processes' away).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.crypto import constant_time_compare
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

from . import multiprocess as files

files.install()  # before any metric below has a value

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
REQUESTS = Counter(
    "gcquiz_http_requests_total", "HTTP requests answered.", ["method", "view", "status"]
)
REQUEST_SECONDS = Histogram(
    "gcquiz_http_request_duration_seconds",
    "Time to answer an HTTP request.",
    ["method", "view"],
    buckets=LATENCY_BUCKETS,
)
TASKS = Counter("gcquiz_celery_tasks_total", "Celery tasks run, by outcome.", ["task", "state"])
TASK_SECONDS = Histogram(
    "gcquiz_celery_task_duration_seconds",
    "Time a Celery task ran.",
    ["task"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600),
)


def _counts_by(
    name: str, documentation: str, queryset, field: str, values: tuple[str, ...]
) -> GaugeMetricFamily:
    """A gauge of how many rows of the queryset have each of the values in ``field``."""
    gauge = GaugeMetricFamily(name, documentation, labels=[field])
    counts = dict(
        queryset.filter(**{f"{field}__in": values})
        .values(field)
        .annotate(n=Count("pk"))
        .order_by()
        .values_list(field, "n")
    )
    for value in values:
        gauge.add_metric([value], counts.get(value, 0))
    return gauge


@dataclass(frozen=True)
class Backlog:
    """A gauge of work waiting in one app (its rows by state), read at scrape time."""

    name: str
    documentation: str
    queryset: Callable[[], QuerySet]
    field: str
    values: tuple[str, ...]


_backlogs: dict[str, Backlog] = {}


def register_backlog(backlog: Backlog) -> None:
    """An app (gradesync, labs) publishes a backlog gauge from its AppConfig.ready(): ops
    sits below the apps and imports none of them."""
    _backlogs[backlog.name] = backlog


class BacklogCollector:
    """Read at scrape time: what waits in the outbox and in the lab queue."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for backlog in _backlogs.values():
            yield _counts_by(
                backlog.name,
                backlog.documentation,
                backlog.queryset(),
                backlog.field,
                backlog.values,
            )

    def describe(self) -> list:
        return []


def exposition() -> bytes:
    path = files.folder()
    if path:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path)
        with files.compacted(path):
            counters = generate_latest(registry)
    else:
        counters = generate_latest(REGISTRY)
    backlog = CollectorRegistry()
    backlog.register(BacklogCollector())
    return counters + generate_latest(backlog)


def _allowed(request: HttpRequest) -> bool:
    """A bearer token matching METRICS_TOKEN. Without one set, metrics are served only in
    debug mode: behind a proxy on the same host every request comes from 127.0.0.1, so the
    address proves nothing."""
    token = settings.METRICS_TOKEN
    if not token:
        return settings.DEBUG
    offered = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    return constant_time_compare(offered, token)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        return HttpResponse(
            "Metrics need the METRICS_TOKEN bearer token (set it to serve them).\n", status=403
        )
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
