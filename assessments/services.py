"""Writes of the quiz domain: loading content, starting attempts, answering, grading."""

from __future__ import annotations

import math
import random
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import Case, Count, Max, Q, When
from django.utils import timezone
from django.utils.translation import gettext as _

from gradesync.services import record_grade_change
from lti.models import ResourceLink
from lti.services import update_placement

from .content import QuizContent
from .errors import (
    AnswerConflict,
    AttemptLimitReached,
    InvalidAnswer,
    InvalidInput,
    PreviewOutdated,
)
from .grading import GRADE_DECIMALS, quiz_grade, round_grade
from .models import (
    Attempt,
    AttemptState,
    ChangeCause,
    Grade,
    GradeChange,
    GradeOverride,
    Option,
    Question,
    Quiz,
    QuizVersion,
    Regrade,
    Response,
)
from .selectors import (
    PlannedGrade,
    attempt_policy,
    current_version,
    is_last_question,
    placed_quiz,
    placement_score_maximum,
    regrade_plan,
    version_layout,
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


def _shuffled_option_order(version: QuizVersion) -> dict[str, list[int]]:
    """Each question's option ids in a random order, keyed by the question's id."""
    rng = random.SystemRandom()
    order: dict[str, list[int]] = {}
    for question_id, option_ids in version_layout(version.pk).option_ids.items():
        order[str(question_id)] = rng.sample(option_ids, len(option_ids))
    return order


def start_or_resume_attempt(*, user: User, placement: ResourceLink, language: str) -> Attempt:
    """The student's attempt in progress on this placement, or a new one if the policy
    allows another."""
    quiz = placed_quiz(placement)
    policy = attempt_policy(placement)
    with transaction.atomic():
        made = Attempt.objects.filter(user=user, placement=placement).aggregate(
            count=Count("pk"), in_progress=Max("pk", filter=Q(state=AttemptState.IN_PROGRESS))
        )
        if made["in_progress"] is not None:
            return Attempt.objects.get(pk=made["in_progress"])
        if policy.max_attempts and made["count"] >= policy.max_attempts:
            raise AttemptLimitReached(
                _("You have used all %(count)s attempts allowed on this quiz.")
                % {"count": policy.max_attempts}
            )
        version = current_version(quiz)
        option_order = _shuffled_option_order(version)
        try:
            with transaction.atomic():
                return Attempt.objects.create(
                    user=user,
                    placement=placement,
                    quiz_version=version,
                    number=made["count"] + 1,
                    language=language,
                    option_order=option_order,
                    max_score=len(option_order),
                )
        except IntegrityError:
            # Another request (a double click, a second tab) started it first: resume that one.
            return Attempt.objects.get(
                user=user, placement=placement, state=AttemptState.IN_PROGRESS
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
    """An answer recorded: the position of its question, where the feedback page is."""

    position: int


def submit_answer(
    *, user: User, attempt_public_id: UUID, question_id: object, option_id: object
) -> Answered:
    """Record the student's answer to the current question of their attempt.

    Answers are final: once feedback was shown the answer cannot change. The attempt
    finishes, and the grade is refreshed, with the last answer. Raises
    ``Attempt.DoesNotExist`` when the attempt is not the user's.
    """
    question_pk = _parse_id(question_id, _("The answer does not say which question it is for."))
    option_pk = _parse_id(option_id, _("Choose one of the options before submitting."))
    now = timezone.now()
    if connection.vendor == "postgresql":
        answered = _record_next_answer(user, attempt_public_id, question_pk, option_pk, now)
        if answered is not None:
            return answered
    return _record_answer_checked(user, attempt_public_id, question_pk, option_pk, now)


# The next answer as one statement: the attempt is the user's and in progress, the option
# is of that question in the attempt's version, and the question is the next one (the last
# only when the caller finishes the attempt in the same transaction). It locks the attempt
# first, as the checked path does. Two answers racing for the same question meet on
# response_one_per_question. Anything else inserts nothing, and the checked path says
# what is wrong (or, after a race, records the answer afresh). Seconds round half up, in
# both paths.
_NEXT_ANSWER_SQL = """
WITH attempt AS (
    SELECT id, placement_id, quiz_version_id, max_score, started_at
    FROM assessments_attempt
    WHERE public_id = %(attempt)s AND user_id = %(user)s AND state = %(in_progress)s
    FOR UPDATE
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
    RETURNING question_id
)
SELECT chosen.position, chosen.position = attempt.max_score, attempt.id, attempt.placement_id,
    so_far.correct + chosen.is_correct::integer
FROM inserted JOIN chosen USING (question_id), attempt, so_far
"""


def _record_next_answer(
    user: User, attempt_public_id: UUID, question_pk: int, option_pk: int, now: datetime
) -> Answered | None:
    finishing = is_last_question(question_pk)
    parameters: dict[str, Any] = {
        "attempt": attempt_public_id,
        "user": user.pk,
        "in_progress": AttemptState.IN_PROGRESS.value,
        "option": option_pk,
        "question": question_pk,
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
                row = cursor.fetchone()
            if row is None:
                return None
            position, finishes, attempt_id, placement_id, score = row
            if finishes:
                placement = ResourceLink.objects.select_related("quiz").get(pk=placement_id)
                _finish_attempt(attempt_id, user=user, placement=placement, score=score, now=now)
    except IntegrityError:
        return None  # answered a moment ago: the checked path says so
    return Answered(position=position)


@transaction.atomic
def _record_answer_checked(
    user: User, attempt_public_id: UUID, question_pk: int, option_pk: int, now: datetime
) -> Answered:
    attempt = (
        Attempt.objects.select_for_update(of=("self",))
        .select_related("placement__quiz")
        .get(public_id=attempt_public_id, user=user)
    )
    if attempt.is_finished:
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
    if answered + 1 == attempt.max_score:
        score = so_far["correct"] + option.is_correct
        _finish_attempt(attempt.pk, user=user, placement=attempt.placement, score=score, now=now)
    return Answered(position=question.position)


def _finish_attempt(
    attempt_id: int, *, user: User, placement: ResourceLink, score: int, now: datetime
) -> None:
    Attempt.objects.filter(pk=attempt_id).update(
        score=score, state=AttemptState.FINISHED, finished_at=now
    )
    refresh_grade(user=user, placement=placement)


def _mark_counted_attempts(user_id: int, placement: ResourceLink) -> list[tuple[int, int, int]]:
    """Flag the student's last and highest-scoring finished attempts on the placement,
    writing only the rows whose flags change; the finished attempts' (number, score,
    max_score) in order. The student's attempts there are locked first, so a finish and a
    regrade of the same student take turns."""
    rows = Attempt.objects.filter(user_id=user_id, placement=placement).select_for_update()
    finished = sorted(
        row[1:]
        for row in rows.values_list(
            "state", "number", "pk", "score", "max_score", "is_last_finished", "is_highest"
        )
        if row[0] == AttemptState.FINISHED
    )
    if not finished:
        return []
    last = finished[-1][1]
    highest = max(finished, key=lambda row: (row[2], -row[0]))[1]
    changed = [
        pk
        for _number, pk, _score, _maximum, is_last, is_highest in finished
        if is_last != (pk == last) or is_highest != (pk == highest)
    ]
    if changed:
        Attempt.objects.filter(pk__in=changed).update(
            is_last_finished=Case(When(pk=last, then=True), default=False),
            is_highest=Case(When(pk=highest, then=True), default=False),
        )
    return [
        (number, score, maximum)
        for number, _pk, score, maximum, _last, _high in finished
        if score is not None  # a finished attempt has its score
    ]


def _locked_grade(user_id: int, placement: ResourceLink, method: str) -> tuple[Grade, bool]:
    """The student's grade row, locked for this transaction; made (as a placeholder the
    caller fills in) when there is none. A concurrent first grade (a student finishing while
    staff override) waits on the unique index, then takes the row the other one made."""
    grade = Grade.objects.select_for_update().filter(user_id=user_id, placement=placement).first()
    if grade is not None:
        return grade, False
    try:
        with transaction.atomic():
            grade = Grade.objects.create(
                user_id=user_id,
                placement=placement,
                score_given=0,
                score_maximum=0,
                grading_method=method,
                attempt_count=0,
                updated_at=timezone.now(),
            )
        return grade, True
    except IntegrityError:
        return Grade.objects.select_for_update().get(user_id=user_id, placement=placement), False


# Part of the caller's transaction when there is one (no savepoint: nothing here is
# retried on its own); a transaction of its own otherwise.
@transaction.atomic(savepoint=False)
def refresh_grade(*, user: User, placement: ResourceLink) -> Grade | None:
    """Recompute which of the student's finished attempts on the placement count (the last,
    the highest) and their grade there. A changed grade is queued for the LMS gradebook in
    the same transaction."""
    policy = attempt_policy(placement)
    finished = _mark_counted_attempts(user.pk, placement)
    computed = quiz_grade(
        policy.grading_method,
        [(number, Decimal(score) / Decimal(maximum)) for number, score, maximum in finished],
        policy.max_attempts,
    )
    if computed is None:
        return None
    return set_placement_grade(
        user=user,
        placement=placement,
        fraction=computed.fraction,
        score_maximum=placement_score_maximum(placement),
        grading_method=policy.grading_method,
        counted=computed.counted,
        counted_number=computed.counted_number,
    )


def _write_grade(grade: Grade, planned: PlannedGrade) -> bool:
    """Store the computed grade on the locked row; True when its score changed, which queues
    it for the gradebook. An overridden grade keeps its score (only what counted is noted)."""
    bookkeeping = {
        "grading_method": planned.grading_method,
        "attempt_count": planned.counted,
        "counted_number": planned.counted_number,
    }
    fields = [name for name, value in bookkeeping.items() if getattr(grade, name) != value]
    for name in fields:
        setattr(grade, name, bookkeeping[name])
    score = (planned.score_given, planned.score_maximum)
    changed = not grade.is_overridden and (grade.score_given, grade.score_maximum) != score
    if changed:
        grade.score_given, grade.score_maximum = score
        grade.updated_at = timezone.now()
        fields += ["score_given", "score_maximum", "updated_at"]
    if fields:
        grade.save(update_fields=fields)
    if changed:
        record_grade_change(grade)
    return changed


# Part of the caller's transaction when there is one (no savepoint: nothing here is
# retried on its own); a transaction of its own otherwise.
@transaction.atomic(savepoint=False)
def set_placement_grade(
    *,
    user: User,
    placement: ResourceLink,
    fraction: Decimal,
    score_maximum: Decimal,
    grading_method: str,
    counted: int,
    counted_number: int | None = None,
) -> Grade:
    """Record the student's grade on any activity (the quiz, a lab) as a fraction of its
    maximum, rounded by the one rule. A changed grade is queued for the LMS gradebook in the
    same transaction; an overridden one stays as staff set it."""
    planned = PlannedGrade(
        user.pk,
        round_grade(fraction * score_maximum),
        score_maximum,
        grading_method,
        counted,
        counted_number,
    )
    grade, _created = _locked_grade(user.pk, placement, grading_method)
    _write_grade(grade, planned)
    return grade


def _audit(
    grade: Grade,
    *,
    cause: str,
    previous: Decimal | None,
    was_overridden: bool,
    actor: User | None,
    reason: str = "",
) -> GradeChange:
    return GradeChange.objects.create(
        grade=grade,
        placement_id=grade.placement_id,
        user_id=grade.user_id,
        cause=cause,
        previous_score=previous,
        new_score=grade.score_given,
        score_maximum=grade.score_maximum,
        was_overridden=was_overridden,
        is_overridden=grade.is_overridden,
        reason=reason,
        actor=actor,
    )


def _activity_method(placement: ResourceLink) -> str:
    if placement.quiz_id:
        return attempt_policy(placement).grading_method
    from labs.selectors import lab_policy

    return lab_policy(placement).grading_method


@transaction.atomic
def override_grade(
    *,
    placement: ResourceLink,
    user: User,
    score_given: Decimal,
    reason: str,
    actor: User,
    share_reason: bool = False,
) -> GradeOverride:
    """Staff set a student's grade by hand. Recorded with who, when and why (shown to the
    student when ``share_reason``); a changed score goes to the gradebook like any change,
    and later attempts no longer change it."""
    reason = reason.strip()
    if not reason:
        raise InvalidInput(_("An override needs a reason."))
    score_maximum = placement_score_maximum(placement)
    if not Decimal(0) <= score_given <= score_maximum:
        raise InvalidInput(
            _("The score must be between 0 and %(maximum)s.") % {"maximum": score_maximum}
        )
    if round_grade(score_given) != score_given:
        raise InvalidInput(
            _("A grade has at most %(decimals)s decimals.") % {"decimals": GRADE_DECIMALS}
        )
    grade, created = _locked_grade(user.pk, placement, _activity_method(placement))
    previous = None if created else grade.score_given
    was_overridden = grade.is_overridden
    changed = created or (grade.score_given, grade.score_maximum) != (score_given, score_maximum)
    grade.score_given = score_given
    grade.score_maximum = score_maximum
    grade.is_overridden = True
    grade.override_reason = reason
    grade.override_reason_shared = share_reason
    if changed:
        grade.updated_at = timezone.now()
    grade.save()
    override = GradeOverride.objects.create(
        grade=grade,
        previous_score=previous,
        score_given=grade.score_given,
        reason=reason,
        share_reason=share_reason,
        created_by=actor,
    )
    _audit(
        grade,
        cause=ChangeCause.OVERRIDE,
        previous=previous,
        was_overridden=was_overridden,
        actor=actor,
        reason=reason,
    )
    if changed:
        record_grade_change(grade)
    return override


@transaction.atomic
def clear_override(*, placement: ResourceLink, user: User, actor: User, reason: str = "") -> Grade:
    """Staff give the grade back to the rules: it becomes what the student's attempts or
    runs give, and goes to the gradebook if that differs from the override."""
    grade = Grade.objects.select_for_update().filter(user=user, placement=placement).first()
    if grade is None or not grade.is_overridden:
        raise InvalidInput(_("This grade is not overridden."))
    planned = regrade_plan(placement, apply_key=False, user_id=user.pk).planned.get(user.pk)
    if planned is None:
        raise InvalidInput(
            _(
                "This student has nothing graded here yet, so there is no grade to go back "
                "to; change the override instead."
            )
        )
    previous = grade.score_given
    grade.is_overridden = False
    grade.override_reason = ""
    grade.override_reason_shared = False
    grade.save(update_fields=["is_overridden", "override_reason", "override_reason_shared"])
    _write_grade(grade, planned)
    _audit(
        grade,
        cause=ChangeCause.OVERRIDE_CLEARED,
        previous=previous,
        was_overridden=True,
        actor=actor,
        reason=reason.strip(),
    )
    return grade


def _lock_class(placement: ResourceLink) -> None:
    """Lock the placement's attempts or runs, then its grades (the order a finishing attempt
    or run takes them in), so nothing grades a student of the class meanwhile."""
    from labs.models import LabRun

    work = LabRun if placement.lab_id else Attempt
    list(work.objects.select_for_update().filter(placement=placement).values_list("pk"))
    list(Grade.objects.select_for_update().filter(placement=placement).values_list("pk"))


@transaction.atomic
def recompute_placement(
    *,
    placement: ResourceLink,
    actor: User | None,
    cause: str = ChangeCause.REGRADE,
    apply_key: bool = False,
    expected: str | None = None,
) -> Regrade:
    """Recompute every grade of the placement by its rules in force (and a quiz's attempts
    against its current key when ``apply_key``) in one transaction. Only changed grades are
    queued for the gradebook; each change is audited. With ``expected`` (a preview's
    fingerprint) it refuses when what it would do is not what the preview showed."""
    _lock_class(placement)
    plan = regrade_plan(placement, apply_key=apply_key)
    if expected is not None and plan.fingerprint != expected:
        raise PreviewOutdated(
            _("Grades changed since the preview was made; look at the new preview.")
        )
    if plan.marked_correct:
        Response.objects.filter(pk__in=plan.marked_correct).update(is_correct=True)
    if plan.marked_wrong:
        Response.objects.filter(pk__in=plan.marked_wrong).update(is_correct=False)
    for rescore in plan.rescored:
        Attempt.objects.filter(pk=rescore.attempt_id).update(score=rescore.new_score)
    for student in {rescore.user_id for rescore in plan.rescored}:
        _mark_counted_attempts(student, placement)
    changes = {shift.user_id: shift for shift in plan.changes}
    grades = {grade.user_id: grade for grade in Grade.objects.filter(placement=placement)}
    grades_report = []
    for student, planned in plan.planned.items():
        grade, created = grades.get(student), False  # locked above
        if grade is None:
            grade, created = _locked_grade(student, placement, planned.grading_method)
        previous, was_overridden = (None if created else grade.score_given), grade.is_overridden
        if _write_grade(grade, planned):
            _audit(
                grade,
                cause=cause,
                previous=previous,
                was_overridden=was_overridden,
                actor=actor,
            )
            shift = changes.get(student)
            grades_report.append(
                {
                    "user_id": student,
                    "name": shift.name if shift else "",
                    "old_score": None if previous is None else str(round_grade(previous)),
                    "new_score": str(round_grade(grade.score_given)),
                    "score_maximum": str(round_grade(grade.score_maximum)),
                }
            )
    return Regrade.objects.create(
        placement=placement,
        cause=cause,
        created_by=actor,
        attempts_changed=len(plan.rescored),
        grades_changed=len(grades_report),
        report=[
            {
                "attempt": rescore.public_id,
                "user_id": rescore.user_id,
                "number": rescore.number,
                "old_score": rescore.old_score,
                "new_score": rescore.new_score,
            }
            for rescore in plan.rescored
        ],
        grades_report=grades_report,
    )


def regrade_placement(
    *, placement: ResourceLink, actor: User, expected: str | None = None
) -> Regrade:
    """Staff regrade: the attempts against the quiz's current key (stable question and
    option keys), then every grade by the placement's rules in force."""
    return recompute_placement(
        placement=placement,
        actor=actor,
        cause=ChangeCause.REGRADE,
        apply_key=placement.quiz_id is not None,
        expected=expected,
    )


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
    before = (attempt_policy(placement), placement.quiz_id)
    update_placement(
        placement,
        quiz=quiz,
        title=title,
        max_attempts=max_attempts,
        grading_method=grading_method,
    )
    if (attempt_policy(placement), placement.quiz_id) == before:
        return None
    return recompute_placement(placement=placement, actor=actor, cause=ChangeCause.SETTINGS)


@transaction.atomic
def change_quiz_defaults(quiz: Quiz, *, actor: User, **fields: object) -> list[Regrade]:
    """An administrator changes a quiz's default attempt limit or grading method; every
    placement that follows the defaults is regraded at once, as a placement's own change is."""
    placements = list(ResourceLink.objects.filter(quiz=quiz).select_related("quiz"))
    before = {placement.pk: attempt_policy(placement) for placement in placements}
    for name, value in fields.items():
        setattr(quiz, name, value)
    quiz.save()
    regrades = []
    for placement in placements:
        placement.quiz = quiz
        if attempt_policy(placement) != before[placement.pk]:
            regrades.append(
                recompute_placement(placement=placement, actor=actor, cause=ChangeCause.SETTINGS)
            )
    return regrades
