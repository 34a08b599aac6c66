from django.apps import AppConfig


class GradesyncConfig(AppConfig):
    name = "gradesync"
    verbose_name = "Grade sync (LTI AGS)"

    def ready(self) -> None:
        from activities.signals import grade_changed
        from ops.metrics import Backlog, register_backlog

        from .models import GradeSync, SyncState

        register_backlog(
            Backlog(
                "gcquiz_gradesync_backlog",
                "Grade deliveries not yet synced.",
                GradeSync.objects.all,
                "state",
                (SyncState.PENDING, SyncState.FAILED),
            )
        )
        grade_changed.connect(_queue_for_the_lms, dispatch_uid="gradesync.queue_for_the_lms")


def _queue_for_the_lms(*, grade, **_signal) -> None:
    """A changed grade goes to the LMS: queued in the transaction that changed it."""
    from .services import record_grade_change

    record_grade_change(grade)
