"""Writes of the course side: what a resource link places, its attempt policy, and every
activity kind's grades (set, overridden, recomputed, audited). A changed grade is announced
on ``activities.signals.grade_changed`` in the transaction that changed it (grade sync
queues it for the LMS)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from lti.models import ResourceLink
from ops.rows import update_row

from . import registry
from .errors import ActivityNotLoaded, InvalidInput, PreviewOutdated
from .grading import GRADE_DECIMALS, round_grade
from .models import (
    ChangeCause,
    Grade,
    GradeChange,
    GradeOverride,
    GradingMethod,
    Placement,
    Regrade,
)
from .selectors import PlannedGrade, grade_of, placement_score_maximum, regrade_plan
from .signals import grade_changed

# Placed by deep linking in the content item's custom parameters; come back in launches.
CUSTOM_ACTIVITY = "activity"
CUSTOM_MAX_ATTEMPTS = "max_attempts"
CUSTOM_GRADING_METHOD = "grading_method"


def attempt_policy_from_custom(custom: dict[str, Any]) -> dict[str, Any]:
    """The attempt limit and grading method deep linking placed, where they are valid."""
    found: dict[str, Any] = {}
    attempts = str(custom.get(CUSTOM_MAX_ATTEMPTS, ""))
    if re.fullmatch(r"[0-9]{1,3}", attempts) and int(attempts) <= 100:
        found["max_attempts"] = int(attempts)
    if custom.get(CUSTOM_GRADING_METHOD) in GradingMethod.values:
        found["grading_method"] = custom[CUSTOM_GRADING_METHOD]
    return found


def _find(activity: str) -> tuple[registry.ActivityKind, Any] | None:
    """The kind and the loaded activity named ``kind:slug``, or None."""
    key, _sep, slug = activity.partition(":")
    try:
        kind = registry.kind(key)
    except registry.UnknownActivity:
        return None
    found = kind.find(slug)
    return None if found is None else (kind, found)


@transaction.atomic
def place_activity(
    link: ResourceLink, activity: str, custom: dict[str, Any] | None = None
) -> registry.ActivityKind:
    """Point a new resource link at ``activity`` (``kind:slug``), with the attempt policy
    the custom parameters carry, and save it. Raises ActivityNotLoaded when there is no
    such activity (its content is not loaded)."""
    custom = custom or {}
    found = _find(activity)
    if found is None:
        key = activity.partition(":")[0]
        known = {kind.key: kind.load_command for kind in registry.kinds()}
        raise ActivityNotLoaded(known.get(key, "load_quiz"))
    kind, placed = found
    link.save()
    Placement.objects.create(
        resource_link=link, kind=kind.key, **attempt_policy_from_custom(custom)
    )
    kind.attach(link, placed)
    kind.placed_from_launch(link, custom)
    return kind


def place_from_launch(link: ResourceLink, custom: dict[str, Any]) -> registry.ActivityKind:
    """A new resource link's activity, from the custom parameters deep linking placed; a
    link placed by hand in the LMS (no such parameter, or an activity no longer here) gets
    the default activity, settings.DEFAULT_ACTIVITY."""
    activity = str(custom.get(CUSTOM_ACTIVITY) or "")
    if _find(activity) is None:
        activity = settings.DEFAULT_ACTIVITY
    return place_activity(link, activity, custom)


@transaction.atomic
def change_activity_defaults(
    kind: registry.ActivityKind, activity: Any, *, actor: User | None, **fields: object
) -> list[Regrade]:
    """An activity's fields change (an administrator's edit, an edited content file loaded);
    every placement whose rules in force that changes (the default attempt limit or grading
    method) is regraded at once, in the same transaction, as a placement's own change is
    (decisions §28)."""
    placements = ResourceLink.objects.filter(**{kind.activity_relation: activity})
    placements = placements.select_related("placement", kind.activity_relation)
    before = {link.pk: kind.rules(link) for link in placements}
    for name, value in fields.items():
        setattr(activity, name, value)
    activity.save()
    return [
        recompute_placement(placement=link, actor=actor, cause=ChangeCause.SETTINGS)
        for link in placements.all()  # read again, with the saved defaults
        if link.pk in before and kind.rules(link) != before[link.pk]
    ]


@transaction.atomic
def update_placement(
    placement: ResourceLink, *, title: str, max_attempts: int, grading_method: str
) -> ResourceLink:
    """An instructor changes the placement's title or its attempt policy (the caller
    recomputes the grades in the same transaction)."""
    placement.title = title
    placement.save(update_fields=["title"])
    policy = placement.placement
    policy.max_attempts = max_attempts
    policy.grading_method = grading_method
    policy.save(update_fields=["max_attempts", "grading_method"])
    return placement


def _locked_grade(user_id: int, placement_id: int, method: str) -> tuple[Grade, bool]:
    """The student's grade row, locked for this transaction; made (as a placeholder the
    caller fills in) when there is none. A concurrent first grade (a student finishing while
    staff override) waits on the unique index, then takes the row the other one made."""
    grade = grade_of(user_id, placement_id, lock=True)
    if grade is not None:
        return grade, False
    try:
        with transaction.atomic():
            grade = Grade.objects.create(
                user_id=user_id,
                placement_id=placement_id,
                score_given=0,
                score_maximum=0,
                grading_method=method,
                attempt_count=0,
                updated_at=timezone.now(),
            )
        return grade, True
    except IntegrityError:
        grade = grade_of(user_id, placement_id, lock=True)
        if grade is None:  # the row that won was deleted in between
            missing = f"grade of user {user_id} on placement {placement_id}"
            raise Grade.DoesNotExist(missing) from None
        return grade, False


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
        update_row(Grade, grade.pk, {name: getattr(grade, name) for name in fields})
    if changed:
        grade_changed.send(Grade, grade=grade)
    return changed


# Part of the caller's transaction when there is one (no savepoint: nothing here is
# retried on its own); a transaction of its own otherwise.
@transaction.atomic(savepoint=False)
def set_placement_grade(
    *,
    user: User,
    placement_id: int,
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
    grade, _created = _locked_grade(user.pk, placement_id, grading_method)
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
    return registry.kind_of(placement).grading_method(placement)


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
    grade, created = _locked_grade(user.pk, placement.pk, _activity_method(placement))
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
        grade_changed.send(Grade, grade=grade)
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
    registry.kind_of(placement).lock_work(placement)
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
    registry.kind_of(placement).apply_plan(placement, plan)
    changes = {shift.user_id: shift for shift in plan.changes}
    grades = {grade.user_id: grade for grade in Grade.objects.filter(placement=placement)}
    grades_report = []
    for student, planned in plan.planned.items():
        grade, created = grades.get(student), False  # locked above
        if grade is None:
            grade, created = _locked_grade(student, placement.pk, planned.grading_method)
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
        apply_key=registry.kind_of(placement).regrade_applies_key,
        expected=expected,
    )
