from celery import shared_task
from django.core.management import call_command


@shared_task(name="assessments.clear_expired_sessions")
def clear_expired_sessions() -> None:
    """Periodic (beat): drop expired sessions so the session table stays small."""
    call_command("clearsessions")
