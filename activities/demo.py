"""The demo course of the local run: its placements and its members (no LMS)."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from lti.demo_names import one_name
from lti.models import Membership, ResourceLink, Role
from lti.services import DEMO_CONTEXT_ID, demo_context

from .services import place_activity

# The demo course's placements: resource link id, title, the activity it places.
DEMO_PLACEMENTS = {
    "quiz": ("demo-gradient-checkpointing-quiz", "Gradient checkpointing quiz"),
    "lab": ("demo-gradient-checkpointing-lab", "Checkpointing lab: a chain under a memory budget"),
}


@transaction.atomic
def ensure_demo_placement(activity: str = "quiz") -> ResourceLink:
    """The demo course's placement of settings.DEMO_ACTIVITIES[activity] ("quiz" or "lab").
    Raises ActivityNotLoaded when that activity is not loaded."""
    resource_link_id, title = DEMO_PLACEMENTS[activity]
    context = demo_context()
    placement = ResourceLink.objects.filter(
        context=context, resource_link_id=resource_link_id
    ).first()
    if placement is None:
        placement = ResourceLink(context=context, resource_link_id=resource_link_id, title=title)
        place_activity(placement, settings.DEMO_ACTIVITIES[activity])
    return placement


@transaction.atomic
def enrol_demo_member(role: Role = Role.LEARNER, language: str = "en") -> Membership:
    """A fresh demo user, named in the visitor's language, enrolled in the demo course (as a
    student or an instructor). The demo course's quiz is placed first."""
    context = ensure_demo_placement().context
    first_name, last_name = one_name(language)
    user = get_user_model().objects.create_user(
        username=f"demo-{secrets.token_hex(6)}", first_name=first_name, last_name=last_name
    )
    return Membership.objects.create(
        context=context,
        user=user,
        role=role,
        roles=["Instructor" if role == Role.STAFF else "Learner"],
    )


def demo_member(role: Role, language: str, returning_user_id: str | None = None) -> Membership:
    """The demo course's member for a browser: the one it was before (its signed demo
    cookie names the user) while that user is still a demo member in the same role, so an
    attempt can be resumed; otherwise a new one."""
    if returning_user_id is None or not returning_user_id.isdecimal():
        return enrol_demo_member(role, language)
    user_id = int(returning_user_id)
    returning = (
        Membership.objects.select_related("user")
        .filter(
            context__is_demo=True,
            context__context_id=DEMO_CONTEXT_ID,
            user_id=user_id,
            role=role,
            is_active=True,
            user__is_active=True,
            user__is_staff=False,
            user__is_superuser=False,
            user__username__startswith="demo-",
        )
        .first()
    )
    return returning or enrol_demo_member(role, language)
