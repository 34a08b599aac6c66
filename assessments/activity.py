"""The quiz as an activity kind (activities.registry), registered in AssessmentsConfig.ready()."""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING

from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from activities.registry import ActivityKind
from activities.selectors import RegradePlan, Try
from activities.texts import localized
from lti.course import Landing
from lti.models import ResourceLink

from .models import QUIZ_KIND, Attempt, Quiz, QuizPlacement, Response

if TYPE_CHECKING:
    from .selectors import AttemptPolicy


def _offered() -> dict[str, str]:
    language = get_language()
    quizzes = Quiz.objects.filter(current_version__isnull=False).select_related("current_version")
    return {quiz.slug: localized(quiz.current_version.title, language) for quiz in quizzes}


def _find(slug: str) -> Quiz | None:
    return Quiz.objects.filter(slug=slug, current_version__isnull=False).first()


def _attach(link: ResourceLink, quiz: Quiz) -> None:
    QuizPlacement.objects.create(resource_link=link, quiz=quiz)


def _activity_of(link: ResourceLink) -> Quiz:
    from .selectors import placed_quiz

    return placed_quiz(link)


def _score_maximum_of(quiz: Quiz) -> Decimal:
    from .selectors import quiz_score_maximum

    return quiz_score_maximum(quiz.current_version_id)


def _plan_grades(link: ResourceLink, apply_key: bool, user_id: int | None):
    from .selectors import quiz_plan

    return quiz_plan(link, apply_key, user_id)


def _resume(link: ResourceLink, user_id: int) -> Landing | None:
    """The question the student was on, in their attempt in progress (read in the active
    language, the launch's)."""
    from .selectors import attempt_in_progress_view
    from .views import render_question

    view = attempt_in_progress_view(link.pk, link.context_id, user_id, get_language())
    if view is None:
        return None
    return Landing(
        reverse("assessments:attempt", args=[view.attempt.public_id]),
        page=partial(render_question, view=view),
    )


def _grading_method(link: ResourceLink) -> str:
    from .selectors import attempt_policy

    return attempt_policy(link).grading_method


def _lock_work(link: ResourceLink) -> None:
    list(Attempt.objects.select_for_update().filter(placement=link).values_list("pk"))


def _tries(link: ResourceLink, user_ids: list[int]) -> dict[int, list[Try]]:
    by_student: dict[int, list[Try]] = {}
    for student, number, state, score, maximum in (
        Attempt.objects.filter(placement=link, user_id__in=user_ids)
        .order_by("user_id", "number")
        .values_list("user_id", "number", "state", "score", "max_score")
    ):
        by_student.setdefault(student, []).append(
            Try(number, state, None if score is None else Decimal(score), Decimal(maximum))
        )
    return by_student


def _apply_plan(link: ResourceLink, plan: RegradePlan) -> None:
    """The responses the current key re-marks, the attempts' new scores, and which attempts
    count (last, highest) for the students whose scores moved."""
    from .services import mark_counted_attempts

    if plan.marked_correct:
        Response.objects.filter(pk__in=plan.marked_correct).update(is_correct=True)
    if plan.marked_wrong:
        Response.objects.filter(pk__in=plan.marked_wrong).update(is_correct=False)
    for rescore in plan.rescored:
        Attempt.objects.filter(pk=rescore.attempt_id).update(score=rescore.new_score)
    for student in {rescore.user_id for rescore in plan.rescored}:
        mark_counted_attempts(student, link.pk)


def _rules(link: ResourceLink) -> AttemptPolicy:
    from .selectors import attempt_policy

    return attempt_policy(link)


QUIZ = ActivityKind(
    key=QUIZ_KIND,
    label=_("quiz"),
    line_item_tag="quiz",
    offered=_offered,
    catalogue=lambda: list(
        Quiz.objects.filter(current_version__isnull=False).select_related("current_version")
    ),
    find=_find,
    attach=_attach,
    activity_of=_activity_of,
    slug_of=lambda quiz: quiz.slug,
    title_of=lambda quiz, language: localized(quiz.current_version.title, language),
    score_maximum_of=_score_maximum_of,
    student_url=lambda link: reverse("assessments:placement", args=[link.pk]),
    resume=_resume,
    manage_url=lambda link: reverse("assessments:manage", args=[link.pk]),
    dashboard_url=lambda link: reverse("analytics:dashboard", args=[link.pk]),
    plan_grades=_plan_grades,
    grading_method=_grading_method,
    lock_work=_lock_work,
    regrade_applies_key=True,
    work=lambda link: Attempt.objects.filter(placement=link),
    tries=_tries,
    activity_relation="quiz_placement__quiz",
    rules=_rules,
    apply_plan=_apply_plan,
    load_command="load_quiz",
    select_related=("quiz_placement__quiz__current_version",),
)
