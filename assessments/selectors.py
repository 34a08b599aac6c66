"""Reads of the quiz domain, shaped for pages and the API in the reader's language."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import cached_property
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ObjectDoesNotExist
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from activities.grading import grade_by_method, round_grade
from activities.models import Grade, Placement
from activities.selectors import (
    GRADE,
    AttemptRescore,
    PlannedGrade,
    grade_from_row,
    placement_score_maximum,
)
from activities.texts import localized
from lti.models import Context, Deployment, Membership, Registration, ResourceLink
from ops.rows import Part, select_list

from .models import (
    QUIZ_KIND,
    Attempt,
    AttemptState,
    GradingMethod,
    Option,
    Question,
    Quiz,
    QuizPlacement,
    QuizVersion,
    Response,
)


def placed_quiz(placement: ResourceLink) -> Quiz:
    """The quiz at ``placement``, for code that serves quiz placements only."""
    try:
        return placement.quiz_placement.quiz
    except ObjectDoesNotExist:
        raise ValueError(f"the placement {placement.pk} is not a quiz's") from None


def current_version(quiz: Quiz) -> QuizVersion:
    """The version of the quiz that new attempts take (loading its content sets it)."""
    if quiz.current_version is None:
        raise ValueError(f"the quiz {quiz.slug!r} has no content loaded")
    return quiz.current_version


def current_version_id(placement: ResourceLink) -> int:
    """The id of the current version of the quiz at ``placement``, without fetching it."""
    version_id = placed_quiz(placement).current_version_id
    if version_id is None:
        raise ValueError(f"the quiz of the placement {placement.pk} has no content loaded")
    return version_id


@dataclass(frozen=True)
class LayoutOption:
    """An option as stored in a version (``content.OptionContent`` is one as the quiz file
    gives it): its id, its text in every language, whether it is the right one."""

    id: int
    text: dict[str, str]
    is_correct: bool


@dataclass(frozen=True)
class LayoutQuestion:
    """A question as stored in a version (``content.QuestionContent`` is one as the quiz
    file gives it), with its options."""

    id: int
    position: int
    text: dict[str, str]
    explanation: dict[str, str]
    options: dict[int, LayoutOption]  # by id, in authored order


@dataclass(frozen=True)
class VersionLayout:
    """A quiz version's title and questions in order, each with its options in order: its
    content in every language, as the attempt pages show it."""

    title: dict[str, str]
    intro: dict[str, str]
    questions: tuple[LayoutQuestion, ...]
    # version_texts, by language: kept as long as the layout is
    texts: dict[str, VersionTexts] = field(default_factory=dict, compare=False, repr=False)
    read_at: float = field(default=0.0, compare=False, repr=False)  # on version_layout's clock

    @cached_property
    def option_ids(self) -> dict[int, tuple[int, ...]]:
        return {question.id: tuple(question.options) for question in self.questions}

    @property
    def question_count(self) -> int:
        return len(self.questions)

    @property
    def last_question_id(self) -> int | None:
        return self.questions[-1].id if self.questions else None


# A wording corrected in the admin (a question's text or explanation, a version's title or
# introduction) reaches every process within this many seconds; the process that saved it
# drops its copy at once. A version's questions, their order and options never change.
LAYOUT_SECONDS = 300
_clock = time.monotonic

_layouts: dict[int, VersionLayout] = {}
_versions_of_questions: dict[int, int] = {}


def version_layout(version_id: int) -> VersionLayout:
    """The version's layout and content, read once per process and again after
    LAYOUT_SECONDS: a version's structure never changes (an edited quiz file becomes a new
    version), only its wording may be corrected in the admin."""
    layout = _layouts.get(version_id)
    if layout is None or _clock() - layout.read_at >= LAYOUT_SECONDS:
        questions: dict[int, LayoutQuestion] = {}
        title: dict[str, str] = {}
        intro: dict[str, str] = {}
        rows = (
            Option.objects.filter(question__version_id=version_id)
            .select_related("question__version")
            .order_by("question__position", "position")
        )
        for option in rows:
            question = option.question
            title, intro = question.version.title, question.version.intro
            if question.pk not in questions:
                questions[question.pk] = LayoutQuestion(
                    id=question.pk,
                    position=question.position,
                    text=question.text,
                    explanation=question.explanation,
                    options={},
                )
            questions[question.pk].options[option.pk] = LayoutOption(
                id=option.pk, text=option.text, is_correct=option.is_correct
            )
        layout = VersionLayout(title, intro, tuple(questions.values()), read_at=_clock())
        if questions:  # never keep a version read before its questions were committed
            _layouts[version_id] = layout
            _versions_of_questions.update(dict.fromkeys(questions, version_id))
    return layout


def forget_layout(version_id: int) -> None:
    """Drop this process's copy of the version's layout, now and again once the caller's
    transaction commits (a request reading the old rows in between cannot keep them)."""
    _layouts.pop(version_id, None)
    transaction.on_commit(lambda: _layouts.pop(version_id, None))


def forget_saved_layout(instance: QuizVersion | Question, **kwargs: Any) -> None:
    """post_save of a version or a question (connected in AssessmentsConfig.ready())."""
    forget_layout(instance.pk if isinstance(instance, QuizVersion) else instance.version_id)


@dataclass(frozen=True)
class QuestionTexts:
    """A question of a version in one language, as the attempt pages show it."""

    id: int
    position: int
    text: str
    explanation: str
    option_ids: list[int]  # authored order
    option_texts: dict[int, str]
    correct_option_ids: frozenset[int]


@dataclass(frozen=True)
class VersionTexts:
    """A version's title and questions in one language."""

    title: str
    questions: tuple[QuestionTexts, ...]


def version_texts(version_id: int, language: str) -> VersionTexts:
    """The version's content in ``language`` (each text falling back as ``localized`` does),
    made once per process and language from its layout: the pages of the answer loop show
    it on every request, and a version never changes."""
    layout = version_layout(version_id)
    texts = layout.texts.get(language)
    if texts is None:
        texts = VersionTexts(
            title=localized(layout.title, language),
            questions=tuple(
                QuestionTexts(
                    id=question.id,
                    position=question.position,
                    text=localized(question.text, language),
                    explanation=localized(question.explanation, language),
                    option_ids=list(question.options),
                    option_texts={
                        option.id: localized(option.text, language)
                        for option in question.options.values()
                    },
                    correct_option_ids=frozenset(
                        option.id for option in question.options.values() if option.is_correct
                    ),
                )
                for question in layout.questions
            ),
        )
        layout.texts[language] = texts
    return texts


def read_current_versions() -> None:
    """Every quiz's current version, its layout and its texts in each language, kept as
    the pages of the answer loop would keep them (a web worker's warm-up, ops.warmup)."""
    for version_id in Quiz.objects.exclude(current_version=None).values_list(
        "current_version_id", flat=True
    ):
        for language, _name in settings.LANGUAGES:
            version_texts(version_id, language)


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
    quiz = placed_quiz(placement)
    policy = placement.placement
    return _policy(
        policy.max_attempts, policy.grading_method, quiz.max_attempts, quiz.grading_method
    )


def _policy(
    placement_max: int | None, placement_method: str, quiz_max: int, quiz_method: str
) -> AttemptPolicy:
    return AttemptPolicy(
        max_attempts=quiz_max if placement_max is None else placement_max,
        grading_method=placement_method or quiz_method,
    )


@dataclass(frozen=True)
class OptionView:
    id: int
    text: str
    is_correct: bool
    chosen: bool


@dataclass(frozen=True)
class QuestionShown:
    """What a page shows of a question besides its options: the same for every attempt at
    the question with the same verdict, whatever order its options came in."""

    id: int
    position: int
    total: int
    text: str
    explanation: str
    answered: bool
    answered_correctly: bool | None


@dataclass(frozen=True)
class QuestionView:
    id: int
    position: int
    total: int
    text: str
    options: tuple[OptionView, ...]
    explanation: str
    answered: bool
    answered_correctly: bool | None

    @property
    def shown(self) -> QuestionShown:
        return QuestionShown(
            self.id,
            self.position,
            self.total,
            self.text,
            self.explanation,
            self.answered,
            self.answered_correctly,
        )

    @property
    def correct_option(self) -> OptionView:
        return next(option for option in self.options if option.is_correct)

    @property
    def chosen_option(self) -> OptionView | None:
        return next((option for option in self.options if option.chosen), None)


@dataclass(frozen=True)
class AttemptCourse:
    """The course of an attempt's placement, and whether the attempt's owner may still reach
    it: an active membership there, from an LMS (deployment and registration) still on."""

    context_id: int
    still_member: bool

    def reachable_from(self, launched: Collection[int]) -> bool:
        """Whether a session launched into the ``launched`` courses may reach the attempt."""
        return self.still_member and self.context_id in launched


class AttemptView:
    """An attempt's questions in the reader's language, with what the student chose; each
    question's view is built when a page asks for it (the question and feedback pages show
    one, the summary all)."""

    def __init__(
        self,
        attempt: Attempt,
        texts: VersionTexts,
        answers: dict[int, tuple[int, bool]],
        course: AttemptCourse,
    ) -> None:
        self.attempt = attempt
        self.course = course
        self.title = texts.title
        self._texts = texts
        self._answers = answers  # question id -> (chosen option id, whether right)

    @cached_property
    def questions(self) -> list[QuestionView]:
        return [self._question_view(question) for question in self._texts.questions]

    @property
    def answered_count(self) -> int:
        return len(self._answers)

    @property
    def current_question(self) -> QuestionView | None:
        question = next((q for q in self._texts.questions if q.id not in self._answers), None)
        return None if question is None else self._question_view(question)

    def question_at(self, position: int) -> QuestionView | None:
        question = next((q for q in self._texts.questions if q.position == position), None)
        return None if question is None else self._question_view(question)

    def _question_view(self, question: QuestionTexts) -> QuestionView:
        order = self.attempt.option_order.get(str(question.id), question.option_ids)
        chosen_id, answered_correctly = self._answers.get(question.id, (None, None))
        return QuestionView(
            id=question.id,
            position=question.position,
            total=len(self._texts.questions),
            text=question.text,
            options=tuple(
                OptionView(
                    id=option_id,
                    text=question.option_texts[option_id],
                    is_correct=option_id in question.correct_option_ids,
                    chosen=chosen_id == option_id,
                )
                for option_id in order
            ),
            explanation=question.explanation,
            answered=chosen_id is not None,
            answered_correctly=answered_correctly,
        )

    @property
    def percent(self) -> Decimal | None:
        """The attempt's score as a percentage of its maximum, to one decimal."""
        attempt = self.attempt
        if attempt.score is None or not attempt.max_score:
            return None
        return (Decimal(attempt.score) * 100 / attempt.max_score).quantize(Decimal("0.1"))

    @property
    def time_taken(self) -> timedelta | None:
        if self.attempt.finished_at is None:
            return None
        return self.attempt.finished_at - self.attempt.started_at

    def finished(self, score: int, finished_at: datetime) -> AttemptView:
        """This view as the finish that wrote ``score`` and ``finished_at`` leaves it, for
        the results page of the answer that finished it (decision 86). The counted flags are
        set among all of the student's attempts by the finish, so they are not known here:
        they are left deferred, and a read of one asks the database."""
        attempt = self.attempt
        values = {field: getattr(attempt, field) for field in _KNOWN_AFTER_FINISH}
        values.update(score=score, state=AttemptState.FINISHED.value, finished_at=finished_at)
        known = Attempt.from_db(connection.alias, list(values), list(values.values()))
        return AttemptView(known, self._texts, self._answers, self.course)


# Whether a user may still reach a course: an active membership there, from an LMS still turned
# on (as lti.access.granted_contexts decides), over the joins that follow a resource link ``p``
# to its course and LMS and the membership of the user named by ``{member}``.
_REACHABLE = """CASE WHEN m.is_active AND (c.deployment_id IS NULL OR (d.is_active AND g.is_active))
            THEN 1 ELSE 0 END"""
_COURSE_JOINS = f"""
JOIN {Context._meta.db_table} c ON c.id = p.context_id
LEFT JOIN {Membership._meta.db_table} m ON m.context_id = p.context_id AND m.user_id = {{member}}
LEFT JOIN {Deployment._meta.db_table} d ON d.id = c.deployment_id
LEFT JOIN {Registration._meta.db_table} g ON g.id = d.registration_id"""

# The columns of an attempt ``a`` that its view reads, in the order attempt_view_from_rows
# reads them. The answer's statement reads them too (assessments.services).
ATTEMPT_COLUMNS = """a.public_id, a.id, a.user_id, a.state, a.quiz_version_id,
       CAST(a.option_order AS TEXT) AS option_order, a.placement_id, a.number, a.language,
       a.started_at, a.finished_at, a.score, a.max_score, a.is_last_finished, a.is_highest"""
# How many columns of a row attempt_view_from_rows reads: the attempt's, its course and
# whether its owner may still reach it, then one answer's question, option and correctness.
ATTEMPT_VIEW_WIDTH = 20

# The attempt, every column, then (where its pages read it) its course and whether its owner
# may still reach that course, and its answers: one row per answer (one row with no answer
# before the first), then whatever columns the caller adds (``extra``, over ``joins``).
# Portable SQL: `make run` serves it from SQLite.
_ATTEMPT_VIEW_SQL = f"""
SELECT {ATTEMPT_COLUMNS}, {{course}}, r.question_id, r.option_id, r.is_correct{{extra}}
FROM {Attempt._meta.db_table} a {{course_joins}}{{joins}}
LEFT JOIN {Response._meta.db_table} r ON r.attempt_id = a.id
WHERE """
_OWN_COURSE = {
    "course": f"p.context_id,\n       {_REACHABLE}",
    "course_joins": f"""
JOIN {ResourceLink._meta.db_table} p ON p.id = a.placement_id"""
    + _COURSE_JOINS.format(member="a.user_id"),
}
_OWN_ATTEMPT = "a.public_id = %s AND a.user_id = %s"
_OWN_ATTEMPT_SQL = _ATTEMPT_VIEW_SQL.format(**_OWN_COURSE, extra="", joins="") + _OWN_ATTEMPT
# At most one row set: the attempt_one_in_progress constraint. Read for a launch, which has
# just found the membership and the LMS, and a start, which has just checked them (the
# caller names the course).
_IN_PROGRESS_SQL = (
    _ATTEMPT_VIEW_SQL.format(course="NULL, NULL", course_joins="", extra="", joins="")
    + "a.placement_id = %s AND a.user_id = %s AND a.state = %s"
)
_ATTNAMES = [field.attname for field in Attempt._meta.concrete_fields]  # the model's order
# What a finish leaves known of its attempt (AttemptView.finished): all but the counted flags,
# in the model's order, as Model.from_db takes them.
_KNOWN_AFTER_FINISH = [name for name in _ATTNAMES if name not in ("is_last_finished", "is_highest")]


# What a start needs, in one statement: the placement's course and whether the user may still
# reach it, the placement's kind and rules, its quiz's current version, and what the user has
# made there (how many attempts, the highest number, how many in progress: at most one).
_START_SQL = f"""
SELECT p.context_id, {_REACHABLE}, pl.kind, pl.max_attempts, pl.grading_method,
       qz.max_attempts, qz.grading_method, qz.current_version_id, made.count, made.last,
       made.in_progress
FROM {ResourceLink._meta.db_table} p {_COURSE_JOINS.format(member="%s")}
LEFT JOIN {Placement._meta.db_table} pl ON pl.resource_link_id = p.id
LEFT JOIN {QuizPlacement._meta.db_table} qp ON qp.resource_link_id = p.id
LEFT JOIN {Quiz._meta.db_table} qz ON qz.id = qp.quiz_id
CROSS JOIN (
    SELECT COUNT(*) AS count, MAX(number) AS last,
           SUM(CASE WHEN state = %s THEN 1 ELSE 0 END) AS in_progress
    FROM {Attempt._meta.db_table} WHERE placement_id = %s AND user_id = %s
) made
WHERE p.id = %s
"""


@dataclass(frozen=True)
class StartFacts:
    """What a student's start of a quiz at a placement reads before it inserts."""

    course: AttemptCourse
    policy: AttemptPolicy | None  # None: the placement is not a quiz's
    version_id: int | None  # None: the quiz's content was never loaded
    made: int
    last_number: int
    in_progress: bool


def start_facts(user_id: int, placement_id: int) -> StartFacts | None:
    """What a start needs to decide (None when there is no such placement), in one written-
    out statement where the ORM took two, and most of the start's time building them: the
    placement's access check (``activities.access.member_placement``, with its kind's
    relations) and the count of the attempts made."""
    with connection.cursor() as cursor:
        cursor.execute(
            _START_SQL,
            [user_id, AttemptState.IN_PROGRESS.value, placement_id, user_id, placement_id],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    (context_id, still_member, kind, placement_max, placement_method, quiz_max, quiz_method,
     version_id, made, last_number, in_progress) = row  # fmt: skip
    is_quiz = kind == QUIZ_KIND and quiz_method is not None
    return StartFacts(
        course=AttemptCourse(context_id, bool(still_member)),
        policy=_policy(placement_max, placement_method, quiz_max, quiz_method) if is_quiz else None,
        version_id=version_id,
        made=made,
        last_number=last_number or 0,
        in_progress=bool(in_progress),
    )


def own_attempt_view(user: User, public_id: UUID, language: str) -> AttemptView | None:
    """The user's attempt ``public_id`` (None when the user has none) with its questions in
    order, options in the attempt's shuffled order and what the student chose, for every
    page of an attempt (the question, its feedback, the results). Answers' correctness is
    only meaningful for answered questions; templates must not reveal it before.

    One statement reads the attempt and its answers, where the ORM took two and most of
    the page's time building them; the content comes from the version's layout (read once
    per process)."""
    field = Attempt._meta.get_field("public_id")
    return _read_attempt_view(
        _OWN_ATTEMPT_SQL, [field.get_db_prep_value(public_id, connection), user.pk], language
    )


def attempt_in_progress_view(
    placement_id: int, context_id: int, user_id: int, language: str
) -> AttemptView | None:
    """The student's attempt in progress on the placement (in the course ``context_id``), as
    ``own_attempt_view`` reads it, or None: a launch's landing names its address and renders
    its question from this one statement (decisions 58 and 62), and a start that finds an
    attempt in progress answers with its question. Each has just found the student's
    membership in the course, from an LMS that is on."""
    return _read_attempt_view(
        _IN_PROGRESS_SQL,
        [placement_id, user_id, AttemptState.IN_PROGRESS.value],
        language,
        AttemptCourse(context_id, still_member=True),
    )


def prepare_attempt_reads() -> None:
    """Runs the attempt pages' two statements once, for nobody (a web worker's warm-up), so
    that each is prepared and planned on the worker's connection (decision 64) before a
    student's page or launch needs it."""
    nobody = Attempt._meta.get_field("public_id").get_db_prep_value(UUID(int=0), connection)
    in_progress = AttemptState.IN_PROGRESS.value
    _read_attempt_view(_OWN_ATTEMPT_SQL, [nobody, 0], settings.LANGUAGE_CODE)
    _read_attempt_view(_IN_PROGRESS_SQL, [0, 0, in_progress], settings.LANGUAGE_CODE)


def _read_attempt_view(
    sql: str, parameters: list, language: str, course: AttemptCourse | None = None
) -> AttemptView | None:
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters)
        rows = cursor.fetchall()
    return attempt_view_from_rows(rows, language, course) if rows else None


def attempt_view_from_rows(
    rows: list[tuple], language: str, course: AttemptCourse | None = None
) -> AttemptView:
    """The attempt's view from the rows of a statement that selects ``ATTEMPT_COLUMNS``, its
    course, and its answers (ATTEMPT_VIEW_WIDTH columns; any after them are the caller's),
    one row per answer. ``course`` stands for the course columns where the caller knows it."""
    (public_id, attempt_id, user_id, state, version_id, option_order, placement_id, number,
     started_in, started_at, finished_at, score, max_score, is_last_finished,
     is_highest, context_id, still_member) = rows[0][:17]  # fmt: skip
    loaded = {
        "id": attempt_id,
        "public_id": Attempt._meta.get_field("public_id").to_python(public_id),
        "user_id": user_id,
        "placement_id": placement_id,
        "quiz_version_id": version_id,
        "number": number,
        "state": state,
        "language": started_in,
        "option_order": json.loads(option_order),
        "started_at": _aware(started_at),
        "finished_at": _aware(finished_at),
        "score": score,
        "max_score": max_score,
        "is_last_finished": bool(is_last_finished),
        "is_highest": bool(is_highest),
    }
    attempt = Attempt.from_db(connection.alias, _ATTNAMES, [loaded[name] for name in _ATTNAMES])
    chosen = {row[17]: (row[18], bool(row[19])) for row in rows if row[17] is not None}
    texts = version_texts(attempt.quiz_version_id, language)
    course = course or AttemptCourse(context_id, bool(still_member))
    return AttemptView(attempt, texts, chosen, course)


def _aware(value: datetime | None) -> datetime | None:
    """A timestamp read by a raw statement: PostgreSQL's come aware, SQLite's naive in UTC
    (the ORM makes them aware; a cursor does not)."""
    if value is None or timezone.is_aware(value):
        return value
    return timezone.make_aware(value, UTC)


@dataclass(frozen=True)
class AttemptRow:
    """What the activity's page lists of one of the student's attempts. A student may make
    hundreds: each is a row of five values, not a model instance with its option order."""

    public_id: UUID
    number: int
    state: str
    finished_at: datetime | None
    score: int | None
    max_score: int


@dataclass(frozen=True)
class PlacementOverview:
    title: str
    intro: str
    question_count: int
    finished_count: int
    listed_attempts: list[AttemptRow]  # the latest finished ones a page lists, oldest first
    in_progress: AttemptRow | None
    grade: Grade | None
    policy: AttemptPolicy

    @property
    def unlisted_count(self) -> int:
        return self.finished_count - len(self.listed_attempts)

    @property
    def attempts_left(self) -> int | None:
        if not self.policy.max_attempts:
            return None
        made = self.finished_count + (1 if self.in_progress else 0)
        return max(self.policy.max_attempts - made, 0)

    @property
    def can_start(self) -> bool:
        return self.in_progress is None and self.attempts_left != 0

    @property
    def grade_percent(self) -> Decimal | None:
        if self.grade is None or not self.grade.score_maximum:
            return None
        return round_grade(self.grade.score_given * 100 / self.grade.score_maximum)


# A quiz's placement with its rules and its quiz's current version, as the written-out reads
# select them: ``_policy`` of the first four columns, then the version.
_QUIZ_RULES = (
    "pl.max_attempts, pl.grading_method, qz.max_attempts, qz.grading_method, qz.current_version_id"
)
_QUIZ_PLACEMENT = f"""{Placement._meta.db_table} pl
JOIN {QuizPlacement._meta.db_table} qp ON qp.resource_link_id = pl.resource_link_id
JOIN {Quiz._meta.db_table} qz ON qz.id = qp.quiz_id"""
_GRADING_RULES_SQL = f"SELECT {_QUIZ_RULES} FROM {_QUIZ_PLACEMENT} WHERE pl.resource_link_id = %s"


@dataclass(frozen=True)
class GradingRules:
    """What grading a student's finished attempts needs of their placement: its attempt
    policy and its quiz's current version, whose questions are the most a student scores."""

    policy: AttemptPolicy
    version_id: int

    @property
    def score_maximum(self) -> Decimal:
        return quiz_score_maximum(self.version_id)


def grading_rules(placement_id: int) -> GradingRules:
    """The placement's attempt policy and the most its quiz scores, in one written-out
    statement: the ORM's read of the placement with its quiz, on every finish, cost 1.8–2.0 ms
    of CPU against 0.25 for the statement (decision 76)."""
    with connection.cursor() as cursor:
        cursor.execute(_GRADING_RULES_SQL, [placement_id])
        row = cursor.fetchone()
    if row is None:
        raise ValueError(f"the placement {placement_id} is not a quiz's")
    if row[4] is None:
        raise ValueError(f"the quiz of the placement {placement_id} has no content loaded")
    return GradingRules(policy=_policy(*row[:4]), version_id=row[4])


def quiz_score_maximum(version_id: int) -> Decimal:
    """The most a student scores on a quiz whose current version is ``version_id``: a mark a
    question."""
    return Decimal(version_layout(version_id).question_count)


# The placement's policy and its quiz's current version, then the student's latest attempts
# there, newest first, each row with the count of their finished ones (one row with no
# attempt when they have none), and on every row the student's grade there (one at most).
# Portable SQL.
_OVERVIEW_SQL = f"""
SELECT {_QUIZ_RULES}, a.public_id, a.number, a.state, a.finished_at, a.score,
       a.max_score, SUM(CASE WHEN a.state = %s THEN 1 ELSE 0 END) OVER (), {select_list([GRADE])}
FROM {_QUIZ_PLACEMENT}
LEFT JOIN {Attempt._meta.db_table} a ON a.placement_id = pl.resource_link_id AND a.user_id = %s
LEFT JOIN {GRADE.table}
    ON {GRADE.column("placement")} = pl.resource_link_id AND {GRADE.column("user")} = %s
WHERE pl.resource_link_id = %s
ORDER BY a.number DESC
"""


def placement_overview(
    *, user: User, placement_id: int, language: str, listed: int | None = None
) -> PlacementOverview:
    """The activity's page for one student; ``listed`` bounds the finished attempts its table
    shows to the latest ones (None: all). One statement, however many attempts the student
    has made: the placement's rules with the latest attempts, a count and the grade (the ORM
    spent several times its cost building them, on the activity's page and the results of
    every attempt; the grade was a statement of its own until 2026-12-05)."""
    sql = _OVERVIEW_SQL
    parameters: list[str | int] = [AttemptState.FINISHED.value, user.pk, user.pk, placement_id]
    if listed is not None:
        # One more than listed: an attempt in progress is the student's latest (one at a time).
        sql, parameters = f"{sql} LIMIT %s", [*parameters, listed + 1]
    with connection.cursor() as cursor:
        cursor.execute(sql, parameters)
        rows = cursor.fetchall()
    if not rows:
        raise ValueError(f"the placement {placement_id} is not a quiz's")
    version_id = rows[0][4]
    if version_id is None:
        raise ValueError(f"the quiz of the placement {placement_id} has no content loaded")
    return overview_of(
        GradingRules(_policy(*rows[0][:4]), version_id),
        finished_count=rows[0][11] or 0,
        latest_attempts=_attempt_rows([row[5:11] for row in rows]),
        grade=grade_from_row(rows[0][-len(GRADE.fields) :]),  # the last columns
        language=language,
        listed=listed,
    )


# The results page's read (decision 89): the attempt as its pages read it and, on each of its
# rows, what the activity's overview shows beside a finished attempt: the placement's rules,
# how many attempts the student finished there, their attempt in progress (one at most: the
# attempt_one_in_progress constraint) and their grade (one at most). Portable SQL.
_RESULTS_GRADE = Part(Grade, "gr")  # g is the course joins' registration
_RESULTS_SQL = (
    _ATTEMPT_VIEW_SQL.format(
        **_OWN_COURSE,
        extra=f""",
       {_QUIZ_RULES},
       (SELECT COUNT(*) FROM {Attempt._meta.db_table} f
        WHERE f.placement_id = a.placement_id AND f.user_id = a.user_id AND f.state = %s),
       ip.public_id, ip.number, ip.state, ip.finished_at, ip.score, ip.max_score,
       {select_list([_RESULTS_GRADE])}""",
        joins=f"""
LEFT JOIN {Placement._meta.db_table} pl ON pl.resource_link_id = a.placement_id
LEFT JOIN {QuizPlacement._meta.db_table} qp ON qp.resource_link_id = pl.resource_link_id
LEFT JOIN {Quiz._meta.db_table} qz ON qz.id = qp.quiz_id
LEFT JOIN {Attempt._meta.db_table} ip
    ON ip.placement_id = a.placement_id AND ip.user_id = a.user_id AND ip.state = %s
LEFT JOIN {_RESULTS_GRADE.table}
    ON {_RESULTS_GRADE.column("placement")} = a.placement_id
    AND {_RESULTS_GRADE.column("user")} = a.user_id""",
    )
    + _OWN_ATTEMPT
)


def own_results(
    user: User, public_id: UUID, language: str
) -> tuple[AttemptView, PlacementOverview] | None:
    """The user's attempt ``public_id`` as ``own_attempt_view`` reads it, with the activity's
    overview that its results page shows (``placement_overview`` with no attempt listed), in
    one statement (decision 89); None when the user has no such attempt."""
    field = Attempt._meta.get_field("public_id")
    parameters = [
        AttemptState.FINISHED.value,
        AttemptState.IN_PROGRESS.value,
        field.get_db_prep_value(public_id, connection),
        user.pk,
    ]
    with connection.cursor() as cursor:
        cursor.execute(_RESULTS_SQL, parameters)
        rows = cursor.fetchall()
    if not rows:
        return None
    view = attempt_view_from_rows(rows, language)
    # The columns after the attempt's view, in _RESULTS_SQL's order (the same on every row).
    extra = rows[0][ATTEMPT_VIEW_WIDTH:]
    policy, version_id, finished_count = extra[:4], extra[4], extra[5]
    in_progress, grade = extra[6:12], extra[12:]
    if version_id is None:  # no quiz placed there (a join found none), or none loaded
        placement_id = view.attempt.placement_id
        raise ValueError(f"the placement {placement_id} is not a quiz's with content loaded")
    overview = overview_of(
        GradingRules(_policy(*policy), version_id),
        finished_count=finished_count,
        latest_attempts=_attempt_rows([in_progress]),
        grade=grade_from_row(grade),
        language=language,
        listed=0,
    )
    return view, overview


def _attempt_rows(rows: list[Sequence[Any]]) -> list[AttemptRow]:
    """Attempts from columns (public id, number, state, finished at, score, max score), one
    per row; a row whose id is NULL (an outer join that found none) is none."""
    return [
        AttemptRow(
            public_id=public_id if isinstance(public_id, UUID) else UUID(public_id),
            number=number,
            state=state,
            finished_at=_aware(finished_at),
            score=score,
            max_score=max_score,
        )
        for public_id, number, state, finished_at, score, max_score in rows
        if public_id is not None
    ]


def overview_of(
    rules: GradingRules,
    *,
    finished_count: int,
    latest_attempts: list[AttemptRow],
    grade: Grade | None,
    language: str,
    listed: int | None = None,
) -> PlacementOverview:
    """The activity's overview for one student from what was read of it: the placement's
    rules, how many attempts they finished, their latest attempts (newest first; the one in
    progress, if any, among them) and their grade. ``placement_overview`` reads these in one
    statement; the answer that finishes an attempt has them from its finish (decision 87)."""
    finished = [row for row in latest_attempts if row.state == AttemptState.FINISHED]
    in_progress = (row for row in latest_attempts if row.state == AttemptState.IN_PROGRESS)
    layout = version_layout(rules.version_id)
    return PlacementOverview(
        title=localized(layout.title, language),
        intro=localized(layout.intro, language),
        question_count=layout.question_count,
        finished_count=finished_count,
        listed_attempts=finished[:listed][::-1],
        in_progress=next(in_progress, None),
        grade=grade,
        policy=rules.policy,
    )


def _key_flips(placement: ResourceLink) -> tuple[list[int], list[int], dict[int, int]]:
    """Responses whose correctness the quiz's current key changes, matched by the stable keys
    of question and option (a response the current version cannot match keeps its mark):
    the ids now right, the ids now wrong, and the change of score per attempt."""
    matching = Option.objects.filter(
        question__version_id=current_version_id(placement),
        question__key=OuterRef("question__key"),
        key=OuterRef("option__key"),
    )
    rows = (
        Response.objects.filter(attempt__placement=placement, attempt__state=AttemptState.FINISHED)
        .annotate(known=Exists(matching), right=Exists(matching.filter(is_correct=True)))
        .filter(known=True)
        .filter(Q(is_correct=True, right=False) | Q(is_correct=False, right=True))
        .values_list("pk", "attempt_id", "right")
    )
    now_right: list[int] = []
    now_wrong: list[int] = []
    delta: dict[int, int] = {}
    for pk, attempt_id, right in rows:
        (now_right if right else now_wrong).append(pk)
        delta[attempt_id] = delta.get(attempt_id, 0) + (1 if right else -1)
    return now_right, now_wrong, delta


def quiz_plan(
    placement: ResourceLink, apply_key: bool, user_id: int | None
) -> tuple[dict[int, PlannedGrade], list[AttemptRescore], list[int], list[int]]:
    policy = attempt_policy(placement)
    maximum = placement_score_maximum(placement)
    now_right, now_wrong, delta = _key_flips(placement) if apply_key else ([], [], {})
    attempts = Attempt.objects.filter(placement=placement, state=AttemptState.FINISHED)
    if user_id is not None:
        attempts = attempts.filter(user_id=user_id)
    finished: dict[int, list[tuple[int, Decimal]]] = {}
    rescored: list[AttemptRescore] = []
    for pk, public_id, student, number, score, max_score in attempts.order_by(
        "user_id", "number"
    ).values_list("pk", "public_id", "user_id", "number", "score", "max_score"):
        assert score is not None  # a finished attempt has its score
        new_score = score + delta.get(pk, 0)
        if new_score != score:
            rescored.append(AttemptRescore(pk, str(public_id), student, number, score, new_score))
        finished.setdefault(student, []).append((number, Decimal(new_score) / Decimal(max_score)))
    planned = {}
    for student, rows in finished.items():
        computed = grade_by_method(policy.grading_method, rows, policy.max_attempts)
        if computed is not None:
            planned[student] = PlannedGrade(
                student,
                round_grade(computed.fraction * maximum),
                maximum,
                policy.grading_method,
                computed.counted,
                computed.counted_number,
            )
    return planned, rescored, now_right, now_wrong
