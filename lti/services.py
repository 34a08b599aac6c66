"""Writes of the LTI side. For now: the demo course that stands in for an LMS launch
in the local run (``DEMO_MODE``), so a newcomer can take the quiz without an LMS."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from assessments.models import Quiz

from .models import Context, Membership, ResourceLink, Role

DEMO_CONTEXT_ID = "demo-course"
DEMO_RESOURCE_LINK_ID = "demo-gradient-checkpointing-quiz"
DEMO_QUIZ_SLUG = "gradient-checkpointing"


class DemoUnavailable(Exception):
    pass


@transaction.atomic
def ensure_demo_placement() -> ResourceLink:
    quiz = Quiz.objects.filter(slug=DEMO_QUIZ_SLUG, current_version__isnull=False).first()
    if quiz is None:
        raise DemoUnavailable(
            "The demo quiz is not loaded yet. Run `python manage.py load_quiz` first."
        )
    context, _ = Context.objects.get_or_create(
        context_id=DEMO_CONTEXT_ID,
        defaults={"title": "Demo course", "label": "DEMO", "is_demo": True},
    )
    placement, _ = ResourceLink.objects.get_or_create(
        context=context,
        resource_link_id=DEMO_RESOURCE_LINK_ID,
        defaults={"title": "Gradient checkpointing quiz", "quiz": quiz},
    )
    return placement


@transaction.atomic
def enrol_demo_learner() -> tuple[AbstractBaseUser, ResourceLink]:
    """A fresh demo student enrolled as a learner in the demo course."""
    placement = ensure_demo_placement()
    user = get_user_model().objects.create_user(
        username=f"demo-{secrets.token_hex(6)}", first_name="Demo", last_name="Student"
    )
    Membership.objects.create(
        context=placement.context, user=user, role=Role.LEARNER, roles=["Learner"]
    )
    return user, placement
