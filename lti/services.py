"""Writes of the LTI side: provisioning from launches, placements, the demo course."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import models, transaction

from assessments.models import GradingMethod, Quiz

from . import claims as c
from .demo_names import one_name
from .launch import LaunchMessage
from .models import Context, LtiUser, Membership, Registration, ResourceLink, Role
from .roles import course_role

DEMO_CONTEXT_ID = "demo-course"
DEMO_RESOURCE_LINK_ID = "demo-gradient-checkpointing-quiz"
DEMO_LAB_RESOURCE_LINK_ID = "demo-gradient-checkpointing-lab"
DEFAULT_QUIZ_SLUG = "gradient-checkpointing"
DEFAULT_LAB_SLUG = "chain-under-budget"
# Placed by deep linking in the content item's custom parameters; come back in launches.
CUSTOM_ACTIVITY = "activity"
CUSTOM_MAX_ATTEMPTS = "max_attempts"
CUSTOM_GRADING_METHOD = "grading_method"
CUSTOM_LATE_POLICY = "late_policy"
CUSTOM_LATE_PENALTY = "late_penalty_percent"
NO_CONTEXT_ID = "_deployment_"


class QuizNotLoaded(Exception):
    """The seed quiz has not been loaded (`manage.py load_quiz`)."""


@dataclass(frozen=True)
class LaunchResult:
    user: User
    membership: Membership
    placement: ResourceLink | None


def _default_quiz() -> Quiz:
    quiz = Quiz.objects.filter(slug=DEFAULT_QUIZ_SLUG, current_version__isnull=False).first()
    if quiz is None:
        raise QuizNotLoaded("The quiz is not loaded yet. Run `python manage.py load_quiz`.")
    return quiz


def _new_lti_user(registration: Registration, sub: str) -> LtiUser:
    """A platform user (issuer + sub) and the Django user behind it; no password."""
    digest = hashlib.sha256(f"{registration.pk}:{sub}".encode()).hexdigest()
    user = get_user_model().objects.create_user(username=f"lti-{digest[:24]}")
    return LtiUser(registration=registration, sub=sub, user=user)


def _text(value: object, limit: int) -> str:
    """A claim's value as text, or empty when the platform sent something that is not one."""
    return value.strip()[:limit] if isinstance(value, str) else ""


def _provision_user(message: LaunchMessage) -> User:
    claims = message.claims
    lti_user = (
        LtiUser.objects.select_related("user")
        .filter(registration=message.registration, sub=message.sub)
        .first()
    )
    if lti_user is None:
        lti_user = _new_lti_user(message.registration, message.sub)
    user = lti_user.user
    # Personal data only when the platform sends it; an absent claim changes nothing.
    given, family = _text(claims.get("given_name"), 150), _text(claims.get("family_name"), 150)
    name = _text(claims.get("name"), 255) or " ".join(part for part in (given, family) if part)
    email = _text(claims.get("email"), 254)
    user_fields: dict[str, str] = {}
    lti_fields: dict[str, str] = {"locale": message.locale[:35]}
    if name:
        lti_fields["name"] = name
        user_fields.update(first_name=given or name[:150], last_name=family)
    if email:
        lti_fields["email"] = user_fields["email"] = email
    # A repeat launch usually changes nothing: write only what did (launches are hot).
    _update_fields(user, user_fields)
    if lti_user.pk is None:
        for field_name, value in lti_fields.items():
            setattr(lti_user, field_name, value)
        lti_user.save()
    else:
        _update_fields(lti_user, lti_fields)
    return user


def _update_fields(instance: models.Model, values: dict) -> None:
    """Set and save only the fields whose values differ (a launch repeats what it sent)."""
    changed = [name for name, value in values.items() if getattr(instance, name) != value]
    for name in changed:
        setattr(instance, name, values[name])
    if changed:
        if any(field.name == "updated_at" for field in instance._meta.fields):
            changed.append("updated_at")  # auto_now fields change only when named
        instance.save(update_fields=changed)


def _context(message: LaunchMessage) -> Context:
    claim = message.claim(c.CONTEXT)
    context, _ = Context.objects.get_or_create(
        deployment=message.deployment, context_id=str(claim.get("id") or NO_CONTEXT_ID)
    )
    updates = {
        "title": _text(claim.get("title"), 255),
        "label": _text(claim.get("label"), 255),
        "nrps_url": _text(message.claim(c.NRPS).get("context_memberships_url"), 500),
    }
    _update_fields(context, {name: value for name, value in updates.items() if value})
    return context


def placement_settings_from_custom(custom: dict) -> dict:
    """Quiz and attempt policy from the custom parameters deep linking placed."""
    found: dict = {}
    activity = str(custom.get(CUSTOM_ACTIVITY) or "")
    if activity.startswith("quiz:"):
        quiz = Quiz.objects.filter(slug=activity[5:], current_version__isnull=False).first()
        if quiz is not None:
            found["quiz"] = quiz
    elif activity.startswith("lab:"):
        from labs.models import Lab

        lab = Lab.objects.filter(slug=activity[4:]).first()
        if lab is not None:
            found["lab"] = lab
    attempts = str(custom.get(CUSTOM_MAX_ATTEMPTS, ""))
    if re.fullmatch(r"[0-9]{1,3}", attempts) and int(attempts) <= 100:
        found["max_attempts"] = int(attempts)
    if custom.get(CUSTOM_GRADING_METHOD) in GradingMethod.values:
        found["grading_method"] = custom[CUSTOM_GRADING_METHOD]
    return found


def _ags(message: LaunchMessage) -> dict:
    """What the launch's AGS claim grants; fields absent from the claim are left alone."""
    claim = message.claim(c.AGS_ENDPOINT)
    found: dict[str, str | list[str]] = {}
    if _text(claim.get("lineitem"), 500):
        found["lineitem_url"] = _text(claim["lineitem"], 500)
    if _text(claim.get("lineitems"), 500):
        found["ags_lineitems_url"] = _text(claim["lineitems"], 500)
    if isinstance(claim.get("scope"), list):
        found["ags_scopes"] = [scope for scope in claim["scope"] if isinstance(scope, str)]
    return found


def _placement(message: LaunchMessage, context: Context) -> ResourceLink:
    link = message.claim(c.RESOURCE_LINK)
    ags = _ags(message)
    placement = ResourceLink.objects.filter(context=context, resource_link_id=link["id"]).first()
    if placement is None:
        custom = message.claim(c.CUSTOM)
        settings_ = placement_settings_from_custom(custom)
        if "lab" not in settings_:
            settings_.setdefault("quiz", _default_quiz())
        placement = ResourceLink.objects.create(
            context=context,
            resource_link_id=str(link["id"]),
            title=_text(link.get("title"), 255),
            **ags,
            **settings_,
        )
        if placement.lab_id:
            from labs.services import schedule_from_custom

            schedule_from_custom(placement, custom)
        return placement
    _update_fields(placement, ags)
    return placement


@transaction.atomic
def record_launch(message: LaunchMessage) -> LaunchResult:
    """Provision the user, course, membership and (for resource links) the placement."""
    user = _provision_user(message)
    context = _context(message)
    wanted = {
        "role": course_role(message.roles),
        "roles": message.roles,
        "is_active": True,
        "has_launched": True,
    }
    membership, created = Membership.objects.get_or_create(
        context=context, user=user, defaults=wanted
    )
    if not created:
        _update_fields(membership, wanted)
    placement = None if message.is_deep_linking else _placement(message, context)
    return LaunchResult(user=user, membership=membership, placement=placement)


@transaction.atomic
def update_placement(
    placement: ResourceLink, *, quiz: Quiz, title: str, max_attempts: int, grading_method: str
) -> ResourceLink:
    """An instructor re-points the placement or changes its attempt policy. Attempts already
    made keep their quiz version; assessments.services.change_quiz_settings calls this and
    recomputes every grade in the same transaction."""
    placement.quiz = quiz
    placement.title = title
    placement.max_attempts = max_attempts
    placement.grading_method = grading_method
    placement.save(update_fields=["quiz", "title", "max_attempts", "grading_method"])
    return placement


def _demo_context() -> Context:
    context, _ = Context.objects.get_or_create(
        deployment=None,
        context_id=DEMO_CONTEXT_ID,
        defaults={"title": "Demo course", "label": "DEMO", "is_demo": True},
    )
    return context


@transaction.atomic
def ensure_demo_placement(activity: str = "quiz") -> ResourceLink:
    """The demo course's quiz placement, or its lab placement (``activity="lab"``)."""
    context = _demo_context()
    if activity == "lab":
        from labs.models import Lab

        lab = Lab.objects.filter(slug=DEFAULT_LAB_SLUG).first()
        if lab is None:
            raise QuizNotLoaded("The labs are not loaded yet. Run `python manage.py load_labs`.")
        placement, _ = ResourceLink.objects.get_or_create(
            context=context,
            resource_link_id=DEMO_LAB_RESOURCE_LINK_ID,
            defaults={"title": "Checkpointing lab: a chain under a memory budget", "lab": lab},
        )
        return placement
    placement, _ = ResourceLink.objects.get_or_create(
        context=context,
        resource_link_id=DEMO_RESOURCE_LINK_ID,
        defaults={"title": "Gradient checkpointing quiz", "quiz": _default_quiz()},
    )
    return placement


@transaction.atomic
def enrol_demo_member(role: Role = Role.LEARNER, language: str = "en") -> Membership:
    """A fresh demo user, named in the visitor's language, enrolled in the demo course (as a
    student or an instructor)."""
    placement = ensure_demo_placement()
    first_name, last_name = one_name(language)
    user = get_user_model().objects.create_user(
        username=f"demo-{secrets.token_hex(6)}", first_name=first_name, last_name=last_name
    )
    return Membership.objects.create(
        context=placement.context,
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


def sync_roster(context: Context) -> int:
    """Bring the course's memberships up to date from NRPS; returns members seen."""
    from django.utils import timezone

    from .ags import roster_pages

    registration = context.registration
    present: set[str] = set()
    for page in roster_pages(registration, context.nrps_url):
        with transaction.atomic():
            for member in page:
                sub = _text(member.get("user_id"), 255)
                if not sub or "\x00" in str(member):
                    continue
                present.add(sub)
                _record_member(context, sub, member)
    # Members the LMS no longer lists have left the course (and their tokens stop working).
    Membership.objects.filter(context=context, is_active=True).exclude(
        user__lti_user__sub__in=present
    ).update(is_active=False)
    Context.objects.filter(pk=context.pk).update(roster_synced_at=timezone.now())
    return len(present)


def _record_member(context: Context, sub: str, member: dict) -> None:
    registration = context.registration
    lti_user = (
        LtiUser.objects.select_related("user").filter(registration=registration, sub=sub).first()
    )
    if lti_user is None:
        lti_user = _new_lti_user(registration, sub)
    name = _text(member.get("name"), 255)
    if name:
        lti_user.name = name
    email = _text(member.get("email"), 254)
    if email:
        lti_user.email = email
    lti_user.save()
    roles = [str(role) for role in member.get("roles") or []]
    Membership.objects.update_or_create(
        context=context,
        user=lti_user.user,
        defaults={
            "role": course_role(roles),
            "roles": roles,
            "is_active": str(member.get("status") or "Active") == "Active",
        },
    )
