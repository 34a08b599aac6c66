"""A new activity kind (tests/activities/kind_app: neither the quiz nor a lab) registered the
way they are: an instructor places it by deep linking, a student launches it and is graded,
and the grade reaches the LMS through grade sync, with nothing in lti/ or in the registry's
users knowing the kind."""

from __future__ import annotations

import re
from decimal import Decimal
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from activities.models import Grade
from gradesync import services as gradesync
from gradesync.models import GradeSync, SyncState
from lti import claims as c
from lti.models import Registration, ResourceLink
from tests.activities.kind_app.models import Exercise, ExercisePlacement
from tests.lti_platform import ROLE, launch

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.activities.kind_app.urls")]


def hidden(html: str, name: str) -> str:
    return unescape(re.search(rf'name="{name}" value="([^"]*)"', html).group(1))


def test_a_new_kind_is_placed_launched_graded_and_synced(client, platform, fake_lms):
    Exercise.objects.create(
        slug="segments", title={"en": "Segments for 64 blocks"}, answer="8", points=10
    )
    # The LMS's AGS service is the fake LMS (its token endpoint signs our assertion's kid).
    Registration.objects.filter(issuer=platform.issuer).update(
        auth_token_url=fake_lms.url("/token")
    )

    picked = launch(client, platform, roles=[ROLE + "Instructor"], deep_link=True)
    picker = client.get(picked["Location"])
    assert picker.status_code == 200
    assert "Segments for 64 blocks" in picker.content.decode()
    returned = client.post(
        picked["Location"],
        {
            "activity": "exercise:segments",
            "title": "Exercise 1",
            "max_attempts": "0",
            "grading_method": "highest",
        },
    )
    assert returned.status_code == 200, returned.content.decode()[:500]
    signed = hidden(returned.content.decode(), "JWT")
    (item,) = platform.verify_deep_linking_response(signed, client.get("/lti/jwks/").json())
    assert item["custom"]["activity"] == "exercise:segments"
    assert item["lineItem"] == {
        "scoreMaximum": 10,
        "label": "Exercise 1",
        "resourceId": "exercise:segments",
        "tag": "exercise",
    }

    student = Client()
    ags = {c.AGS_ENDPOINT: {"lineitems": fake_lms.url("/lineitems"), "scope": c.TOOL_SCOPES}}
    landed = launch(
        student,
        platform,
        user_id="s1",
        resource_link_id="exercise-link",
        custom=item["custom"],
        extra_claims=ags,
    )
    link = ResourceLink.objects.get(resource_link_id="exercise-link")
    assert ExercisePlacement.objects.get(resource_link=link).exercise.slug == "segments"
    page_url = reverse("kind_app:placement", args=[link.pk])
    assert landed.status_code == 302
    assert landed["Location"].startswith(page_url)
    page = student.get(landed["Location"], follow=True)
    assert "Segments for 64 blocks" in page.content.decode()

    student.post(page_url, {"answer": "7"})
    student.post(page_url, {"answer": "8"})
    grade = Grade.objects.get(placement=link)
    assert (grade.score_given, grade.score_maximum) == (Decimal(10), Decimal(10))
    assert grade.attempt_count == 2
    assert grade.counted_number == 2

    syncs = list(GradeSync.objects.filter(placement=link).order_by("pk"))
    assert [sync.score_given for sync in syncs] == [Decimal(0), Decimal(10)]
    assert [gradesync.deliver(sync.pk) for sync in syncs] == ["synced", "synced"]
    assert GradeSync.objects.filter(placement=link, state=SyncState.SYNCED).count() == 2
    ((lineitem_id, lineitem),) = fake_lms.lineitems.items()
    assert lineitem["tag"] == "exercise"
    assert lineitem["scoreMaximum"] == 10
    assert lineitem["resourceLinkId"] == "exercise-link"
    assert fake_lms.scores[(lineitem_id, "s1")]["scoreGiven"] == 10.0
