"""Reads of the LTI side that a launch makes, each one written-out statement (decision 58).

A launch is most of opening an activity, and the ORM spent most of a launch building its
reads: the registration and its deployment, then the platform user with the Django user,
the course, the membership and the resource link, each a query of its own. Each group is one
statement here, its columns named from the models (``ops.rows``); portable SQL, since
``make run`` serves it from SQLite.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection

from ops.rows import Part, instances, select_list

from . import registrations_memo
from .models import Context, Deployment, LtiUser, Membership, Registration, ResourceLink

_REGISTRATION = Part(Registration, "r")
_DEPLOYMENT = Part(Deployment, "d")


@cache
def _registrations_sql(by_client_id: bool) -> str:
    r, d = _REGISTRATION, _DEPLOYMENT
    return (
        f"SELECT {select_list([r, d])} FROM {r.table}"
        f" LEFT JOIN {d.table} ON {d.column('registration')} = {r.column('id')}"
        f" AND {d.column('deployment_id')} = %s"
        f" WHERE {r.column('issuer')} = %s AND {r.column('is_active')} = %s"
        + (f" AND {r.column('client_id')} = %s" if by_client_id else "")
        + " LIMIT 2"
    )


def active_registrations(
    issuer: str, client_id: str, deployment_id: str = ""
) -> list[tuple[Registration, Deployment | None]]:
    """The issuer's active registrations with the client id (at most one), or without a
    client id up to two of them, each with its deployment ``deployment_id`` (active or not:
    the launch says which of the two it refuses) or None. One statement, for the login and
    for the launch, whose rows each process keeps (lti.registrations_memo) where it found
    the registration and the deployment asked for: a launch naming a made-up deployment is
    read again, and does not take a place. Each call makes its own instances."""
    rows = registrations_memo.remembered(
        ("registrations", issuer, client_id, deployment_id),
        lambda: _registration_rows(issuer, client_id, deployment_id),
        keep=lambda rows: (
            bool(rows) and (not deployment_id or all(_has_deployment(row) for row in rows))
        ),
    )
    found = []
    for row in rows:
        registration, deployment = instances(row, [_REGISTRATION, _DEPLOYMENT])
        assert isinstance(registration, Registration)
        if deployment is not None:
            assert isinstance(deployment, Deployment)
            deployment.registration = registration
        found.append((registration, deployment))
    return found


def _registration_rows(issuer: str, client_id: str, deployment_id: str) -> tuple[tuple, ...]:
    params: list[str | bool] = [deployment_id, issuer, True]
    if client_id:
        params.append(client_id)
    with connection.cursor() as cursor:
        cursor.execute(_registrations_sql(bool(client_id)), params)
        return tuple(tuple(row) for row in cursor.fetchall())


def _has_deployment(row: tuple) -> bool:
    """Whether the row's deployment part (after the registration's columns) was found."""
    deployment = row[len(_REGISTRATION.fields) :]
    return deployment[_DEPLOYMENT.fields.index(Deployment._meta.pk)] is not None


@dataclass(frozen=True)
class KnownMember:
    """What a repeat launch finds: the member of the course, as the launch names them."""

    lti_user: LtiUser
    user: User
    context: Context
    membership: Membership
    # None when the launch names a resource link the course does not have yet (or none).
    link: ResourceLink | None


@cache
def _member_parts() -> tuple[Part, ...]:
    # The user model is known only once the apps are loaded.
    return (
        Part(LtiUser, "lu"),
        Part(get_user_model(), "u"),
        Part(Context, "c"),
        Part(Membership, "m"),
        Part(ResourceLink, "l"),
    )


@cache
def _member_sql() -> str:
    lu, u, c, m, link = _member_parts()
    return (
        f"SELECT {select_list(_member_parts())} FROM {lu.table}"
        f" JOIN {u.table} ON {u.column('id')} = {lu.column('user')}"
        f" JOIN {c.table} ON {c.column('deployment')} = %s AND {c.column('context_id')} = %s"
        f" JOIN {m.table} ON {m.column('context')} = {c.column('id')}"
        f" AND {m.column('user')} = {u.column('id')}"
        f" LEFT JOIN {link.table} ON {link.column('context')} = {c.column('id')}"
        f" AND {link.column('resource_link_id')} = %s"
        f" WHERE {lu.column('registration')} = %s AND {lu.column('sub')} = %s"
    )


def known_member(
    deployment: Deployment, sub: str, context_id: str, resource_link_id: str | None
) -> KnownMember | None:
    """The platform user ``sub`` of the deployment's registration with their Django user,
    their membership of the course ``context_id`` and the course's resource link (if it has
    it), or None when the user, the course or the membership is not there yet. One
    statement, where the ORM took four reads."""
    with connection.cursor() as cursor:
        cursor.execute(
            _member_sql(),
            [deployment.pk, context_id, resource_link_id, deployment.registration_id, sub],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    lti_user, user, context, membership, link = instances(row, _member_parts())
    assert isinstance(lti_user, LtiUser)
    assert isinstance(user, User)
    assert isinstance(context, Context)
    assert isinstance(membership, Membership)
    lti_user.user = user
    context.deployment = deployment
    membership.context, membership.user = context, user
    if link is not None:
        assert isinstance(link, ResourceLink)
        link.context = context
    return KnownMember(lti_user, user, context, membership, link)


_LINK = Part(ResourceLink, "l")
_COURSE = Part(Context, "c")


@cache
def _link_sql() -> str:
    link, course = _LINK, _COURSE
    return (
        f"SELECT {select_list([link, course])} FROM {link.table}"
        f" JOIN {course.table} ON {course.column('id')} = {link.column('context')}"
        f" WHERE {link.column('id')} = %s"
    )


def link_with_course(link_id: int) -> ResourceLink:
    """The resource link with its course (``link.context``) in one written-out statement,
    where the ORM's ``select_related`` spent twice the statement building it; raises
    ``ResourceLink.DoesNotExist`` as the ORM's ``get`` does."""
    with connection.cursor() as cursor:
        cursor.execute(_link_sql(), [link_id])
        row = cursor.fetchone()
    if row is None:
        raise ResourceLink.DoesNotExist(f"no resource link {link_id}")
    link, course = instances(row, [_LINK, _COURSE])
    assert isinstance(link, ResourceLink)
    assert isinstance(course, Context)
    link.context = course
    return link


# A worker's warm-up reads at most this many deployments' rows: an installation has a few
# platforms, and one with hundreds reads the rest on demand.
WARM_UP_DEPLOYMENTS = 20


def remember_registrations() -> list[str]:
    """What a web worker's first logins and launches would read (ops.warmup): the active
    registrations' rows as both look them up, kept (lti.registrations_memo), and the
    member's statement run once, so that it is prepared and planned on this worker's
    connection (decision 64) before a launch needs it. Returns the key set URLs."""
    deployments = (
        Deployment.objects.filter(registration__is_active=True)
        .select_related("registration")
        .order_by("-pk")[:WARM_UP_DEPLOYMENTS]
    )
    keyset_urls = set()
    for deployment in deployments:
        registration = deployment.registration
        active_registrations(registration.issuer, registration.client_id)
        active_registrations(registration.issuer, registration.client_id, deployment.deployment_id)
        keyset_urls.add(registration.keyset_url)
    if deployments:
        known_member(deployments[0], "", "", None)  # nobody: only prepared, once
    return sorted(keyset_urls)
