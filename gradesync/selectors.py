"""Reads of grade-sync state, for the instructor's view and the API."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import OuterRef, QuerySet, Subquery

from assessments.selectors import GradeRow, placement_grades
from lti.models import ResourceLink

from .models import GradeSync
from .services import unsyncable_reason


@dataclass(frozen=True)
class GradebookRow:
    grade: GradeRow
    sync: GradeSync | None


@dataclass(frozen=True)
class Gradebook:
    rows: list[GradebookRow]
    unsyncable_reason: str | None


def gradebook(placement: ResourceLink) -> Gradebook:
    """Each student's grade with the state of its delivery to the LMS."""
    syncs = latest_syncs(placement)
    return Gradebook(
        rows=[
            GradebookRow(grade=row, sync=syncs.get(row.user_id))
            for row in placement_grades(placement)
        ],
        unsyncable_reason=unsyncable_reason(placement),
    )


def newest_syncs(placement: ResourceLink) -> QuerySet[GradeSync]:
    """The newest outbox row of each student of the placement."""
    newest = (
        GradeSync.objects.filter(placement=placement, user_id=OuterRef("user_id"))
        .order_by("-created_at", "-pk")
        .values("pk")[:1]
    )
    return GradeSync.objects.filter(placement=placement, pk=Subquery(newest))


def latest_syncs(placement: ResourceLink) -> dict[int, GradeSync]:
    """The newest outbox row per student of the placement, keyed by user id (one query)."""
    return {row.user_id: row for row in newest_syncs(placement)}
