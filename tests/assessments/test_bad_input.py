"""Bad input gets a 4xx with a clear message and changes nothing."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from activities.demo import enrol_demo_member
from activities.models import Grade
from assessments.models import Attempt, Option, Question, Response
from tests.quiz_helpers import current_form, launched_client, start

pytestmark = pytest.mark.django_db


def writes(queries: CaptureQueriesContext) -> list[str]:
    """The statements that wrote (the session's own, in Redis, are not SQL)."""
    return [
        query["sql"]
        for query in queries.captured_queries
        if query["sql"].lstrip().split()[0].upper() in ("INSERT", "UPDATE", "DELETE")
    ]


def snapshot() -> dict:
    return {
        "attempts": list(Attempt.objects.order_by("pk").values()),
        "responses": list(Response.objects.order_by("pk").values()),
        "grades": list(Grade.objects.order_by("pk").values()),
    }


@pytest.fixture
def attempt_with_one_answer(learner_client, placement) -> Attempt:
    attempt = start(learner_client, placement.pk)
    question, option_ids = current_form(learner_client, attempt)
    learner_client.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question.pk, "option": option_ids[0]},
    )
    return attempt


def post_answer(client: Client, attempt: Attempt, data: dict):
    return client.post(reverse("assessments:answer", args=[attempt.public_id]), data)


def test_answer_to_a_question_outside_the_attempt(learner_client, attempt_with_one_answer, quiz):
    from assessments.models import QuizVersion

    other_version = QuizVersion.objects.create(
        quiz=quiz, number=99, content_hash="x", title={}, intro={}, source_language="en"
    )
    foreign = Question.objects.create(
        version=other_version, position=2, key="q2", source_language="en", text={}, explanation={}
    )
    foreign_option = Option.objects.create(question=foreign, position=1, key="a", text={})
    before = snapshot()
    response = post_answer(
        learner_client,
        attempt_with_one_answer,
        {"question": foreign.pk, "option": foreign_option.pk},
    )
    assert response.status_code == 400
    assert "That question is not part of your attempt." in response.content.decode()
    assert snapshot() == before


def test_option_of_another_question(learner_client, attempt_with_one_answer):
    question, _ = current_form(learner_client, attempt_with_one_answer)
    other_option = (
        Option.objects.filter(question__version=question.version).exclude(question=question).first()
    )
    before = snapshot()
    response = post_answer(
        learner_client,
        attempt_with_one_answer,
        {"question": question.pk, "option": other_option.pk},
    )
    assert response.status_code == 400
    assert "does not belong to this question" in response.content.decode()
    assert snapshot() == before


def test_second_answer_to_an_answered_question(learner_client, attempt_with_one_answer):
    answered = attempt_with_one_answer.responses.get()
    other = answered.question.options.exclude(pk=answered.option_id).first()
    before = snapshot()
    response = post_answer(
        learner_client,
        attempt_with_one_answer,
        {"question": answered.question_id, "option": other.pk},
    )
    assert response.status_code == 409
    assert "already answered" in response.content.decode()
    assert snapshot() == before


def test_the_same_answer_posted_again_shows_its_feedback_and_changes_nothing(
    learner_client, attempt_with_one_answer
):
    """A reload of the page the answer's POST returned (no JavaScript to give it its own
    address) posts the form again: the answer already stands, so its feedback again."""
    answered = attempt_with_one_answer.responses.get()
    repeated = {"question": answered.question_id, "option": answered.option_id}
    before = snapshot()
    with CaptureQueriesContext(connection) as queries:
        response = post_answer(learner_client, attempt_with_one_answer, repeated)
    assert response.status_code == 200
    assert "data-feedback" in response.content.decode()
    assert "Question 2 of 8" in response.content.decode()
    assert writes(queries) == []
    assert snapshot() == before


def test_answer_ahead_of_the_current_question(learner_client, attempt_with_one_answer):
    later = attempt_with_one_answer.quiz_version.questions.get(position=5)
    before = snapshot()
    response = post_answer(
        learner_client,
        attempt_with_one_answer,
        {"question": later.pk, "option": later.options.first().pk},
    )
    assert response.status_code == 409
    assert "question 2 comes next" in response.content.decode()
    assert snapshot() == before


def test_another_users_attempt_id(attempt_with_one_answer):
    client = launched_client(enrol_demo_member())
    question, option_ids = current_form_of(attempt_with_one_answer)
    before = snapshot()
    for response in (
        client.get(reverse("assessments:attempt", args=[attempt_with_one_answer.public_id])),
        client.get(reverse("assessments:summary", args=[attempt_with_one_answer.public_id])),
        client.get(reverse("assessments:feedback", args=[attempt_with_one_answer.public_id, 1])),
        post_answer(client, attempt_with_one_answer, {"question": question, "option": option_ids}),
    ):
        assert response.status_code == 404
        html = response.content.decode()
        assert "not yours to see" in html
        first_question = attempt_with_one_answer.quiz_version.questions.get(position=1)
        assert first_question.text["en"] not in html
    assert snapshot() == before


def current_form_of(attempt: Attempt) -> tuple[int, int]:
    question = attempt.quiz_version.questions.get(position=attempt.responses.count() + 1)
    return question.pk, question.options.first().pk


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "does not say which question"),
        ({"question": "abc", "option": "1"}, "does not say which question"),
        ({"question": "-4", "option": "1"}, "does not say which question"),
        ({"question": "99999999999999999999999", "option": "1"}, "does not say which question"),
        ({"question": "{q}"}, "Choose one of the options"),
        ({"question": "{q}", "option": ""}, "Choose one of the options"),
        ({"question": "{q}", "option": "1.5"}, "Choose one of the options"),
        ({"question": "{q}", "option": "\x00"}, "Choose one of the options"),
    ],
)
def test_malformed_post(learner_client, attempt_with_one_answer, data, message):
    question_pk, _ = current_form_of(attempt_with_one_answer)
    data = {key: value.replace("{q}", str(question_pk)) for key, value in data.items()}
    before = snapshot()
    response = post_answer(learner_client, attempt_with_one_answer, data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert snapshot() == before


def test_answer_to_a_finished_attempt(learner_client, placement):
    from tests.quiz_helpers import answer_all

    attempt = start(learner_client, placement.pk)
    answer_all(learner_client, attempt, lambda _q: True)
    question = attempt.quiz_version.questions.get(position=8)
    wrong = question.options.filter(is_correct=False).first()
    before = snapshot()
    response = post_answer(learner_client, attempt, {"question": question.pk, "option": wrong.pk})
    assert response.status_code == 409
    assert "This attempt is finished" in response.content.decode()
    assert snapshot() == before

    # The last answer itself again (a reload of the results its POST returned): the results,
    # opening with its feedback, and nothing recorded or graded again: no statement writes.
    right = question.options.get(is_correct=True)
    with CaptureQueriesContext(connection) as queries:
        response = post_answer(
            learner_client, attempt, {"question": question.pk, "option": right.pk}
        )
    assert writes(queries) == []
    assert response.status_code == 200
    html = response.content.decode()
    assert "Your score: 8 of 8" in html
    assert "data-feedback" in html
    assert snapshot() == before


def test_a_summary_asked_to_open_with_no_such_answer_shows_the_results_alone(
    learner_client, placement
):
    """?answered= names the question whose feedback the results open with; anything else
    there (not a number, too long to be one, no such question) leaves the results as they are."""
    from tests.quiz_helpers import answer_all

    attempt = start(learner_client, placement.pk)
    answer_all(learner_client, attempt, lambda _q: True)
    url = reverse("assessments:summary", args=[attempt.public_id])
    opened = learner_client.get(url, {"answered": "8"}).content.decode()
    assert "data-feedback" in opened
    for value in ("abc", "9" * 5000, "-1", "0", "9", ""):
        response = learner_client.get(url, {"answered": value})
        assert response.status_code == 200
        html = response.content.decode()
        assert "Your score: 8 of 8" in html
        assert "data-feedback" not in html


def test_unknown_attempt_and_wrong_methods(learner_client):
    missing = "00000000-0000-0000-0000-000000000000"
    assert learner_client.get(f"/attempts/{missing}/").status_code == 404
    assert learner_client.get("/attempts/not-a-uuid/").status_code == 404
    assert learner_client.put(f"/attempts/{missing}/answer/").status_code == 405
    # A GET of the answer's address (a browser without JavaScript shows it after an answer)
    # goes to where the attempt is; someone else's, or none, is not found there.
    assert learner_client.get(f"/attempts/{missing}/answer/", follow=True).status_code == 404


def test_the_answers_address_opened_leads_to_where_the_attempt_is(
    learner_client, attempt_with_one_answer
):
    url = reverse("assessments:answer", args=[attempt_with_one_answer.public_id])
    page = learner_client.get(url, follow=True)
    assert page.status_code == 200
    assert "Question 2 of 8" in page.content.decode()
    other = launched_client(enrol_demo_member())
    assert other.get(url, follow=True).status_code == 404


def test_post_without_csrf_token_is_refused_with_a_message(learner, placement):
    client = Client(enforce_csrf_checks=True)
    client.force_login(learner)
    before = snapshot()
    response = client.post(reverse("assessments:start", args=[placement.pk]))
    assert response.status_code == 403
    assert "security token" in response.content.decode()
    assert snapshot() == before
