"""The grade-sync outbox: one row per grade change, written in the same transaction as the
grade. The row, not the broker, is the source of truth; Celery only carries reminders."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class SyncState(models.TextChoices):
    PENDING = "pending", _("Pending")
    SYNCED = "synced", _("Synced")
    FAILED = "failed", _("Failed")


class GradeSync(models.Model):
    grade = models.ForeignKey("activities.Grade", on_delete=models.CASCADE, related_name="syncs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    placement = models.ForeignKey(
        "lti.ResourceLink", on_delete=models.CASCADE, related_name="grade_syncs"
    )
    score_given = models.DecimalField(max_digits=9, decimal_places=3)
    score_maximum = models.DecimalField(max_digits=9, decimal_places=3)
    changed_at = models.DateTimeField(help_text="When the grade changed: the score's timestamp.")
    comment = models.TextField(blank=True)
    state = models.CharField(max_length=16, choices=SyncState.choices, default=SyncState.PENDING)
    tries = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    lease_until = models.DateTimeField(
        null=True, blank=True, help_text="A worker is delivering it until then."
    )
    last_status = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    outcome = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["state", "next_attempt_at"], name="gradesync_due"),
            models.Index(fields=["user", "placement", "created_at"], name="gradesync_chain"),
        ]
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.user} on {self.placement}: {self.score_given} ({self.state})"
