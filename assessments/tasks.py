from celery import shared_task
from django.core.management import call_command


@shared_task
def clear_expired_sessions() -> None:
    """Periodic (beat): drop expired sessions so the session table stays small."""
    call_command("clearsessions")
