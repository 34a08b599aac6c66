from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LabsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "labs"
    verbose_name = _("Checkpointing labs")

    def ready(self) -> None:
        from activities import registry
        from ops.metrics import Backlog, register_backlog

        from .activity import LAB
        from .models import LabRun, RunStatus

        registry.register(LAB)
        register_backlog(
            Backlog(
                "gcquiz_lab_queue_depth",
                "Lab runs waiting or running.",
                LabRun.objects.all,
                "status",
                (RunStatus.QUEUED, RunStatus.RUNNING),
            )
        )
