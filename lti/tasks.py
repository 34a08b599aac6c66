"""Thin Celery wrappers around LTI services."""

from celery import shared_task

from . import services
from .models import Context


@shared_task(name="lti.sync_roster", acks_late=True, ignore_result=True)
def sync_roster(context_id: int) -> int:
    return services.sync_roster(
        Context.objects.select_related("deployment__registration").get(pk=context_id)
    )
