"""The course side's records: what each resource link places and by which rules
(``Placement``), every activity kind's grades, their overrides, regrades and the audit of
each change. A placement's grading method is the course side's (every kind is
graded by one of these methods). The grade tables kept their names when the models moved
here from assessments (migration activities 0001)."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class GradingMethod(models.TextChoices):
    HIGHEST = "highest", _("Highest attempt")
    LAST = "last", _("Last attempt")
    FIRST = "first", _("First attempt")
    AVERAGE = "average", _("Average of attempts")


class Placement(models.Model):
    """What the course placed at a resource link: the activity kind (its registry key; the
    kind's own row, e.g. ``assessments.QuizPlacement``, says which activity) and the
    placement's policy. The attempt limit and grading method default to the activity's
    and can be set per placement (by deep linking or by the course's instructor)."""

    resource_link = models.OneToOneField(
        "lti.ResourceLink", on_delete=models.CASCADE, primary_key=True, related_name="placement"
    )
    kind = models.CharField(max_length=32, help_text="The activity kind's registry key.")
    max_attempts = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Overrides the activity's limit of attempts (quiz) or runs (lab); 0: no limit.",
    )
    grading_method = models.CharField(
        max_length=16,
        choices=GradingMethod.choices,
        blank=True,
        help_text="Overrides the activity's grading method.",
    )

    def __str__(self) -> str:
        return f"{self.kind} at {self.resource_link_id}"


class Grade(models.Model):
    """A student's current grade on one placement of any activity kind (a quiz's attempts,
    a lab's runs), by the placement's grading method."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="activity_grades"
    )
    placement = models.ForeignKey(
        "lti.ResourceLink", on_delete=models.CASCADE, related_name="grades"
    )
    score_given = models.DecimalField(max_digits=9, decimal_places=3)
    score_maximum = models.DecimalField(max_digits=9, decimal_places=3)
    grading_method = models.CharField(max_length=16, choices=GradingMethod.choices)
    attempt_count = models.PositiveIntegerField()
    counted_number = models.PositiveIntegerField(
        null=True, blank=True, help_text="The attempt or run the grade came from (not averages)."
    )
    is_overridden = models.BooleanField(
        default=False, help_text="Set by staff; attempts no longer change it."
    )
    override_reason = models.TextField(blank=True)
    override_reason_shared = models.BooleanField(
        default=False, help_text="The student sees the override's reason."
    )
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "assessments_grade"  # moved from assessments; the table kept its name
        constraints = [
            models.UniqueConstraint(fields=["user", "placement"], name="grade_one_per_placement"),
        ]

    def __str__(self) -> str:
        return f"{self.user} on {self.placement}: {self.score_given}/{self.score_maximum}"


class GradeOverride(models.Model):
    """Audit trail: staff set a grade by hand, with a reason."""

    grade = models.ForeignKey(Grade, on_delete=models.CASCADE, related_name="overrides")
    previous_score = models.DecimalField(max_digits=9, decimal_places=3, null=True, blank=True)
    score_given = models.DecimalField(max_digits=9, decimal_places=3)
    reason = models.TextField()
    share_reason = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "assessments_gradeoverride"  # moved from assessments; the table kept its name
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"override of {self.grade} by {self.created_by}: {self.reason[:40]}"


class ChangeCause(models.TextChoices):
    OVERRIDE = "override", _("Override")
    OVERRIDE_CLEARED = "override_cleared", _("Override cleared")
    REGRADE = "regrade", _("Regrade")
    SETTINGS = "settings", _("Grading settings changed")
    DUE_TIME = "due_time", _("Due time reached")


class Regrade(models.Model):
    """Audit trail: a placement's grades recomputed by its rules in force (and a quiz's
    attempts against its current key), by hand or because the rules changed."""

    placement = models.ForeignKey(
        "lti.ResourceLink", on_delete=models.CASCADE, related_name="regrades"
    )
    cause = models.CharField(
        max_length=24, choices=ChangeCause.choices, default=ChangeCause.REGRADE
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    attempts_changed = models.PositiveIntegerField(default=0)
    grades_changed = models.PositiveIntegerField(default=0)
    report = models.JSONField(default=list, help_text="Per changed attempt: old and new score.")
    grades_report = models.JSONField(
        default=list, help_text="Per changed grade: the student, old and new score."
    )

    class Meta:
        db_table = "assessments_regrade"  # moved from assessments; the table kept its name
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"regrade of {self.placement} at {self.created_at:%Y-%m-%d %H:%M}"


class GradeChange(models.Model):
    """Audit trail of every grade change staff made or caused (an override, its clearing, a
    regrade, a change of the grading rules): who, when, why, from what to what."""

    grade = models.ForeignKey(Grade, on_delete=models.CASCADE, related_name="changes")
    placement = models.ForeignKey("lti.ResourceLink", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    cause = models.CharField(max_length=24, choices=ChangeCause.choices)
    previous_score = models.DecimalField(max_digits=9, decimal_places=3, null=True, blank=True)
    new_score = models.DecimalField(max_digits=9, decimal_places=3)
    score_maximum = models.DecimalField(max_digits=9, decimal_places=3)
    was_overridden = models.BooleanField(default=False)
    is_overridden = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="+",
        null=True,
        blank=True,
        help_text="Empty when the schedule made the change (a due time reached).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "assessments_gradechange"  # moved from assessments; the table kept its name
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["placement", "user"], name="grade_change_student")]

    def __str__(self) -> str:
        change = f"{self.previous_score} → {self.new_score}"
        return f"{self.cause} of {self.user} on {self.placement}: {change}"
