"""Reads about who may see what: a user reaches a placement only through a membership
in its course."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from .models import Membership, ResourceLink


def placement_for_member(*, user: AbstractBaseUser, placement_id: int) -> ResourceLink | None:
    """The placement if the user is a member of its course, else None (no leak of which)."""
    if not user.is_authenticated:
        return None
    return (
        ResourceLink.objects.select_related("context", "quiz", "quiz__current_version")
        .filter(pk=placement_id, context__memberships__user=user)
        .first()
    )


def membership_for(*, user: AbstractBaseUser, placement: ResourceLink) -> Membership | None:
    return Membership.objects.filter(user=user, context_id=placement.context_id).first()
