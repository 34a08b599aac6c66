"""Writes of the quiz domain: loading content, starting attempts, answering, grading."""

from __future__ import annotations

import math
import random
from collections.abc import Collection
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from activities.errors import ActivityNotLoaded, OutsideLaunch
from activities.grading import grade_by_method
from activities.models import ChangeCause, Grade, Regrade
from activities.selectors import for_update
from activities.services import (
    recompute_placement,
    set_placement_grade,
    update_placement,
)
from lti.access import still_member
from lti.models import ResourceLink
from ops.rows import insert_row, update_row

from .content import QuizContent
from .errors import (
    AnswerConflict,
    AttemptLimitReached,
    InvalidAnswer,
    NotAQuiz,
    StartConflict,
)
from .models import Attempt, AttemptState, Option, Question, Quiz, QuizVersion, Response
from .selectors import (
    ATTEMPT_COLUMNS,
    ATTEMPT_VIEW_WIDTH,
    AttemptView,
    GradingRules,
    PlacementOverview,
    attempt_in_progress_view,
    attempt_policy,
    attempt_view_from_rows,
    grading_rules,
    is_last_question,
    overview_of,
    start_facts,
    version_layout,
    version_texts,
)


@dataclass(frozen=True)
class LoadResult:
    quiz: Quiz
    version: QuizVersion
    created: bool


@transaction.atomic
def load_quiz(content: QuizContent) -> LoadResult:
    """Store the content as the quiz's current version; a no-op when nothing changed.

    An edited file becomes a new version; earlier versions and the attempts on them stay.
    Reloading a file that matches an earlier version makes that version current again.
    """
    quiz, _ = Quiz.objects.select_for_update().get_or_create(slug=content.slug)
    content_hash = content.content_hash()
    version = quiz.versions.filter(content_hash=content_hash).first()
    created = version is None
    if version is None:
        number = (quiz.versions.aggregate(last=Max("number"))["last"] or 0) + 1
        version = QuizVersion.objects.create(
            quiz=quiz,
            number=number,
            content_hash=content_hash,
            title=content.title,
            intro=content.intro,
            source_language=content.source_language,
        )
        for position, question_content in enumerate(content.questions, start=1):
            question = Question.objects.create(
                version=version,
                position=position,
                key=question_content.key,
                source_language=question_content.source_language,
                text=question_content.text,
                explanation=question_content.explanation,
            )
            Option.objects.bulk_create(
                Option(
                    question=question,
                    position=option_position,
                    key=option_content.key,
                    text=option_content.text,
                    is_correct=option_content.correct,
                )
                for option_position, option_content in enumerate(question_content.options, 1)
            )
    if quiz.current_version_id != version.pk:
        quiz.current_version = version
        quiz.save(update_fields=["current_version"])
    return LoadResult(quiz=quiz, version=version, created=created)


def _shuffled_option_order(version_id: int) -> dict[str, list[int]]:
    """Each question's option ids in a random order, keyed by the question's id."""
    rng = random.SystemRandom()
    order: dict[str, list[int]] = {}
    for question_id, option_ids in version_layout(version_id).option_ids.items():
        order[str(question_id)] = rng.sample(option_ids, len(option_ids))
    return order


# A start reads again after a unique constraint refused its insert: another start (a double
# click, a second tab) took the number or began the attempt in progress a moment before.
# Losing this many races in a row is refused rather than retried forever.
START_TRIES = 3


def start_or_resume_attempt(
    *, user: User, placement_id: int, launched_courses: Collection[int], language: str
) -> AttemptView:
    """The student's attempt in progress on this placement, or a new one if the policy
    allows another, numbered after the student's highest there (an earlier one may be gone),
    as its pages show it. Refused as every page of the activity is
    (``activities.access.member_placement``): ``OutsideLaunch`` unless the session was
    launched into the placement's course (``launched_courses``) and may still reach it, and
    ``NotAQuiz`` when the placement places another kind of activity.

    One statement reads what the start decides on (``selectors.start_facts``) and one
    inserts; the new attempt's page needs no read (it has no answers yet). No transaction
    around the read and the insert: the attempt's unique number and its one in progress per
    student and placement settle two starts at once (a double click, a second tab), and the
    loser reads again: it resumes the winner's attempt, or starts the next one when the
    number it chose was taken by an attempt no longer in progress. Inside a caller's
    transaction a savepoint keeps that transaction usable after such a race."""
    for _try in range(START_TRIES):
        facts = start_facts(user.pk, placement_id)
        if facts is None or not facts.course.reachable_from(launched_courses):
            raise OutsideLaunch()
        if facts.policy is None:
            raise NotAQuiz()
        if facts.in_progress:
            resumed = attempt_in_progress_view(
                placement_id, facts.course.context_id, user.pk, language
            )
            if resumed is not None:
                return resumed
            continue  # finished in between: read again
        if facts.policy.max_attempts and facts.made >= facts.policy.max_attempts:
            raise AttemptLimitReached(
                _("You have used all %(count)s attempts allowed on this quiz.")
                % {"count": facts.policy.max_attempts}
            )
        if facts.version_id is None:
            raise ActivityNotLoaded("load_quiz")
        option_order = _shuffled_option_order(facts.version_id)
        guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
        try:
            with guard:
                attempt = insert_row(
                    Attempt(
                        user=user,
                        placement_id=placement_id,
                        quiz_version_id=facts.version_id,
                        number=facts.last_number + 1,
                        language=language,
                        option_order=option_order,
                        max_score=len(option_order),
                    )
                )
        except IntegrityError:
            continue  # another start won: read what it made
        return AttemptView(attempt, version_texts(facts.version_id, language), {}, facts.course)
    raise StartConflict(
        _("Another start of this quiz was under way at the same moment. Please try again.")
    )


def _parse_id(raw: object, message: str) -> int:
    try:
        value = int(str(raw))
    except (TypeError, ValueError):
        raise InvalidAnswer(message) from None
    if value <= 0 or value > 2**63 - 1:
        raise InvalidAnswer(message)
    return value


@dataclass(frozen=True)
class Answered:
    """An answer recorded: the position of its question, and whether it finished the attempt
    (the page to show next: the question's feedback, or the attempt's results). ``view`` is
    the attempt as the answer left it, where the answer's statement read it for that page
    (decisions 79 and 86); None where the page must read it."""

    position: int
    finished: bool
    view: AttemptView | None = field(default=None, compare=False)
    # The activity's overview for the results page, where the finish read it (decision 87).
    overview: PlacementOverview | None = field(default=None, compare=False)


def submit_answer(
    *,
    user: User,
    launched_courses: list[int],
    attempt_public_id: UUID,
    question_id: object,
    option_id: object,
    language: str,
) -> Answered:
    """Record the student's answer to the current question of their attempt.

    Answers are final: once feedback was shown the answer cannot change. The attempt
    finishes, and the grade is refreshed, with the last answer. Raises
    ``Attempt.DoesNotExist`` when the attempt is not the user's, and ``OutsideLaunch`` when
    its course is not among ``launched_courses`` (the session's launches) or the user may
    no longer reach it (membership ended, LMS turned off).
    """
    question_pk = _parse_id(question_id, _("The answer does not say which question it is for."))
    option_pk = _parse_id(option_id, _("Choose one of the options before submitting."))
    asked = AskedAnswer(
        user, launched_courses, attempt_public_id, question_pk, option_pk, timezone.now(), language
    )
    if connection.vendor == "postgresql":
        answered = _record_next_answer(asked)
        if answered is not None:
            return answered
    return _record_answer_checked(asked)


@dataclass(frozen=True)
class AskedAnswer:
    """An answer as the student posted it, its ids parsed, with the courses their session
    was launched into, the moment it came and the language of the page that answers it."""

    user: User
    launched_courses: list[int]
    attempt_public_id: UUID
    question_pk: int
    option_pk: int
    now: datetime
    language: str


# The next answer as one statement: the attempt is the user's and in progress, in a course
# the session was launched into that the user may still reach (lti.access.granted_contexts),
# the option is of that question in the attempt's version, and the question is the next one
# (the last only when the caller finishes the attempt in the same transaction). It locks the
# attempt first, as the checked path does. Two answers racing for the same question meet on
# response_one_per_question. Anything else inserts nothing, and the checked path says
# what is wrong (or, after a race, records the answer afresh). Seconds round half up, in
# both paths. What it answers is the attempt as the answer leaves it, read as the attempt's
# pages read it (one row per answer, the new one included: the statement's own reads do not
# see its insert), then the answer's position, whether it is the last and the score so far.
_NEXT_ANSWER_SQL = f"""
WITH attempt AS (
    SELECT {ATTEMPT_COLUMNS}, p.context_id, 1 AS still_member
    FROM assessments_attempt a
    JOIN lti_resourcelink p ON p.id = a.placement_id
    JOIN lti_context c ON c.id = p.context_id
    JOIN lti_membership m ON m.context_id = p.context_id AND m.user_id = a.user_id
    LEFT JOIN lti_deployment d ON d.id = c.deployment_id
    LEFT JOIN lti_registration g ON g.id = d.registration_id
    WHERE a.public_id = %(attempt)s AND a.user_id = %(user)s AND a.state = %(in_progress)s
        AND p.context_id = ANY(%(courses)s) AND m.is_active
        AND (c.deployment_id IS NULL OR (d.is_active AND g.is_active))
    FOR UPDATE OF a
), so_far AS (
    SELECT count(*) AS answered, count(*) FILTER (WHERE is_correct) AS correct,
        max(answered_at) AS last_answered_at
    FROM assessments_response
    WHERE attempt_id = (SELECT id FROM attempt)
), chosen AS (
    SELECT o.id AS option_id, o.question_id, o.is_correct, q.position, q.version_id
    FROM assessments_option o JOIN assessments_question q ON q.id = o.question_id
    WHERE o.id = %(option)s AND o.question_id = %(question)s
), inserted AS (
    INSERT INTO assessments_response
        (attempt_id, question_id, option_id, is_correct, answered_at, seconds_spent)
    SELECT attempt.id, chosen.question_id, chosen.option_id, chosen.is_correct, %(now)s,
        GREATEST(0, ROUND(EXTRACT(EPOCH FROM
            %(now)s - COALESCE(so_far.last_answered_at, attempt.started_at))))::integer
    FROM attempt, so_far, chosen
    WHERE chosen.version_id = attempt.quiz_version_id
        AND chosen.position = so_far.answered + 1
        AND (chosen.position < attempt.max_score
            OR (%(finishing)s AND chosen.position = attempt.max_score))
    RETURNING question_id, option_id, is_correct
), answers AS (
    SELECT question_id, option_id, is_correct FROM assessments_response
    WHERE attempt_id = (SELECT id FROM attempt)
    UNION ALL
    SELECT question_id, option_id, is_correct FROM inserted
)
SELECT attempt.*, answers.*, chosen.position, chosen.position = attempt.max_score,
    so_far.correct + chosen.is_correct::integer
FROM inserted JOIN chosen USING (question_id), attempt, so_far, answers
"""


def _record_next_answer(asked: AskedAnswer) -> Answered | None:
    user, now = asked.user, asked.now
    finishing = is_last_question(asked.question_pk)
    parameters: dict[str, Any] = {
        "attempt": asked.attempt_public_id,
        "user": user.pk,
        "courses": asked.launched_courses,
        "in_progress": AttemptState.IN_PROGRESS.value,
        "option": asked.option_pk,
        "question": asked.question_pk,
        "now": now,
        "finishing": finishing,
    }
    # Any answer but the last is a transaction on its own (no BEGIN and COMMIT round trips);
    # the last shares one with finishing the attempt. Inside a caller's transaction a
    # savepoint keeps that transaction usable after a race.
    guard = transaction.atomic() if finishing or connection.in_atomic_block else nullcontext()
    try:
        with guard:
            with connection.cursor() as cursor:
                cursor.execute(_NEXT_ANSWER_SQL, parameters)
                rows = cursor.fetchall()
            if not rows:
                return None
            view = attempt_view_from_rows(rows, asked.language)
            position, finishes, score = rows[0][ATTEMPT_VIEW_WIDTH:]
            if finishes:
                attempt = view.attempt
                regraded = _finish_attempt(
                    attempt.pk, user=user, placement_id=attempt.placement_id, score=score, now=now
                )
                # Nothing of the student's is in progress now: one attempt at a time.
                overview = overview_of(
                    regraded.rules,
                    finished_count=regraded.finished_count,
                    latest_attempts=[],
                    grade=regraded.grade,
                    language=asked.language,
                    listed=0,
                )
                finished = view.finished(score, now)
                return Answered(position, finished=True, view=finished, overview=overview)
    except IntegrityError:
        return None  # answered a moment ago: the checked path says so
    return Answered(position, finished=False, view=view)


def _same_answer_again(attempt: Attempt, question_pk: int, option_pk: int) -> Answered | None:
    """The answer already recorded, posted again (a reload of the page its POST returned posts
    the form again): nothing changes, and it leads to its page as the first did."""
    position = (
        attempt.responses.filter(question_id=question_pk, option_id=option_pk)
        .values_list("question__position", flat=True)
        .first()
    )
    return None if position is None else Answered(position, finished=attempt.is_finished)


@transaction.atomic
def _record_answer_checked(asked: AskedAnswer) -> Answered:
    user, now, question_pk, option_pk = asked.user, asked.now, asked.question_pk, asked.option_pk
    attempt = (
        Attempt.objects.select_for_update(of=("self",))
        .select_related("placement__placement", "placement__quiz_placement__quiz")
        .get(public_id=asked.attempt_public_id, user=user)
    )
    context_id = attempt.placement.context_id
    if context_id not in asked.launched_courses or not still_member(user, context_id):
        raise OutsideLaunch()
    if attempt.is_finished:
        if (again := _same_answer_again(attempt, question_pk, option_pk)) is not None:
            return again
        raise AnswerConflict(_("This attempt is finished; its answers can no longer change."))
    # The option with its question, in one query; the error path says which one is wrong.
    option = (
        Option.objects.select_related("question")
        .filter(pk=option_pk, question_id=question_pk, question__version_id=attempt.quiz_version_id)
        .first()
    )
    if option is None:
        if not Question.objects.filter(pk=question_pk, version_id=attempt.quiz_version_id).exists():
            raise InvalidAnswer(_("That question is not part of your attempt."))
        raise InvalidAnswer(_("The selected option does not belong to this question."))
    question = option.question
    so_far = attempt.responses.aggregate(
        count=Count("pk"), correct=Count("pk", filter=Q(is_correct=True)), last=Max("answered_at")
    )
    answered = so_far["count"]
    # Answers go in order, so questions 1..answered are exactly the answered ones.
    if question.position <= answered:
        if (again := _same_answer_again(attempt, question_pk, option_pk)) is not None:
            return again
        raise AnswerConflict(
            _(
                "Question %(position)s is already answered; an answer cannot be changed "
                "once its feedback was shown."
            )
            % {"position": question.position}
        )
    if question.position != answered + 1:
        raise AnswerConflict(
            _("Questions are answered in order: question %(position)s comes next.")
            % {"position": answered + 1}
        )
    Response.objects.create(
        attempt=attempt,
        question=question,
        option=option,
        is_correct=option.is_correct,
        answered_at=now,
        seconds_spent=max(
            0, math.floor((now - (so_far["last"] or attempt.started_at)).total_seconds() + 0.5)
        ),
    )
    finishes = answered + 1 == attempt.max_score
    if finishes:
        score = so_far["correct"] + option.is_correct
        _finish_attempt(
            attempt.pk, user=user, placement_id=attempt.placement_id, score=score, now=now
        )
    return Answered(position=question.position, finished=finishes)


def _finish_attempt(
    attempt_id: int, *, user: User, placement_id: int, score: int, now: datetime
) -> Regraded:
    """Finish the attempt and regrade its student, inside the caller's transaction."""
    update_row(
        Attempt, attempt_id, {"score": score, "state": AttemptState.FINISHED, "finished_at": now}
    )
    return _regraded(user, placement_id)


# The student's attempts on the placement, locked, and the change of their counted flags.
# Portable SQL, written out because building the ORM's two queries took most of a finishing
# answer (decision 49).
_ATTEMPTS_TO_MARK_SQL = f"""
SELECT state, number, id, score, max_score, is_last_finished, is_highest
FROM {Attempt._meta.db_table}
WHERE user_id = %s AND placement_id = %s
ORDER BY number
"""
_MARK_COUNTED_SQL = f"""
UPDATE {Attempt._meta.db_table} SET is_last_finished = (id = %s), is_highest = (id = %s)
WHERE id IN ({{ids}})
"""


def mark_counted_attempts(user_id: int, placement_id: int) -> list[tuple[int, int, int]]:
    """Flag the student's last and highest-scoring finished attempts on the placement,
    writing only the rows whose flags change; the finished attempts' (number, score,
    max_score) in order. All the student's attempts there are locked first, the one a
    concurrent answer is finishing too (its state is read once that answer commits), so a
    finish and a regrade of the same student take turns."""
    with connection.cursor() as cursor:
        cursor.execute(for_update(_ATTEMPTS_TO_MARK_SQL), [user_id, placement_id])
        finished = [row[1:] for row in cursor.fetchall() if row[0] == AttemptState.FINISHED]
        if not finished:
            return []
        last = finished[-1][1]
        highest = max(finished, key=lambda row: (row[2], -row[0]))[1]
        changed = [
            pk
            for _number, pk, _score, _maximum, is_last, is_highest in finished
            if bool(is_last) != (pk == last) or bool(is_highest) != (pk == highest)
        ]
        if changed:
            cursor.execute(
                _MARK_COUNTED_SQL.format(ids=", ".join(["%s"] * len(changed))),
                [last, highest, *changed],
            )
    return [
        (number, score, maximum)
        for number, _pk, score, maximum, _last, _high in finished
        if score is not None  # a finished attempt has its score
    ]


# Part of the caller's transaction when there is one (no savepoint: nothing here is
# retried on its own); a transaction of its own otherwise.
@transaction.atomic(savepoint=False)
def refresh_grade(*, user: User, placement_id: int) -> Grade | None:
    """Recompute which of the student's finished attempts on the placement count (the last,
    the highest) and their grade there. A changed grade is queued for the LMS gradebook in
    the same transaction."""
    return _regraded(user, placement_id).grade


@dataclass(frozen=True)
class Regraded:
    """What a regrade of one student read and wrote: the placement's rules, how many attempts
    the student has finished there, and their grade (None before the first finish)."""

    rules: GradingRules
    finished_count: int
    grade: Grade | None


def _regraded(user: User, placement_id: int) -> Regraded:
    rules = grading_rules(placement_id)
    policy = rules.policy
    finished = mark_counted_attempts(user.pk, placement_id)
    computed = grade_by_method(
        policy.grading_method,
        [(number, Decimal(score) / Decimal(maximum)) for number, score, maximum in finished],
        policy.max_attempts,
    )
    if computed is None:
        return Regraded(rules, len(finished), None)
    grade = set_placement_grade(
        user=user,
        placement_id=placement_id,
        fraction=computed.fraction,
        score_maximum=rules.score_maximum,
        grading_method=policy.grading_method,
        counted=computed.counted,
        counted_number=computed.counted_number,
    )
    return Regraded(rules, len(finished), grade)


@transaction.atomic
def change_quiz_settings(
    placement: ResourceLink,
    *,
    actor: User,
    quiz: Quiz,
    title: str,
    max_attempts: int,
    grading_method: str,
) -> Regrade | None:
    """An instructor re-points the placement or changes its attempt policy; when that
    changes how grades are computed (the method, the attempt limit, the quiz), every grade
    is recomputed at once, in the same transaction. Returns that recomputation, if any."""
    ResourceLink.objects.select_for_update().filter(pk=placement.pk).first()
    placed = placement.quiz_placement
    before = (attempt_policy(placement), placed.quiz_id)
    if placed.quiz_id != quiz.pk:
        placed.quiz = quiz
        placed.save(update_fields=["quiz"])
    update_placement(
        placement,
        title=title,
        max_attempts=max_attempts,
        grading_method=grading_method,
    )
    if (attempt_policy(placement), placed.quiz_id) == before:
        return None
    return recompute_placement(placement=placement, actor=actor, cause=ChangeCause.SETTINGS)
