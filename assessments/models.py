"""The quiz domain: versioned content, attempts and responses (grades are the course
side's: activities.models).

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

from activities.models import GradingMethod

# The quiz's key in the activity registry (activities.registry), as a placement stores it.
QUIZ_KIND = "quiz"


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


class QuizPlacement(models.Model):
    """A resource link places this quiz (the course side's ``activities.Placement`` holds
    the kind and the policy)."""

    resource_link = models.OneToOneField(
        "lti.ResourceLink",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="quiz_placement",
    )
    quiz = models.ForeignKey(Quiz, on_delete=models.PROTECT, related_name="placements")

    def __str__(self) -> str:
        return f"{self.quiz} at {self.resource_link_id}"


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
