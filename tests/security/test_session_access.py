"""A session launched as staff keeps a staff's power only while the tool still holds what
the launch gave: an active membership with the staff role, in a course whose LMS
(deployment and registration) is still active. An administrator who turns off a
compromised platform, or a roster that removes or demotes a teacher, ended nothing before:
the session kept its launch's role for its whole life (14 days by default), on the pages
and through the API."""

from __future__ import annotations

import pytest
from django.test import Client

from lti.models import LtiUser, ResourceLink
from tests.access_cuts import access_cuts, demotion
from tests.lti_platform import ROLE, launch

pytestmark = pytest.mark.django_db


CUTS = [*access_cuts("teacher-1"), demotion("teacher-1")]


@pytest.mark.parametrize(("case", "cut"), CUTS, ids=[case for case, _cut in CUTS])
def test_a_staff_session_ends_with_the_access_it_was_launched_with(client, platform, case, cut):
    launch(Client(), platform, user_id="student-1", roles=[ROLE + "Learner"])
    landed = launch(client, platform, user_id="teacher-1", roles=[ROLE + "Instructor"])
    dashboard = landed["Location"].split("?")[0]
    placement = ResourceLink.objects.get()
    grades = f"/placements/{placement.pk}/grades/"
    student = LtiUser.objects.get(sub="student-1").user_id

    def roster() -> set[int]:
        return {row["user"]["id"] for row in client.get("/api/v1/roster/").json()["results"]}

    assert client.get(dashboard).status_code == 200
    assert client.get(grades).status_code == 200
    assert student in roster()

    cut()

    assert client.get(dashboard).status_code == 403, case
    assert client.get(grades).status_code == 403, case
    assert student not in roster(), case
