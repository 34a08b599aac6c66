"""Reads of grade-sync state, for the instructor's view and the API."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from lti.models import ResourceLink

from .models import GradeSync


def newest_syncs(placement: ResourceLink) -> QuerySet[GradeSync]:
    """The newest outbox row of each student of the placement."""
    newest = (
        GradeSync.objects.filter(placement=placement, user_id=OuterRef("user_id"))
        .order_by("-created_at", "-pk")
        .values("pk")[:1]
    )
    return GradeSync.objects.filter(placement=placement, pk=Subquery(newest))
