"""Writes of the LTI side: provisioning from launches, placements, the demo course."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import BaseUserManager
from django.contrib.auth.models import User
from django.db import IntegrityError, models, transaction

from ops.text import holds_unstorable_text

from . import claims as c
from .course import course_side
from .launch import LaunchMessage, is_platform_id
from .models import Context, LtiUser, Membership, Registration, ResourceLink
from .roles import course_role
from .selectors import KnownMember, known_member

logger = logging.getLogger(__name__)

DEMO_CONTEXT_ID = "demo-course"
NO_CONTEXT_ID = "_deployment_"


@dataclass(frozen=True)
class LaunchResult:
    user: User
    membership: Membership
    placement: ResourceLink | None


def _new_lti_user(registration: Registration, sub: str, user_fields: dict[str, str]) -> LtiUser:
    """A platform user (issuer + sub) and the Django user behind it, made with
    ``user_fields`` in its one insert (a save after it would make every process drop the
    users it keeps: lti.backends); no password."""
    digest = hashlib.sha256(f"{registration.pk}:{sub}".encode()).hexdigest()
    user = get_user_model().objects.create_user(username=f"lti-{digest[:24]}", **user_fields)
    return LtiUser(registration=registration, sub=sub, user=user)


def _lti_user(
    registration: Registration, sub: str, fields: dict[str, str], user_fields: dict[str, str]
) -> tuple[LtiUser, bool]:
    """The platform user (with its Django user), made with ``fields`` (and its user with
    ``user_fields``) if new; whether it was.

    Two first launches of one user (two tabs) or a launch beside a roster sync both find
    none: the loser's insert waits for the winner's commit, fails on the unique username, and
    its savepoint lets it read the winner's rows instead of failing the launch."""
    found = LtiUser.objects.select_related("user").filter(registration=registration, sub=sub)
    lti_user = found.first()
    if lti_user is not None:
        return lti_user, False
    try:
        with transaction.atomic():
            lti_user = _new_lti_user(registration, sub, user_fields)
            for name, value in fields.items():
                setattr(lti_user, name, value)
            lti_user.save()
    except IntegrityError:
        lti_user = found.first()
        if lti_user is None:  # not a lost race: a constraint this cannot settle
            raise
        return lti_user, False
    return lti_user, True


NAME_LENGTH = cast(int, LtiUser._meta.get_field("name").max_length)


def _text(value: object, limit: int) -> str:
    """A claim's value as text, or empty when the platform sent something that is not one."""
    return value.strip()[:limit] if isinstance(value, str) else ""


def _personal_fields(source: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """What a launch's claims or a roster's member entry (NRPS names them as LTI does) say of
    a person: the Django user's fields and the platform user's. Only what the platform
    sends; an absent value changes nothing."""
    given, family = _text(source.get("given_name"), 150), _text(source.get("family_name"), 150)
    # Two names of 150 joined are longer than the platform user's name holds.
    joined = " ".join(part for part in (given, family) if part)[:NAME_LENGTH]
    name = _text(source.get("name"), NAME_LENGTH) or joined
    email = _text(source.get("email"), 254)
    user_fields: dict[str, str] = {}
    lti_fields: dict[str, str] = {}
    if name:
        lti_fields["name"] = name
        user_fields.update(first_name=given or name[:150], last_name=family)
    if email:
        lti_fields["email"] = email
        # As Django's create_user writes it (the domain in lower case), so that a later
        # launch compares like with like and saves nothing.
        user_fields["email"] = BaseUserManager.normalize_email(email)
    return user_fields, lti_fields


def _provision_user(message: LaunchMessage, known: LtiUser | None) -> User:
    """The launch's user, made (with its platform user) unless ``known``; what the launch
    says of them brought up to date."""
    user_fields, lti_fields = _personal_fields(message.claims)
    lti_fields["locale"] = message.locale[:35]
    if known is None:
        lti_user, created = _lti_user(message.registration, message.sub, lti_fields, user_fields)
        if created:
            return lti_user.user
    else:
        lti_user = known
    # A repeat launch usually changes nothing: write only what did (launches are hot).
    _update_fields(lti_user.user, user_fields)
    _update_fields(lti_user, lti_fields)
    return lti_user.user


def _update_fields(instance: models.Model, values: dict) -> None:
    """Set and save only the fields whose values differ (a launch repeats what it sent)."""
    changed = [name for name, value in values.items() if getattr(instance, name) != value]
    for name in changed:
        setattr(instance, name, values[name])
    if changed:
        if any(field.name == "updated_at" for field in instance._meta.fields):
            changed.append("updated_at")  # auto_now fields change only when named
        instance.save(update_fields=changed)


def _context_id(message: LaunchMessage) -> str:
    return str(message.claim(c.CONTEXT).get("id") or NO_CONTEXT_ID)


def _context(message: LaunchMessage, known: Context | None) -> Context:
    claim = message.claim(c.CONTEXT)
    context = known
    if context is None:
        context, _ = Context.objects.get_or_create(
            deployment=message.deployment, context_id=_context_id(message)
        )
    updates = {
        "title": _text(claim.get("title"), 255),
        "label": _text(claim.get("label"), 255),
        "nrps_url": _text(message.claim(c.NRPS).get("context_memberships_url"), 500),
    }
    _update_fields(context, {name: value for name, value in updates.items() if value})
    return context


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


def _placement(
    message: LaunchMessage, context: Context, known: ResourceLink | None
) -> ResourceLink:
    """The launch's resource link: ``known`` (the repeat launch's read found it), or the
    course's, or a new one placed by the course side."""
    ags = _ags(message)
    placement = known or _new_placement(message, context, ags)
    _update_fields(placement, ags)
    return placement


def _new_placement(message: LaunchMessage, context: Context, ags: dict) -> ResourceLink:
    link = message.claim(c.RESOURCE_LINK)
    found = ResourceLink.objects.filter(context=context, resource_link_id=link["id"])
    placement = found.first()
    if placement is not None:
        return placement
    placement = ResourceLink(
        context=context,
        resource_link_id=str(link["id"]),
        title=_text(link.get("title"), 255),
        **ags,
    )
    try:
        # What the link places is the course side's to decide (lti.course).
        with transaction.atomic():
            course_side().place(placement, message.claim(c.CUSTOM))
        return placement
    except IntegrityError:
        # A class opening a new activity at once: another first launch placed the link
        # between the look-up and the insert (which waited for its commit). Its placement
        # is the link's; this launch goes on as a repeat one.
        placement = found.first()
        if placement is None:
            raise
        return placement


def record_launch(message: LaunchMessage) -> LaunchResult:
    """Provision the user, course, membership and (for resource links) the placement.

    A repeat launch finds its rows in one statement (lti.selectors.known_member) and writes
    only what the launch changed; a first one makes what is missing, in one transaction.
    The read comes before the transaction, which changes nothing of what it sees (read
    committed: each statement sees what was committed when it began, in a transaction or
    not), and a repeat launch that changes nothing then sends the database nothing more:
    psycopg begins a transaction with its first statement and commits none that is not open."""
    link_id = None if message.is_deep_linking else str(message.claim(c.RESOURCE_LINK)["id"])
    known = known_member(message.deployment, message.sub, _context_id(message), link_id)
    with transaction.atomic():
        return _provision(message, known)


def _provision(message: LaunchMessage, known: KnownMember | None) -> LaunchResult:
    user = _provision_user(message, known.lti_user if known else None)
    context = _context(message, known.context if known else None)
    wanted = {
        "role": course_role(message.roles),
        "roles": message.roles,
        "is_active": True,
        "has_launched": True,
    }
    if known is None:
        membership, created = Membership.objects.get_or_create(
            context=context, user=user, defaults=wanted
        )
    else:
        membership, created = known.membership, False
    if not created:
        _update_fields(membership, wanted)
    placement = (
        None
        if message.is_deep_linking
        else _placement(message, context, known.link if known else None)
    )
    return LaunchResult(user=user, membership=membership, placement=placement)


def demo_context() -> Context:
    """The demo course of the local run (no LMS, no deployment)."""
    context, _ = Context.objects.get_or_create(
        deployment=None,
        context_id=DEMO_CONTEXT_ID,
        defaults={"title": "Demo course", "label": "DEMO", "is_demo": True},
    )
    return context


def sync_roster(context: Context) -> int:
    """Bring the course's memberships up to date from NRPS; returns members seen."""
    from django.utils import timezone

    from .ags import roster_pages

    registration = context.registration
    present: set[str] = set()
    for page_number, page in enumerate(roster_pages(registration, context.nrps_url), start=1):
        with transaction.atomic():
            for position, member in enumerate(page, start=1):
                sub = _member_sub(member)
                if sub:
                    # Listed, so not gone, even where its entry cannot be stored.
                    present.add(sub)
                if sub and _storable_member(member):
                    _record_member(context, sub, member)
                else:
                    # One bad entry must not fail the page, the good members with it, on
                    # every run. Its position says which; its data stays out of the log.
                    logger.warning(
                        "roster member skipped context=%s page=%s position=%s",
                        context.pk,
                        page_number,
                        position,
                    )
    # Members the LMS no longer lists have left the course (and their tokens stop working).
    Membership.objects.filter(context=context, is_active=True).exclude(
        user__lti_user__sub__in=present
    ).update(is_active=False)
    Context.objects.filter(pk=context.pk).update(roster_synced_at=timezone.now())
    return len(present)


def _member_sub(member: dict) -> str:
    """The member's user id as a launch stores it (``LtiUser.sub``, as sent), or empty when
    the LMS sent none that can be."""
    sub = member.get("user_id")
    return sub if is_platform_id(sub) and not holds_unstorable_text(sub) else ""


def _storable_member(member: dict) -> bool:
    """Whether the entry can be stored: its roles (if any) a list of text, and no text in it
    that no database can hold (a NUL, an unpaired surrogate)."""
    roles = member.get("roles")
    return (
        roles is None or (isinstance(roles, list) and all(isinstance(r, str) for r in roles))
    ) and not holds_unstorable_text(member)


def _record_member(context: Context, sub: str, member: dict) -> None:
    user_fields, fields = _personal_fields(member)
    lti_user, created = _lti_user(context.registration, sub, fields, user_fields)
    if not created:  # a new member was stored with them, in one insert
        for key, value in fields.items():
            setattr(lti_user, key, value)
        lti_user.save()
    roles = list(member.get("roles") or [])
    Membership.objects.update_or_create(
        context=context,
        user=lti_user.user,
        defaults={
            "role": course_role(roles),
            "roles": roles,
            "is_active": str(member.get("status") or "Active") == "Active",
        },
    )
