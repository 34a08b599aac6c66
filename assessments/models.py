"""The quiz domain: versioned content, attempts, responses and grades.

Content is versioned: loading an edited content file creates a new ``QuizVersion`` with
its own questions and options, and every attempt points at the version it was started
on, so what a student answered against never changes under them.
"""

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class GradingMethod(models.TextChoices):
    HIGHEST = "highest", _("Highest attempt")
    LAST = "last", _("Last attempt")
    FIRST = "first", _("First attempt")
    AVERAGE = "average", _("Average of attempts")


class Quiz(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    current_version = models.ForeignKey(
        "QuizVersion", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    max_attempts = models.PositiveIntegerField(
        default=0, help_text="How many attempts a student may make; 0 means no limit."
    )
    grading_method = models.CharField(
        max_length=16, choices=GradingMethod.choices, default=GradingMethod.HIGHEST
    )

    class Meta:
        verbose_name_plural = "quizzes"

    def __str__(self) -> str:
        return self.slug


class QuizVersion(models.Model):
    quiz = models.ForeignKey(Quiz, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    title = models.JSONField(help_text="Title per language code.")
    intro = models.JSONField(help_text="Introduction per language code.")
    source_language = models.CharField(max_length=8)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["quiz", "number"], name="quiz_version_unique_number"),
            models.UniqueConstraint(
                fields=["quiz", "content_hash"], name="quiz_version_unique_content"
            ),
        ]
        ordering = ["quiz", "number"]

    def __str__(self) -> str:
        return f"{self.quiz.slug} v{self.number}"


class Question(models.Model):
    version = models.ForeignKey(QuizVersion, on_delete=models.CASCADE, related_name="questions")
    position = models.PositiveIntegerField(help_text="1-based order in the quiz.")
    key = models.CharField(max_length=32, help_text="Stable across versions, e.g. 'q3'.")
    source_language = models.CharField(max_length=8)
    text = models.JSONField(help_text="Question text per language code.")
    explanation = models.JSONField(help_text="Explanation per language code.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["version", "position"], name="question_unique_position"
            ),
            models.UniqueConstraint(fields=["version", "key"], name="question_unique_key"),
        ]
        ordering = ["version", "position"]

    def __str__(self) -> str:
        return f"{self.version} {self.key}"


class Option(models.Model):
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="options")
    position = models.PositiveIntegerField(help_text="1-based order as authored.")
    key = models.CharField(max_length=32)
    text = models.JSONField(help_text="Option text per language code.")
    is_correct = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["question", "position"], name="option_unique_position"),
            models.UniqueConstraint(fields=["question", "key"], name="option_unique_key"),
        ]
        ordering = ["question", "position"]

    def __str__(self) -> str:
        return f"{self.question} {self.key}"


class AttemptState(models.TextChoices):
    IN_PROGRESS = "in_progress", _("In progress")
    FINISHED = "finished", _("Finished")


class Attempt(models.Model):
    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quiz_attempts"
    )
    placement = models.ForeignKey(
        "lti.ResourceLink", on_delete=models.CASCADE, related_name="attempts"
    )
    quiz_version = models.ForeignKey(QuizVersion, on_delete=models.PROTECT, related_name="attempts")
    number = models.PositiveIntegerField(help_text="1 for the student's first attempt here.")
    state = models.CharField(
        max_length=16, choices=AttemptState.choices, default=AttemptState.IN_PROGRESS
    )
    language = models.CharField(max_length=8, help_text="Language when the attempt started.")
    option_order = models.JSONField(
        help_text="Shuffled option ids per question id, fixed for the attempt."
    )
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    score = models.PositiveIntegerField(null=True, blank=True, help_text="Correct answers.")
    max_score = models.PositiveIntegerField()
    # Kept by the services as attempts finish or are regraded, so the dashboards select
    # "each student's last / highest attempt" with an index instead of a window per query.
    is_last_finished = models.BooleanField(default=False)
    is_highest = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "placement", "number"], name="attempt_unique_number"
            ),
            models.UniqueConstraint(
                fields=["user", "placement"],
                condition=Q(state="in_progress"),
                name="attempt_one_in_progress",
            ),
        ]
        indexes = [models.Index(fields=["placement", "state"])]
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.user} on {self.placement}"

    @property
    def is_finished(self) -> bool:
        return self.state == AttemptState.FINISHED


class Response(models.Model):
    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="responses")
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="responses")
    option = models.ForeignKey(Option, on_delete=models.PROTECT, related_name="responses")
    is_correct = models.BooleanField()
    answered_at = models.DateTimeField(default=timezone.now)
    seconds_spent = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="From the previous answer (or the attempt's start) to this one.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["attempt", "question"], name="response_one_per_question"
            ),
        ]
        ordering = ["attempt", "question__position"]

    def __str__(self) -> str:
        return f"{self.attempt} {self.question.key}={self.option.key}"


class Grade(models.Model):
    """A student's current grade on one placement, by the quiz's grading method."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quiz_grades"
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
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["placement", "user"], name="grade_change_student")]

    def __str__(self) -> str:
        change = f"{self.previous_score} → {self.new_score}"
        return f"{self.cause} of {self.user} on {self.placement}: {change}"
