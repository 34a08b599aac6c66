"""Finding 7: with Redis down students keep answering, launches go on, nothing is lost and
no page gives a 500; /readyz names Redis and stays ready; when Redis returns everything continues.

Each test points the cache at a redis-server of its own and stops it. The full story
(a live server, a real worker and beat, the grade reaching the LMS after Redis returns)
is in test_redis_outage_e2e.py."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from activities.demo import enrol_demo_member
from assessments.models import Response
from lti.models import Membership, ResourceLink, Role
from tests.lti_platform import ROLE, start_login
from tests.quiz_helpers import answer_all, launched_client, start

pytestmark = pytest.mark.django_db


@pytest.mark.usefixtures("quiz")
def test_students_answer_through_an_outage_and_after_it(private_redis):
    membership = enrol_demo_member(Role.LEARNER)
    client = launched_client(membership)  # signed in while Redis is up
    placement = membership.context.resource_links.get()
    client.get(reverse("assessments:placement", args=[placement.pk]))  # session now cached

    private_redis.stop()
    attempt = start(client, placement.pk)
    summary = answer_all(client, attempt, lambda question: question.position % 2 == 1)
    assert "Your score: 4 of 8" in summary
    assert Response.objects.filter(attempt=attempt).count() == 8

    private_redis.start()
    second = start(client, placement.pk)
    assert "Your score: 8 of 8" in answer_all(client, second, lambda _question: True)


def _staff_client() -> tuple[Client, ResourceLink]:
    membership = enrol_demo_member(Role.STAFF)
    return launched_client(membership), membership.context.resource_links.get()


# Pages that read the session, the signed-in user or the cache, for a learner and for staff.
PAGES = [
    ("home", "anonymous", lambda _placement: "/"),
    ("the placement page", "learner", lambda p: reverse("assessments:placement", args=[p.pk])),
    ("the instructor's page", "staff", lambda p: reverse("assessments:manage", args=[p.pk])),
    ("the dashboard", "staff", lambda p: reverse("analytics:dashboard", args=[p.pk])),
    ("the API through the session", "staff", lambda _p: "/api/v1/grades/"),
    ("the API anonymously", "anonymous", lambda _p: "/api/v1/grades/"),
    ("the admin's sign-in page", "anonymous", lambda _p: "/admin/login/"),
]


@pytest.mark.parametrize(("case", "who", "url"), PAGES, ids=[p[0] for p in PAGES])
@pytest.mark.usefixtures("quiz")
def test_no_page_fails_while_redis_is_down(private_redis, case, who, url):
    learner = launched_client(enrol_demo_member(Role.LEARNER))
    staff, placement = _staff_client()
    client = {"anonymous": Client(), "learner": learner, "staff": staff}[who]
    private_redis.stop()
    response = client.get(url(placement))
    assert response.status_code < 500, (case, response.status_code)
    if who != "anonymous":
        assert response.status_code == 200, (case, response.status_code)


def test_a_launch_goes_through_while_redis_is_down_and_is_not_replayable(
    private_redis, platform, client
):
    private_redis.stop()
    auth_params = start_login(client, platform, user_id="stu-outage")
    signed = platform.authorize(auth_params, user_id="stu-outage", roles=[ROLE + "Learner"])
    response = client.post("/lti/launch/", signed)
    assert response.status_code == 302, response.content.decode()[:500]
    page = client.get(response["Location"])
    assert page.status_code == 200
    assert "Start the quiz" in page.content.decode()
    assert Membership.objects.filter(user__lti_user__sub="stu-outage").exists()

    for when in ("still down", "back"):
        if when == "back":
            private_redis.start()
        replay = Client().post("/lti/launch/", signed)
        assert replay.status_code in (400, 403), (when, replay.status_code)
        assert "already used" in replay.content.decode() or "unknown" in replay.content.decode()
        # Posted again by the browser that made it (a reload), the spent launch is refused
        # too, and that browser is sent where it landed (decision 68).
        again = client.post("/lti/launch/", signed)
        landed_at = response["Location"].split("?")[0]  # without the first landing's handoff
        assert (again.status_code, again["Location"]) == (303, landed_at), when


def test_readyz_names_redis_when_it_is_down_and_recovers(private_redis, client):
    private_redis.stop()
    down = client.get("/readyz")
    assert down.status_code == 200  # still serving: decision 29
    assert down.json()["status"] == "degraded"
    assert down.json()["redis"].startswith("unavailable")
    private_redis.start()
    assert client.get("/readyz").json()["redis"] == "ok"
