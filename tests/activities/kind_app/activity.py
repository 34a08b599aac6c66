"""The exercise kind: everything the course side needs, and nothing more."""

from __future__ import annotations

from decimal import Decimal

from django.urls import reverse

from activities.models import GradingMethod
from activities.registry import ActivityKind
from activities.selectors import Try
from activities.texts import localized
from lti.models import ResourceLink

from .models import Exercise, ExercisePlacement, Submission


def _attach(link: ResourceLink, exercise: Exercise) -> None:
    ExercisePlacement.objects.create(resource_link=link, exercise=exercise)


def _activity_of(link: ResourceLink) -> Exercise:
    return ExercisePlacement.objects.select_related("exercise").get(resource_link=link).exercise


def _plan_grades(link: ResourceLink, _apply_key: bool, user_id: int | None):
    from activities.selectors import PlannedGrade

    exercise = _activity_of(link)
    rows = Submission.objects.filter(placement=link)
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    best: dict[int, Decimal] = {}
    for submission in rows:
        best[submission.user_id] = max(best.get(submission.user_id, 0), submission.score)
    planned = {
        student: PlannedGrade(
            student, score, Decimal(exercise.points), GradingMethod.HIGHEST, 1, None
        )
        for student, score in best.items()
    }
    return planned, [], [], []


def _tries(link: ResourceLink, user_ids: list[int]) -> dict[int, list[Try]]:
    found: dict[int, list[Try]] = {}
    for row in Submission.objects.filter(placement=link, user_id__in=user_ids).order_by("pk"):
        found.setdefault(row.user_id, []).append(
            Try(row.number, "finished", row.score, Decimal(row.exercise_points))
        )
    return found


EXERCISE = ActivityKind(
    key="exercise",
    label="exercise",
    line_item_tag="exercise",
    offered=lambda: {
        exercise.slug: localized(exercise.title, "en") for exercise in Exercise.objects.all()
    },
    catalogue=lambda: list(Exercise.objects.all()),
    find=lambda slug: Exercise.objects.filter(slug=slug).first(),
    attach=_attach,
    activity_of=_activity_of,
    slug_of=lambda exercise: exercise.slug,
    title_of=lambda exercise, language: localized(exercise.title, language),
    score_maximum_of=lambda exercise: Decimal(exercise.points),
    student_url=lambda link: reverse("kind_app:placement", args=[link.pk]),
    manage_url=lambda link: reverse("kind_app:placement", args=[link.pk]),
    dashboard_url=lambda link: reverse("kind_app:placement", args=[link.pk]),
    plan_grades=_plan_grades,
    grading_method=lambda _link: GradingMethod.HIGHEST,
    lock_work=lambda _link: None,
    regrade_applies_key=False,
    work=lambda link: Submission.objects.filter(placement=link),
    tries=_tries,
    activity_relation="exercise_placement__exercise",
    rules=lambda _link: GradingMethod.HIGHEST,
    load_command="load_exercises",
)
