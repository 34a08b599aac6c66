"""Reads of grade-sync state, for the instructor's view and the API."""

from __future__ import annotations

from django.db.models import Count, OuterRef, Subquery

from lti.models import ResourceLink

from .models import GradeSync, SyncState


def latest_syncs(placement: ResourceLink) -> dict[int, GradeSync]:
    """The newest outbox row per student of the placement, keyed by user id (one query)."""
    newest = (
        GradeSync.objects.filter(placement=placement, user_id=OuterRef("user_id"))
        .order_by("-created_at", "-pk")
        .values("pk")[:1]
    )
    rows = GradeSync.objects.filter(placement=placement, pk=Subquery(newest))
    return {row.user_id: row for row in rows}


def backlog() -> dict[str, int]:
    counts = dict(
        GradeSync.objects.values_list("state").annotate(n=Count("pk")).values_list("state", "n")
    )
    return {state: counts.get(state, 0) for state in SyncState.values}
