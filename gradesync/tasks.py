"""Thin Celery wrappers around the grade-sync services. Named explicitly: services send
them by these names (ops.jobs), and beat's schedule uses them."""

from celery import shared_task

from . import services


@shared_task(
    name="gradesync.deliver_grade", acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def deliver_grade(sync_id: int) -> str:
    return services.deliver(sync_id)


@shared_task(name="gradesync.requeue_due_grades", ignore_result=True)
def requeue_due_grades() -> int:
    return services.requeue_due()
