"""Finding 5: an API token works only while its creator still holds the access it was
made with (by the latest membership and role data the tool holds)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from api.tokens import create_token
from lti.models import Membership, Registration, Role
from tests.grades_helpers import graded_placement, student

pytestmark = pytest.mark.django_db


def _deactivate(user) -> None:
    user.is_active = False
    user.save()


def _now_learner(user) -> None:
    Membership.objects.filter(user=user).update(role=Role.LEARNER)


def _membership_ended(user) -> None:
    Membership.objects.filter(user=user).update(is_active=False)


def _platform_turned_off(user) -> None:  # noqa: ARG001
    Registration.objects.update(is_active=False)


def _no_longer_superuser(user) -> None:
    user.is_superuser = False
    user.save()


# (case, site-wide token?, what happens to the creator)
CASES: list[tuple[str, bool, Callable]] = [
    ("course token, creator deactivated", False, _deactivate),
    ("course token, creator is now a learner of the course", False, _now_learner),
    ("course token, creator's membership ended", False, _membership_ended),
    ("course token, the course's platform turned off", False, _platform_turned_off),
    ("site-wide token, owner lost superuser", True, _no_longer_superuser),
    ("site-wide token, owner deactivated", True, _deactivate),
]


@pytest.mark.parametrize(("case", "site_wide", "change"), CASES, ids=[c[0] for c in CASES])
def test_a_token_stops_working_when_its_creator_loses_the_access(
    fake_lms, quiz, case, site_wide, change
):
    placement = graded_placement(fake_lms, quiz)
    creator = student(placement, "teacher")
    Membership.objects.filter(user=creator).update(role=Role.STAFF)
    if site_wide:
        get_user_model().objects.filter(pk=creator.pk).update(is_superuser=True)
        creator.refresh_from_db()
    _, value = create_token(
        actor=creator,
        name="t",
        context=None if site_wide else placement.context,
        can_write=True,
    )
    caller = Client(HTTP_AUTHORIZATION=f"Bearer {value}")
    assert caller.get("/api/v1/roster/").status_code == 200

    change(creator)

    for url in ("/api/v1/roster/", "/api/v1/grades/", f"/api/v1/placements/{placement.pk}/"):
        response = caller.get(url)
        assert response.status_code == 401, (case, url, response.content)
        error = response.json()["error"]
        assert error["status"] == 401
        assert error["message"]
