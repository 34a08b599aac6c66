"""Launches that arrive together: two first launches of a new resource link, or of a new
user (the same `sub` in two tabs), must both land on the one row the winner wrote, not a 500
for the loser of the insert (lti.services); and a repeat launch stays as few statements."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lti import services, views
from lti.course import course_side
from lti.models import Context, LtiUser, Membership, ResourceLink
from tests.lti_platform import ROLE, Platform, launch, start_login

LEARNER = [ROLE + "Learner"]


def arriving_together(work: Callable[..., Any]) -> Callable[..., Any]:
    """``work`` held until two threads have reached it, then run by both: the gap between a
    launch's look-up and its insert, widened so the two launches race through it."""
    both_here = threading.Barrier(2, timeout=20)

    def held(*args: Any, **kwargs: Any) -> Any:
        both_here.wait()
        return work(*args, **kwargs)

    return held


def launch_together(platform: Platform, user_ids: list[str], **claims: Any) -> list[int]:
    """Each user's launch, logged in and signed first, then posted at the same time from a
    browser of its own; the launches' statuses."""
    posts = []
    for user_id in user_ids:
        client = Client(raise_request_exception=False)
        auth_params = start_login(client, platform, user_id=user_id)
        signed = platform.authorize(auth_params, user_id=user_id, roles=LEARNER, **claims)
        posts.append((client, signed))
    statuses: list[int] = []

    def post(client: Client, signed: dict[str, str]) -> None:
        try:
            statuses.append(client.post("/lti/launch/", signed).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=pair) for pair in posts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return sorted(statuses)


@pytest.mark.django_db(transaction=True)
def test_two_first_launches_of_a_new_resource_link_both_land_on_one_placement(
    platform, monkeypatch
):
    for user_id in ("ann", "bob"):  # the course and both students exist already
        assert launch(Client(), platform, user_id=user_id).status_code == 302
    side = course_side()
    monkeypatch.setattr(side, "place", arriving_together(side.place))

    assert launch_together(platform, ["ann", "bob"], resource_link_id="rl-new") == [302, 302]
    (placement,) = ResourceLink.objects.filter(resource_link_id="rl-new")
    assert placement.placement.kind == "quiz"
    assert Context.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_first_launches_of_a_new_user_both_sign_in_the_same_user(platform, monkeypatch):
    assert launch(Client(), platform, user_id="teacher").status_code == 302  # course and link
    monkeypatch.setattr(services, "_new_lti_user", arriving_together(services._new_lti_user))

    assert launch_together(platform, ["new-student", "new-student"]) == [302, 302]
    (lti_user,) = LtiUser.objects.filter(sub="new-student")
    assert lti_user.name == "Ada Lovelace"
    assert Membership.objects.filter(user=lti_user.user, has_launched=True).count() == 1


@pytest.mark.django_db
def test_a_repeat_launch_is_one_look_up_and_writes_nothing(platform, monkeypatch):
    """The common path (every row there, nothing changed) is one statement: no extra
    savepoint, insert or update for the races above (launches are hot, issue 21)."""
    assert launch(Client(), platform, user_id="again").status_code == 302
    recorded: list[str] = []

    def counted(message: Any) -> services.LaunchResult:
        with CaptureQueriesContext(connection) as queries:
            result = services.record_launch(message)
        recorded.extend(query["sql"].split()[0] for query in queries.captured_queries)
        return result

    monkeypatch.setattr(views, "record_launch", counted)
    assert launch(Client(), platform, user_id="again").status_code == 302
    # The platform user, the Django user, the course, the membership and the placement,
    # read in one statement before the transaction, in which nothing is written (the test's
    # own transaction makes it a savepoint).
    assert recorded == ["SELECT", "SAVEPOINT", "RELEASE"]


INSTRUCTOR = [ROLE + "Instructor"]
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"


@pytest.mark.django_db
def test_a_repeat_launch_brings_what_it_says_up_to_date(platform):
    """What the one statement found is written where the launch says otherwise: a new name
    and email, a new role, a membership the roster had ended, the course's new title and
    the link's new line item; a new link of the known course is placed."""
    assert launch(Client(), platform, user_id="again").status_code == 302
    lti_user = LtiUser.objects.select_related("user").get(sub="again")
    Membership.objects.filter(user=lti_user.user).update(is_active=False)  # the roster's doing
    Context.objects.update(title="Old title")
    ags = {"lineitem": platform.server.url("/lineitems/7"), "scope": ["a-scope"]}

    response = launch(
        Client(),
        platform,
        user_id="again",
        roles=INSTRUCTOR,
        full_name="Grace Hopper",
        email="grace@example.edu",
        extra_claims={AGS_CLAIM: ags},
    )
    assert response.status_code == 302
    lti_user = LtiUser.objects.select_related("user").get(sub="again")
    assert (lti_user.name, lti_user.email) == ("Grace Hopper", "grace@example.edu")
    assert (lti_user.user.first_name, lti_user.user.email) == ("Grace Hopper", "grace@example.edu")
    membership = Membership.objects.get(user=lti_user.user)
    assert (membership.role, membership.roles, membership.is_active) == ("staff", INSTRUCTOR, True)
    assert Context.objects.get().title == "Deep Learning Systems"
    link = ResourceLink.objects.get(resource_link_id="rl-1")
    assert (link.lineitem_url, link.ags_scopes) == (ags["lineitem"], ["a-scope"])

    assert launch(Client(), platform, user_id="again", resource_link_id="rl-2").status_code == 302
    assert ResourceLink.objects.filter(context=link.context).count() == 2
    assert Membership.objects.count() == 1


@pytest.mark.django_db
def test_the_launchs_statement_reads_the_rows_as_the_orm_does(platform):
    """Every field of every row the statement reads, converted as the ORM converts it
    (dates, booleans, JSON), against the same rows read by the ORM."""
    from lti.selectors import active_registrations, known_member

    assert launch(Client(), platform, user_id="again").status_code == 302
    membership = Membership.objects.select_related("context__deployment__registration").get()
    deployment = membership.context.deployment
    registration = deployment.registration

    ((found_registration, found_deployment),) = active_registrations(
        registration.issuer, registration.client_id, deployment.deployment_id
    )
    known = known_member(deployment, "again", membership.context.context_id, "rl-1")

    assert known is not None
    pairs = [
        (found_registration, registration),
        (found_deployment, deployment),
        (known.lti_user, LtiUser.objects.get()),
        (known.user, LtiUser.objects.get().user),
        (known.context, membership.context),
        (known.membership, membership),
        (known.link, ResourceLink.objects.get()),
    ]
    for found, expected in pairs:
        names = [field.attname for field in type(expected)._meta.concrete_fields]
        assert {n: getattr(found, n) for n in names} == {n: getattr(expected, n) for n in names}
    assert active_registrations(registration.issuer, registration.client_id, "x") == [
        (found_registration, None)
    ]
    assert active_registrations(registration.issuer, "") == [(found_registration, None)]
    registration.is_active = False
    registration.save()  # its signal tells every process (lti.registrations_memo)
    assert active_registrations(registration.issuer, registration.client_id) == []
    assert known_member(deployment, "someone-else", membership.context.context_id, "rl-1") is None
    assert known_member(deployment, "again", membership.context.context_id, "rl-9").link is None
