"""CSV exports, streamed row by row from server-side iteration: a course of any size costs
the same memory."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator

from django.db.models import OuterRef, QuerySet, Subquery

from activities.grading import plain_grade
from activities.models import Grade
from assessments.models import Attempt, Response
from labs.models import LabRun
from lti.models import Membership, ResourceLink

CHUNK = 2000
FORMULA_STARTS = frozenset("=+-@\t\r")


class _Echo:
    def write(self, value: str) -> str:
        return value


def _student(prefix: str) -> tuple[str, str]:
    """The student's name as the LMS sent it, else their username: two fields, one column."""
    return (f"{prefix}user__lti_user__name", f"{prefix}user__username")


def _with_course_role(rows: QuerySet, placement: ResourceLink, user_field: str) -> QuerySet:
    """Each row with its user's role in the course (``course_role``): the dashboards leave
    the staff's own work out, the files keep every row and say whose it is."""
    membership = Membership.objects.filter(
        context_id=placement.context_id, user_id=OuterRef(user_field)
    )
    return rows.annotate(course_role=Subquery(membership.values("role")[:1]))


# Per export: the rows of a placement, and (column, field or pair of fields) in order.
Columns = list[tuple[str, str | tuple[str, str]]]
EXPORTS: dict[str, tuple[Callable[[ResourceLink], QuerySet], Columns]] = {
    "attempts": (
        lambda placement: _with_course_role(
            Attempt.objects.filter(placement=placement), placement, "user_id"
        ).order_by("user_id", "number"),
        [
            ("attempt", "public_id"), ("user_id", "user_id"), ("student", _student("")),
            ("role", "course_role"),
            ("number", "number"), ("state", "state"), ("score", "score"),
            ("max_score", "max_score"), ("language", "language"),
            ("started_at", "started_at"), ("finished_at", "finished_at"),
        ],
    ),
    "responses": (
        lambda placement: _with_course_role(
            Response.objects.filter(attempt__placement=placement), placement, "attempt__user_id"
        ).order_by("attempt_id", "question__position"),
        [
            ("attempt", "attempt__public_id"), ("user_id", "attempt__user_id"),
            ("student", _student("attempt__")), ("role", "course_role"),
            ("question", "question__key"),
            ("position", "question__position"), ("option", "option__key"),
            ("is_correct", "is_correct"), ("answered_at", "answered_at"),
            ("seconds_spent", "seconds_spent"),
        ],
    ),
    "grades": (
        lambda placement: _with_course_role(
            Grade.objects.filter(placement=placement), placement, "user_id"
        ).order_by("user_id"),
        [
            ("user_id", "user_id"), ("student", _student("")), ("role", "course_role"),
            ("score_given", "score_given"),
            ("score_maximum", "score_maximum"), ("grading_method", "grading_method"),
            ("attempts", "attempt_count"), ("counted_number", "counted_number"),
            ("is_overridden", "is_overridden"), ("override_reason", "override_reason"),
            ("override_reason_shared", "override_reason_shared"), ("updated_at", "updated_at"),
        ],
    ),
    "runs": (
        lambda placement: _with_course_role(
            LabRun.objects.filter(placement=placement), placement, "user_id"
        ).order_by("submitted_at"),
        [
            ("run", "public_id"), ("user_id", "user_id"), ("student", _student("")),
            ("role", "course_role"),
            ("number", "number"), ("status", "status"), ("submitted_at", "submitted_at"),
            ("is_late", "is_late"), ("started_at", "started_at"),
            ("finished_at", "finished_at"), ("device", "device"), ("score", "score"),
            ("score_percent", "score"), ("peak_activation_bytes", "result__peak_activation_bytes"),
            ("recompute_flops", "result__recompute_flops"), ("error", "error"),
        ],
    ),
}  # fmt: skip

# Columns written by the grades' one rounding rule, so the file holds the number the pages
# show and the LMS received (two decimals, a decimal point).
FORMATTED: dict[str, Callable[[object], object]] = {
    "score_given": plain_grade,
    "score_maximum": plain_grade,
    "score_percent": lambda score: plain_grade(score * 100) if score is not None else "",
}


def stream_csv(kind: str, placement: ResourceLink) -> Iterator[str]:
    rows_of, columns = EXPORTS[kind]
    fields = [name for _title, source in columns for name in _as_tuple(source)]
    writer = csv.writer(_Echo())
    yield "\ufeff"  # a BOM, so spreadsheet programs read the file as UTF-8
    yield writer.writerow([title for title, _source in columns])
    for row in rows_of(placement).values_list(*fields).iterator(chunk_size=CHUNK):
        values = iter(row)
        out = []
        for title, source in columns:
            if isinstance(source, tuple):
                name, username = next(values), next(values)
                out.append(name or username)
            else:
                value = next(values)
                formatted = FORMATTED.get(title)
                if formatted is not None:
                    value = formatted(value)
                out.append("" if value is None else value)
        yield writer.writerow([_inert(value) for value in out])


def _inert(value: object) -> object:
    """Text a spreadsheet would run as a formula (a name or an error message starting with
    = + - @) gets a leading apostrophe."""
    if isinstance(value, str) and value[:1] in FORMULA_STARTS:
        return "'" + value
    return value


def _as_tuple(source: str | tuple[str, str]) -> tuple[str, ...]:
    return source if isinstance(source, tuple) else (source,)
