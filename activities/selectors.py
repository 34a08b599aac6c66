"""Reads of the course side: every activity kind's grades, their recomputation plan (what a
regrade or a change of the rules would do), students' names, and the audit of changes."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import QuerySet, Value
from django.db.models.functions import Coalesce, Concat, NullIf, Trim

from lti.models import ResourceLink
from ops.rows import Part, instances, select_list

from . import registry
from .models import Grade, GradeChange, Placement


def for_update(sql: str) -> str:
    """``sql`` locking the rows it reads, where the database has row locks (SQLite has none:
    its writes already take turns)."""
    return f"{sql} FOR UPDATE" if connection.features.has_select_for_update else sql


# A grade's columns in a written-out statement (ops.rows): as the ORM converts them, where
# Grade.objects.raw spent more building the grade than its statement cost (decision 75).
GRADE = Part(Grade, "g")
_GRADE_SQL = (
    f"SELECT {select_list([GRADE])} FROM {GRADE.table}"
    f" WHERE {GRADE.column('user')} = %s AND {GRADE.column('placement')} = %s"
)


def grade_from_row(values: Sequence[Any]) -> Grade | None:
    """The grade whose columns a statement read as ``select_list([GRADE])`` lists them; None
    where its outer join found none."""
    return instances(values, [GRADE])[0]  # type: ignore[return-value]


_PLACED_KIND_SQL = (
    f"SELECT {Placement._meta.get_field('kind').column} FROM {Placement._meta.db_table}"
    f" WHERE {Placement._meta.get_field('resource_link').column} = %s"
)


# A placement's kind is written when its link is placed and never changes (nothing updates
# it; the admin shows it read-only), and a link's id is never reused: each process keeps the
# kinds it has read, up to this many links.
_PLACED_KINDS: dict[int, str] = {}
PLACED_KINDS_KEPT = 50_000


def placed_kind(link_id: int) -> str | None:
    """The registry key of the activity kind placed at the resource link, or None. Written
    out for a launch's landing, whose link comes without its placement: the relation's read
    cost the ORM several times the statement (decision 58); read once per link and process
    (decision 62)."""
    kind = _PLACED_KINDS.get(link_id)
    if kind is not None:
        return kind
    with connection.cursor() as cursor:
        cursor.execute(_PLACED_KIND_SQL, [link_id])
        row = cursor.fetchone()
    if row is None:
        return None
    if len(_PLACED_KINDS) >= PLACED_KINDS_KEPT:
        _PLACED_KINDS.clear()
    _PLACED_KINDS[link_id] = row[0]
    return row[0]


def grade_of(user_id: int, placement_id: int, *, lock: bool = False) -> Grade | None:
    """The student's grade on the placement (locked for the caller's transaction with
    ``lock``). Written out: the ORM took several times the statement's cost to build it, on
    the pages and the finishing answer that read it (decision 49)."""
    sql = for_update(_GRADE_SQL) if lock else _GRADE_SQL
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id, placement_id])
        row = cursor.fetchone()
    return None if row is None else grade_from_row(row)


def activity_title(placement: ResourceLink, language: str) -> str:
    """The placed activity's own title in the reader's language, for every role. The LMS's
    link title is typed once, in one language, so pages do not use it as the heading."""
    return registry.title(placement, language)


def placement_score_maximum(placement: ResourceLink) -> Decimal:
    """The most a student can score on the placement's activity (the gradebook's maximum)."""
    return registry.score_maximum(placement)


@dataclass(frozen=True)
class PlannedGrade:
    """A student's grade by the placement's rules in force (and, for a regrade, the current
    key), rounded by the one rule."""

    user_id: int
    score_given: Decimal
    score_maximum: Decimal
    grading_method: str
    counted: int
    counted_number: int | None


@dataclass(frozen=True)
class AttemptRescore:
    attempt_id: int
    public_id: str
    user_id: int
    number: int
    old_score: int
    new_score: int


@dataclass(frozen=True)
class GradeShift:
    """A grade the recomputation moves; an overridden one stays as staff set it."""

    user_id: int
    name: str
    old_score: Decimal | None
    new_score: Decimal
    score_maximum: Decimal
    overridden: bool


@dataclass(frozen=True)
class RegradePlan:
    """What recomputing the placement's grades would change. A regrade applies exactly this
    plan: it computes it again under its locks and refuses when it differs from the plan a
    preview showed (the fingerprint)."""

    planned: dict[int, PlannedGrade]
    rescored: list[AttemptRescore]
    shifts: list[GradeShift]
    marked_correct: list[int]
    marked_wrong: list[int]

    @property
    def changes(self) -> list[GradeShift]:
        return [shift for shift in self.shifts if not shift.overridden]

    @property
    def kept_overrides(self) -> list[GradeShift]:
        return [shift for shift in self.shifts if shift.overridden]

    @property
    def fingerprint(self) -> str:
        seen = {
            "attempts": [(r.attempt_id, r.old_score, r.new_score) for r in self.rescored],
            "grades": [
                (s.user_id, str(s.old_score), str(s.new_score), str(s.score_maximum), s.overridden)
                for s in self.shifts
            ],
        }
        return hashlib.sha256(json.dumps(seen, sort_keys=True).encode()).hexdigest()[:32]


def regrade_plan(
    placement: ResourceLink, *, apply_key: bool = True, user_id: int | None = None
) -> RegradePlan:
    """Every student's grade on the placement by its rules in force (a quiz's attempts
    against the current key when ``apply_key``), and what that would change."""
    planned, rescored, now_right, now_wrong = registry.kind_of(placement).plan_grades(
        placement, apply_key, user_id
    )
    current = {
        row[0]: row[1:]
        for row in Grade.objects.filter(placement=placement).values_list(
            "user_id", "score_given", "score_maximum", "is_overridden"
        )
    }
    moved = []
    for student, plan in planned.items():
        old_score, old_maximum, overridden = current.get(student, (None, None, False))
        if (old_score, old_maximum) != (plan.score_given, plan.score_maximum):
            moved.append((student, old_score, plan, overridden))
    names = student_names([student for student, *_rest in moved])
    shifts = [
        GradeShift(student, names.get(student, ""), old, plan.score_given, plan.score_maximum, kept)
        for student, old, plan, kept in sorted(moved, key=lambda row: names.get(row[0], ""))
    ]
    return RegradePlan(planned, rescored, shifts, now_right, now_wrong)


def student_name_expression() -> Coalesce:
    """A user's name as the LMS sent it, else their full name, else the username (SQL)."""
    full = Trim(Concat("first_name", Value(" "), "last_name"))
    return Coalesce(NullIf("lti_user__name", Value("")), NullIf(full, Value("")), "username")


def student_names(user_ids: list[int]) -> dict[int, str]:
    users = get_user_model().objects.filter(pk__in=user_ids)
    return dict(users.annotate(shown=student_name_expression()).values_list("pk", "shown"))


@dataclass(frozen=True)
class Try:
    """One attempt or run of a student, as the grades page lists it."""

    number: int
    state: str
    score: Decimal | None
    maximum: Decimal | None
    is_late: bool = False


def course_student(placement: ResourceLink, user_id: int) -> User | None:
    """A member of the placement's course (or anyone graded there), else None."""
    users = get_user_model().objects.filter(pk=user_id)
    return (
        users.filter(lti_memberships__context_id=placement.context_id).first()
        or users.filter(activity_grades__placement=placement).first()
    )


def grade_changes(placement: ResourceLink, limit: int = 50) -> QuerySet[GradeChange]:
    """The placement's latest audited grade changes, newest first."""
    return (
        GradeChange.objects.filter(placement=placement)
        .select_related("user__lti_user", "actor__lti_user")
        .order_by("-created_at", "-pk")[:limit]
    )
