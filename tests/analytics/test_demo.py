"""The demo course is believable: no dates in the future, no two students with one name,
names in both languages, a class of lab runs measured by the real runner, and a browser
that comes back through the demo entry continues as the same demo student."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from activities.demo import ensure_demo_placement
from activities.models import Grade
from analytics.demo_data import generate_demo_data, generate_demo_lab_runs
from analytics.selectors import lab_dashboard
from assessments.models import Attempt, Response
from labs.models import LabRun, RunStatus
from lti.models import Membership, Role
from tests.labs_helpers import lab_placement, small_lab
from tests.quiz_helpers import start

CYRILLIC = re.compile(r"[А-Яа-яЁё]")


@pytest.mark.usefixtures("quiz")
def test_demo_class_has_no_future_dates_and_distinct_names_in_both_languages():
    placement = ensure_demo_placement()
    made = generate_demo_data(placement, 400, seed=7, days=2, retake_share=0.6)
    now = timezone.now()
    attempts = Attempt.objects.filter(placement=placement)
    assert made.attempts == attempts.count() > 400
    assert not attempts.filter(started_at__gt=now).exists()
    assert not attempts.filter(finished_at__gt=now).exists()
    assert not Response.objects.filter(attempt__placement=placement, answered_at__gt=now).exists()
    assert not Grade.objects.filter(placement=placement, updated_at__gt=now).exists()
    assert all(a.started_at <= a.finished_at for a in attempts)

    students = get_user_model().objects.filter(
        lti_memberships__context=placement.context, lti_memberships__role=Role.LEARNER
    )
    names = [f"{u.first_name} {u.last_name}" for u in students]
    assert len(names) == 400
    assert len(set(names)) == 400
    russian = [name for name in names if CYRILLIC.search(name)]
    assert 60 < len(russian) < 200  # about 30%
    # A student who took the quiz in Russian has a Russian name, and the other way round.
    for attempt in attempts.select_related("user")[:200]:
        assert bool(CYRILLIC.search(attempt.user.last_name)) == (attempt.language == "ru")


def demo_launch(client: Client, role: str = "learner", activity: str = "quiz"):
    response = client.post(reverse("activities:demo-launch"), {"role": role, "activity": activity})
    assert response.status_code == 302, response.content
    return response


def signed_in_user(client: Client):
    return get_user_model().objects.get(pk=client.session["_auth_user_id"])


@pytest.mark.usefixtures("quiz")
def test_the_same_browser_continues_as_the_same_demo_student():
    browser = Client()
    demo_launch(browser)
    student = signed_in_user(browser)
    placement = ensure_demo_placement()
    attempt = start(browser, placement.pk)

    response = demo_launch(browser)  # the home page's button again, later
    assert signed_in_user(browser) == student
    # Back in the attempt in progress.
    assert response["Location"] == reverse("assessments:attempt", args=[attempt.public_id])
    page = browser.get(response["Location"]).content.decode()
    assert "Question 1 of 8" in page
    assert Attempt.objects.filter(user=student).count() == 1

    demo_launch(browser, role="staff")  # the instructor's entry is a different user
    teacher = signed_in_user(browser)
    assert teacher != student
    assert Membership.objects.get(user=teacher).role == Role.STAFF
    demo_launch(browser)
    assert signed_in_user(browser) == student
    demo_launch(browser, role="staff")
    assert signed_in_user(browser) == teacher

    other = Client()  # another browser is another demo student
    demo_launch(other)
    assert signed_in_user(other) != student


@pytest.mark.usefixtures("quiz")
def test_a_demo_cookie_that_is_forged_or_names_someone_else_gives_a_new_student():
    browser = Client()
    demo_launch(browser)
    student = signed_in_user(browser)
    admin = get_user_model().objects.create_superuser("root", password="x")
    for value in [str(admin.pk), f"{student.pk}:forged", student.pk + 1000]:
        stranger = Client()
        stranger.cookies["gcq-demo-learner"] = str(value)
        demo_launch(stranger)
        assert signed_in_user(stranger) not in (student, admin)
    # Signed by the server but for the wrong role: a staff cookie never signs in a learner.
    staff_browser = Client()
    demo_launch(staff_browser, role="staff")
    teacher = signed_in_user(staff_browser)
    stolen = Client()
    stolen.cookies["gcq-demo-learner"] = staff_browser.cookies["gcq-demo-staff"].value
    demo_launch(stolen)
    assert signed_in_user(stolen) != teacher


@pytest.mark.torch
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("quiz")
def test_demo_lab_runs_are_measured_by_the_runner_and_graded():
    lab = small_lab()
    placement = lab_placement(ensure_demo_placement().context, lab)
    generate_demo_data(ensure_demo_placement(), 12, seed=2, absent_share=0)
    made = generate_demo_lab_runs(
        placement, seed=1, share=0.5, policies=({"kind": "none"}, {"kind": "every_block"})
    )
    runs = LabRun.objects.filter(placement=placement)
    assert made == runs.count() >= 6
    assert set(runs.values_list("status", flat=True)) == {RunStatus.SUCCEEDED}
    now = timezone.now()
    for run in runs:
        assert run.submitted_at <= run.started_at <= run.finished_at <= now
        assert run.result["peak_activation_bytes"] > 0
        assert run.score is not None
    none_peak = {r.result["peak_activation_bytes"] for r in runs if r.policy["kind"] == "none"}
    every_peak = {
        r.result["peak_activation_bytes"] for r in runs if r.policy["kind"] == "every_block"
    }
    assert len(none_peak) <= 1
    assert len(every_peak) <= 1
    students = runs.values("user").distinct().count()
    assert Grade.objects.filter(placement=placement).count() == students == 6
    dashboard = lab_dashboard(placement)
    assert dashboard.measured == made
    assert len(dashboard.points) == made
    assert all(not point.student.startswith("demo-") for point in dashboard.points)
