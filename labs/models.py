"""Labs: a model and a memory budget (``Lab``), its schedule in one course
(``LabSchedule``) and the students' submitted policies with what the runner measured
(``LabRun``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from activities.models import GradingMethod

from .errors import runner_reason


class Lab(models.Model):
    """A checkpointing exercise: the model the runner builds, the activation-memory budget
    the policy must fit, and how many runs a student gets by default."""

    slug = models.SlugField(max_length=100, unique=True)
    title = models.JSONField(help_text="Title per language code.")
    instructions = models.JSONField(help_text="Instructions per language code.")
    model_kind = models.CharField(max_length=16, default="chain")
    blocks = models.PositiveIntegerField()
    width = models.PositiveIntegerField()
    batch = models.PositiveIntegerField()
    sequence = models.PositiveIntegerField(default=1)
    heads = models.PositiveIntegerField(default=1)
    dropout = models.FloatField(default=0.0)
    seed = models.IntegerField(default=0)
    budget_bytes = models.PositiveBigIntegerField(
        help_text="Peak activation memory a policy may use, in bytes."
    )
    max_runs = models.PositiveIntegerField(default=10, help_text="0 means no limit.")
    grading_method = models.CharField(
        max_length=16,
        choices=[(GradingMethod.HIGHEST, _("Best run")), (GradingMethod.LAST, _("Last run"))],
        default=GradingMethod.HIGHEST,
    )
    content_hash = models.CharField(max_length=64)
    reference = models.JSONField(
        null=True,
        blank=True,
        help_text="The optimum within the budget that runs are graded against "
        "(labs.runner.reference), computed once; emptied when the lab changes.",
    )

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    def model_spec(self) -> dict:
        """The runner's ``ModelSpec`` fields."""
        return {
            "kind": self.model_kind,
            "blocks": self.blocks,
            "width": self.width,
            "batch": self.batch,
            "sequence": self.sequence,
            "heads": self.heads,
            "dropout": self.dropout,
            "seed": self.seed,
        }


class LabPlacement(models.Model):
    """A resource link places this lab (the course side's ``activities.Placement`` holds
    the kind and the policy)."""

    resource_link = models.OneToOneField(
        "lti.ResourceLink",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="lab_placement",
    )
    lab = models.ForeignKey(Lab, on_delete=models.PROTECT, related_name="placements")

    def __str__(self) -> str:
        return f"{self.lab} at {self.resource_link_id}"


class LatePolicy(models.TextChoices):
    ACCEPT = "accept", _("Accept late runs at full credit")
    PENALTY = "penalty", _("Accept late runs with a penalty")
    REFUSE = "refuse", _("Refuse runs after the due time")


def storable_moment(moment: datetime) -> bool:
    """Whether an aware time is one a schedule takes: between the years 1900 and 9000 in UTC,
    which the database and every LMS can store. The calendar's first and last minutes, which
    Python cannot convert to UTC east or west of it, are not."""
    try:
        return 1900 <= moment.astimezone(UTC).year <= 9000
    except OverflowError:
        return False


class LabSchedule(models.Model):
    """When the lab is open in one course, and how runs count there."""

    placement = models.OneToOneField(
        "lti.ResourceLink", on_delete=models.CASCADE, primary_key=True, related_name="lab_schedule"
    )
    opens_at = models.DateTimeField(null=True, blank=True)
    due_at = models.DateTimeField(null=True, blank=True)
    closes_at = models.DateTimeField(
        null=True, blank=True, help_text="No runs at all after this; late runs until then."
    )
    max_runs = models.PositiveIntegerField(
        null=True, blank=True, help_text="Overrides the lab's limit; 0 means no limit."
    )
    grading_method = models.CharField(max_length=16, blank=True)
    late_policy = models.CharField(
        max_length=16, choices=LatePolicy.choices, default=LatePolicy.ACCEPT
    )
    late_penalty_percent = models.PositiveSmallIntegerField(default=0)
    finalized_at = models.DateTimeField(
        null=True, blank=True, help_text="When the due-time grades were settled."
    )

    def __str__(self) -> str:
        return f"schedule of {self.placement}"


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("Waiting in the queue")
    RUNNING = "running", _("Running")
    SUCCEEDED = "succeeded", _("Measured")
    REJECTED = "rejected", _("Refused by the runner")
    INFRASTRUCTURE_FAILED = "infrastructure_failed", _("Could not be run")


class LabRunManager(models.Manager["LabRun"]):
    def get_queryset(self) -> models.QuerySet[LabRun]:
        """Every run read says whether it is late: submitted after the due time in force
        (its placement's schedule), derived when read, so a moved due time needs no
        re-marking. A subquery, not a join, so that runs can still be locked."""
        due_before = LabSchedule.objects.filter(
            pk=models.OuterRef("placement_id"), due_at__lt=models.OuterRef("submitted_at")
        )
        return super().get_queryset().annotate(is_late=models.Exists(due_before))


class LabRun(models.Model):
    """One submitted policy and its execution. Runs are idempotent: a worker claims a run
    with a lease, and only the holder of the current lease records the outcome."""

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    placement = models.ForeignKey(
        "lti.ResourceLink", on_delete=models.CASCADE, related_name="lab_runs"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lab_runs"
    )
    number = models.PositiveIntegerField(help_text="1 for the student's first run here.")
    policy = models.JSONField(help_text="The policy as the student submitted it.")
    submitted_at = models.DateTimeField()
    status = models.CharField(max_length=24, choices=RunStatus.choices, default=RunStatus.QUEUED)
    execution_attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(help_text="When the run may be (re)tried.")
    enqueued_at = models.DateTimeField(null=True, blank=True)
    lease_token = models.UUIDField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    device = models.CharField(max_length=32, blank=True)
    result = models.JSONField(null=True, blank=True, help_text="The runner's figures.")
    score = models.DecimalField(
        max_digits=6, decimal_places=4, null=True, blank=True, help_text="0 to 1, before lateness."
    )
    error = models.TextField(blank=True, help_text="Why the run was refused or could not run.")
    refusal = models.JSONField(
        null=True,
        blank=True,
        help_text="The runner's refusal of the policy as its template and values, which the "
        "pages say in the reader's language (the error is its English).",
    )

    objects = LabRunManager()

    class Meta:
        ordering = ["submitted_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["placement", "user", "number"], name="lab_run_number"),
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="lab_run_due")]

    def __str__(self) -> str:
        return f"run {self.number} of {self.user} on {self.placement}"

    @property
    def reason(self) -> str:
        """Why the run was refused or could not run: a policy's refusal in the reader's
        language, anything else as the worker recorded it."""
        if self.refusal:
            try:
                return runner_reason(self.refusal["template"], self.refusal["params"])
            except (KeyError, TypeError, ValueError):  # a catalogue's entry that does not fit
                pass
        return self.error

    @property
    def is_late(self) -> bool:
        """Submitted after the due time in force. Runs read through ``LabRun.objects`` carry
        it (LabRunManager); a run just created reads its schedule once."""
        if "_is_late" not in self.__dict__:
            due_at = (
                LabSchedule.objects.filter(pk=self.placement_id)
                .values_list("due_at", flat=True)
                .first()
            )
            self._is_late = due_at is not None and self.submitted_at > due_at
        return self._is_late

    @is_late.setter
    def is_late(self, value: bool) -> None:  # the manager's annotation
        self._is_late = value
