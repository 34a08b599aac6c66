"""Driving the quiz through the Django test client, the way a browser without JS does."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.test import Client
from django.urls import reverse

from assessments.models import Attempt, Option, Question
from assessments.services import Answered, start_or_resume_attempt, submit_answer
from lti.access import SESSION_KEY
from lti.models import Membership, ResourceLink


def launched_client(membership: Membership) -> Client:
    """A browser session as a launch into the membership's course leaves it."""
    client = Client()
    client.force_login(membership.user)
    session = client.session
    session[SESSION_KEY] = {str(membership.context_id): membership.role}
    session.save()
    return client


def started_attempt(user, placement: ResourceLink) -> Attempt:
    """The student's attempt on the placement, started (or resumed) by the start's service as
    a session launched into the placement's course does."""
    return start_or_resume_attempt(
        user=user,
        placement_id=placement.pk,
        launched_courses=[placement.context_id],
        language="en",
    ).attempt


def submit(
    user, placement: ResourceLink, attempt: Attempt, option: Option, language: str = "en"
) -> Answered:
    """The student's answer ``option`` to its question, through the answer's service, as a
    session launched into the placement's course sends it."""
    return submit_answer(
        user=user,
        launched_courses=[placement.context_id],
        attempt_public_id=attempt.public_id,
        question_id=option.question_id,
        option_id=option.pk,
        language=language,
    )


QUESTION_ID = re.compile(r'name="question" value="(\d+)"')
OPTION_IDS = re.compile(r'name="option" value="(\d+)"')


# The attempt a question page is of: its canonical address (decision 60's page_address).
ATTEMPT_ADDRESS = re.compile(r'<link rel="canonical" href="/attempts/([0-9a-f-]{36})/">')


def start(client: Client, placement_id: int) -> Attempt:
    """Starts (or resumes) the attempt: the start is answered by its question page."""
    response = client.post(reverse("assessments:start", args=[placement_id]))
    assert response.status_code == 200, response.content
    return Attempt.objects.get(public_id=ATTEMPT_ADDRESS.search(response.content.decode())[1])


def current_form(client: Client, attempt: Attempt) -> tuple[Question, list[int]]:
    """The question the attempt page shows and its option ids in the order shown."""
    page = client.get(reverse("assessments:attempt", args=[attempt.public_id]))
    assert page.status_code == 200
    html = page.content.decode()
    question = Question.objects.get(pk=QUESTION_ID.search(html).group(1))
    return question, [int(option_id) for option_id in OPTION_IDS.findall(html)]


def answer_all(client: Client, attempt: Attempt, choose_correct: Callable[[Question], bool]) -> str:
    """Answer every question; returns the summary page's HTML."""
    for _ in range(attempt.max_score):
        question, option_ids = current_form(client, attempt)
        options = Option.objects.filter(pk__in=option_ids)
        want_correct = choose_correct(question)
        chosen = next(option for option in options if option.is_correct == want_correct)
        response = client.post(
            reverse("assessments:answer", args=[attempt.public_id]),
            {"question": question.pk, "option": chosen.pk},
            follow=True,
        )
        assert response.status_code == 200
        html = response.content.decode()
        assert ("✔ Correct" if want_correct else "✘ Not quite") in html
    summary = client.get(reverse("assessments:summary", args=[attempt.public_id]))
    assert summary.status_code == 200
    return summary.content.decode()
