"""Reads of the quiz domain, shaped for pages and the API in the reader's language."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from lti.models import ResourceLink

from .models import (
    Attempt,
    AttemptState,
    Grade,
    GradingMethod,
    Option,
    Question,
    QuizVersion,
)


@dataclass(frozen=True)
class VersionLayout:
    """A quiz version's question ids in order, each with its option ids in order."""

    option_ids: dict[int, tuple[int, ...]]

    @property
    def question_count(self) -> int:
        return len(self.option_ids)

    @property
    def last_question_id(self) -> int | None:
        return next(reversed(self.option_ids), None)


_layouts: dict[int, VersionLayout] = {}
_versions_of_questions: dict[int, int] = {}


def version_layout(version_id: int) -> VersionLayout:
    """The version's layout, read once per process: a version never changes (an edited
    quiz file becomes a new version, and the admin shows versions read-only)."""
    layout = _layouts.get(version_id)
    if layout is None:
        option_ids: dict[int, list[int]] = {}
        rows = Option.objects.filter(question__version_id=version_id).order_by(
            "question__position", "position"
        )
        for question_id, option_id in rows.values_list("question_id", "pk"):
            option_ids.setdefault(question_id, []).append(option_id)
        layout = VersionLayout({key: tuple(ids) for key, ids in option_ids.items()})
        if option_ids:  # never keep a version read before its questions were committed
            _layouts[version_id] = layout
            _versions_of_questions.update(dict.fromkeys(option_ids, version_id))
    return layout


def is_last_question(question_id: int) -> bool:
    """Whether the question is the last of its version (False for an unknown id)."""
    version_id = _versions_of_questions.get(question_id)
    if version_id is None:
        version_id = (
            Question.objects.filter(pk=question_id).values_list("version_id", flat=True).first()
        )
        if version_id is None:
            return False
    return version_layout(version_id).last_question_id == question_id


@dataclass(frozen=True)
class AttemptPolicy:
    max_attempts: int
    grading_method: str

    @property
    def grading_method_label(self) -> str:
        return str(GradingMethod(self.grading_method).label)


def attempt_policy(placement: ResourceLink) -> AttemptPolicy:
    """The placement's own settings where it has them, else the quiz's defaults."""
    quiz = placement.quiz
    return AttemptPolicy(
        max_attempts=quiz.max_attempts
        if placement.max_attempts is None
        else placement.max_attempts,
        grading_method=placement.grading_method or quiz.grading_method,
    )


def localized(texts: dict[str, str], language: str, fallback: str = "en") -> str:
    return texts.get(language) or texts.get(fallback) or next(iter(texts.values()), "")


@dataclass(frozen=True)
class OptionView:
    id: int
    text: str
    is_correct: bool
    chosen: bool


@dataclass(frozen=True)
class QuestionView:
    id: int
    position: int
    total: int
    text: str
    options: list[OptionView]
    explanation: str
    answered: bool
    answered_correctly: bool | None

    @property
    def correct_option(self) -> OptionView:
        return next(option for option in self.options if option.is_correct)

    @property
    def chosen_option(self) -> OptionView | None:
        return next((option for option in self.options if option.chosen), None)


@dataclass(frozen=True)
class AttemptView:
    attempt: Attempt
    title: str
    questions: list[QuestionView]

    @property
    def answered_count(self) -> int:
        return sum(question.answered for question in self.questions)

    @property
    def current_question(self) -> QuestionView | None:
        return next((question for question in self.questions if not question.answered), None)

    def question_at(self, position: int) -> QuestionView | None:
        return next((q for q in self.questions if q.position == position), None)


def attempts_of(user: AbstractBaseUser) -> QuerySet[Attempt]:
    """Only the user's own attempts: every attempt page looks attempts up through this."""
    return Attempt.objects.filter(user=user).select_related(
        "quiz_version", "placement", "placement__quiz"
    )


def attempt_view(attempt: Attempt, language: str) -> AttemptView:
    """The attempt's questions in order, options in the attempt's shuffled order, with
    what the student chose. Answers' correctness is only meaningful for answered
    questions; templates must not reveal it before."""
    version: QuizVersion = attempt.quiz_version
    questions = list(version.questions.prefetch_related("options"))
    responses = {response.question_id: response for response in attempt.responses.all()}
    total = len(questions)
    views = []
    for question in questions:
        options_by_id = {option.pk: option for option in question.options.all()}
        order = attempt.option_order.get(str(question.pk), list(options_by_id))
        response = responses.get(question.pk)
        views.append(
            QuestionView(
                id=question.pk,
                position=question.position,
                total=total,
                text=localized(question.text, language),
                options=[
                    OptionView(
                        id=option_id,
                        text=localized(options_by_id[option_id].text, language),
                        is_correct=options_by_id[option_id].is_correct,
                        chosen=response is not None and response.option_id == option_id,
                    )
                    for option_id in order
                ],
                explanation=localized(question.explanation, language),
                answered=response is not None,
                answered_correctly=response.is_correct if response else None,
            )
        )
    return AttemptView(attempt=attempt, title=localized(version.title, language), questions=views)


@dataclass(frozen=True)
class PlacementOverview:
    placement: ResourceLink
    title: str
    intro: str
    question_count: int
    finished_attempts: list[Attempt]
    in_progress: Attempt | None
    grade: Grade | None
    policy: AttemptPolicy

    @property
    def attempts_left(self) -> int | None:
        if not self.policy.max_attempts:
            return None
        made = len(self.finished_attempts) + (1 if self.in_progress else 0)
        return max(self.policy.max_attempts - made, 0)

    @property
    def can_start(self) -> bool:
        return self.in_progress is None and self.attempts_left != 0

    @property
    def grade_percent(self) -> Decimal | None:
        if self.grade is None or not self.grade.score_maximum:
            return None
        return (self.grade.score_given * 100 / self.grade.score_maximum).quantize(Decimal("0.1"))


def placement_overview(
    *, user: AbstractBaseUser, placement: ResourceLink, language: str
) -> PlacementOverview:
    quiz = placement.quiz
    version = quiz.current_version
    attempts = list(Attempt.objects.filter(user=user, placement=placement).order_by("number"))
    return PlacementOverview(
        placement=placement,
        title=localized(version.title, language),
        intro=localized(version.intro, language),
        question_count=version_layout(version.pk).question_count,
        finished_attempts=[a for a in attempts if a.state == AttemptState.FINISHED],
        in_progress=next((a for a in attempts if a.state == AttemptState.IN_PROGRESS), None),
        grade=Grade.objects.filter(user=user, placement=placement).first(),
        policy=attempt_policy(placement),
    )


@dataclass(frozen=True)
class GradeRow:
    user_id: int
    name: str
    score_given: Decimal
    score_maximum: Decimal
    attempt_count: int
    updated_at: object


def placement_grades(placement: ResourceLink) -> list[GradeRow]:
    """Every student's current grade on the placement, one query."""
    grades = Grade.objects.filter(placement=placement).select_related("user", "user__lti_user")
    rows = []
    for grade in grades.order_by("user__last_name", "user__first_name", "user__username"):
        lti_user = getattr(grade.user, "lti_user", None)
        name = (lti_user.name if lti_user else "") or grade.user.get_full_name()
        rows.append(
            GradeRow(
                user_id=grade.user_id,
                name=name or grade.user.get_username(),
                score_given=grade.score_given,
                score_maximum=grade.score_maximum,
                attempt_count=grade.attempt_count,
                updated_at=grade.updated_at,
            )
        )
    return rows


def placement_score_maximum(placement: ResourceLink) -> Decimal:
    """The most a student can score on the placement's activity (the gradebook's maximum)."""
    if placement.lab_id is not None:
        from labs.grading import LAB_SCORE_MAXIMUM

        return LAB_SCORE_MAXIMUM
    return Decimal(version_layout(placement.quiz.current_version_id).question_count)
