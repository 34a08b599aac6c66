"""Celery tasks: thin wrappers around labs.services. Named explicitly: services send them by
these names (ops.jobs), and the routes and beat's schedule use them."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from . import services


@shared_task(
    name="labs.execute_run",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    # The child process has its own limit; these catch a worker stuck around it.
    soft_time_limit=settings.LAB_RUN_TIMEOUT_SECONDS + 30,
    time_limit=settings.LAB_RUN_TIMEOUT_SECONDS + 60,
)
def execute_lab_run(run_id: int) -> str:
    """Routed to the `gpu` queue (settings.CELERY_TASK_ROUTES)."""
    run = services.execute_run(run_id)
    return "skipped" if run is None else run.status


@shared_task(name="labs.requeue_stuck_runs", ignore_result=True)
def requeue_stuck_lab_runs() -> int:
    return services.requeue_stuck_runs()


@shared_task(name="labs.settle_due_labs", ignore_result=True)
def settle_due_labs() -> int:
    return services.settle_due_labs()
