from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Operations: request ids that follow a request into its tasks, structured logs and
    Prometheus metrics."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from . import signals  # noqa: F401 (connects the Celery signal handlers)
        from .signin import connect

        connect()
