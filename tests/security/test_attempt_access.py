"""An attempt's pages and its answers are reached as the activity's pages are: through a
session launched into the attempt's course, while the tool still holds what that launch
gave (an active membership, in a course whose LMS is still turned on). Before, an attempt
checked only its owner: a student removed from the course, or whose platform the
administrator turned off, went on answering (and each answer could send a grade to the
LMS); a session launched into another course opened the attempt too."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from activities.models import Grade
from assessments.models import Attempt, AttemptState, Response
from lti.models import ResourceLink
from tests.access_cuts import access_cuts
from tests.lti_platform import launch
from tests.quiz_helpers import current_form, start

pytestmark = pytest.mark.django_db


CUTS = access_cuts("student-1")


def _answer(client: Client, attempt: Attempt) -> int:
    question, option_ids = current_form(client, attempt)
    response = client.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question.pk, "option": option_ids[0]},
    )
    return response.status_code


def _pages(attempt: Attempt) -> list[str]:
    return [
        reverse("assessments:attempt", args=[attempt.public_id]),
        reverse("assessments:feedback", args=[attempt.public_id, 1]),
        reverse("assessments:summary", args=[attempt.public_id]),
    ]


@pytest.mark.parametrize(("case", "cut"), CUTS, ids=[case for case, _cut in CUTS])
def test_an_attempt_in_progress_ends_with_the_access_its_launch_gave(client, platform, case, cut):
    launch(client, platform, user_id="student-1")
    attempt = start(client, ResourceLink.objects.get().pk)
    assert _answer(client, attempt) == 200
    question, option_ids = current_form(client, attempt)
    for page in _pages(attempt):
        assert client.get(page).status_code in (200, 302)  # an unfinished summary redirects

    cut()

    for page in _pages(attempt):
        refused = client.get(page)
        assert refused.status_code == 403, (case, page)
        assert "course" in refused.content.decode()
    refused = client.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question.pk, "option": option_ids[0]},
    )
    assert refused.status_code == 403, case
    assert Response.objects.filter(attempt=attempt).count() == 1, case


@pytest.mark.parametrize(("case", "cut"), CUTS, ids=[case for case, _cut in CUTS])
def test_the_finishing_answer_ends_with_the_access_its_launch_gave(client, platform, case, cut):
    """The last answer's results page is built from what its statement and its finish read
    (decisions 86 and 87), without the results page's own check: the answer's statement is
    what refuses it. Cut before the last answer, the attempt stays unfinished and ungraded."""
    launch(client, platform, user_id="student-1")
    attempt = start(client, ResourceLink.objects.get().pk)
    for _ in range(attempt.max_score - 1):
        assert _answer(client, attempt) == 200
    question, option_ids = current_form(client, attempt)

    cut()

    refused = client.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question.pk, "option": option_ids[0]},
    )
    assert refused.status_code == 403, case
    assert "course" in refused.content.decode()
    attempt.refresh_from_db()
    assert attempt.state == AttemptState.IN_PROGRESS, case
    assert Response.objects.filter(attempt=attempt).count() == attempt.max_score - 1
    assert not Grade.objects.exists()


@pytest.mark.parametrize(("case", "cut"), CUTS, ids=[case for case, _cut in CUTS])
def test_a_start_ends_with_the_access_its_launch_gave(client, platform, case, cut):
    """The start checks the course's access in its own statement (selectors.start_facts),
    not through the activity's page's check: the same cuts refuse it, a new attempt's and a
    resumed one's alike."""
    launch(client, platform, user_id="student-1")
    placement_id = ResourceLink.objects.get().pk
    attempt = start(client, placement_id)

    cut()

    for story in ("resuming the attempt in progress", "a new attempt"):
        refused = client.post(reverse("assessments:start", args=[placement_id]))
        assert refused.status_code == 403, (case, story)
        assert "course" in refused.content.decode()
        Attempt.objects.filter(pk=attempt.pk).update(state="finished")
    assert list(Attempt.objects.values_list("pk", flat=True)) == [attempt.pk]


def test_an_attempt_opens_only_in_a_session_launched_into_its_course(platform):
    course_a = Client()
    launch(course_a, platform, user_id="student-1", context_id="course-A", resource_link_id="rl-A")
    attempt = start(course_a, ResourceLink.objects.get(resource_link_id="rl-A").pk)
    question, option_ids = current_form(course_a, attempt)

    # The same student, launched in another browser into another course only.
    course_b = Client()
    launch(course_b, platform, user_id="student-1", context_id="course-B", resource_link_id="rl-B")
    for page in _pages(attempt):
        assert course_b.get(page).status_code == 403, page
    refused = course_b.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question.pk, "option": option_ids[0]},
    )
    assert refused.status_code == 403
    assert not Response.objects.filter(attempt=attempt).exists()

    # Nor does it resume the attempt there, or start another (the start's own check).
    start_address = reverse("assessments:start", args=[attempt.placement_id])
    assert course_b.post(start_address).status_code == 403
    Attempt.objects.filter(pk=attempt.pk).update(state="finished")
    assert course_b.post(start_address).status_code == 403
    assert list(Attempt.objects.values_list("pk", flat=True)) == [attempt.pk]
    Attempt.objects.filter(pk=attempt.pk).update(state="in_progress")
    assert _answer(course_a, attempt) == 200  # its own course's session goes on
