"""The student flow through Django's test client: scores, feedback, resume, language."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils.html import escape

from activities.models import Grade, GradingMethod
from assessments.models import Attempt, AttemptState, Question, Response
from tests.quiz_helpers import (
    OPTION_IDS,
    QUESTION_ID,
    answer_all,
    current_form,
    launched_client,
    start,
)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("choose_correct", "expected"),
    [
        (lambda _question: True, 8),
        (lambda _question: False, 0),
        (lambda question: question.position in {1, 3, 4, 8}, 4),
        (lambda question: question.position != 5, 7),
    ],
    ids=["all-right", "all-wrong", "mixed-4", "mixed-7"],
)
def test_score_counts_right_answers(learner_client, placement, learner, choose_correct, expected):
    attempt = start(learner_client, placement.pk)
    summary = answer_all(learner_client, attempt, choose_correct)

    attempt.refresh_from_db()
    assert attempt.state == AttemptState.FINISHED
    assert attempt.score == expected
    assert f"Your score: {expected} of 8" in summary
    assert Response.objects.filter(attempt=attempt, is_correct=True).count() == expected
    grade = Grade.objects.get(user=learner, placement=placement)
    assert grade.score_given == Decimal(expected)
    assert grade.score_maximum == 8


def test_feedback_shows_verdict_right_option_and_explanation(learner_client, placement):
    attempt = start(learner_client, placement.pk)
    question, option_ids = current_form(learner_client, attempt)
    wrong = question.options.filter(is_correct=False).first()
    right = question.options.get(is_correct=True)
    page = learner_client.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question.pk, "option": wrong.pk},
        follow=True,
    )
    html = page.content.decode()
    assert "Not quite" in html
    assert "Right answer" in html
    assert escape(right.text["en"]) in html
    assert "Your answer" in html
    assert escape(wrong.text["en"]) in html
    assert escape(question.explanation["en"]) in html
    assert page.redirect_chain == []  # the answer's response is the feedback page
    feedback = reverse("assessments:feedback", args=[attempt.public_id, question.position])
    assert f'<link rel="canonical" href="{feedback}">' in html


def test_the_feedback_page_carries_the_next_question_to_answer_from_it(learner_client, placement):
    """One page and one click per answer: the feedback, then the next question's form, in the
    attempt's option order and without its right answer; the last feedback leads to results."""
    attempt = start(learner_client, placement.pk)
    url = reverse("assessments:answer", args=[attempt.public_id])
    question, option_ids = current_form(learner_client, attempt)
    for position in range(1, 9):
        assert question.position == position
        page = learner_client.post(
            url, {"question": question.pk, "option": option_ids[0]}, follow=True
        )
        html = page.content.decode()
        assert escape(question.explanation["en"]) in html
        if position == 8:  # the results, opening with this answer's feedback
            assert QUESTION_ID.search(html) is None
            assert page.redirect_chain == []  # the answer's response is the results page
            summary = reverse("assessments:summary", args=[attempt.public_id])
            assert f'<link rel="canonical" href="{summary}?answered=8">' in html
            assert "Your score:" in html
            assert html.index("data-feedback") < html.index('id="strip-heading"')
            break
        following = Question.objects.get(pk=QUESTION_ID.search(html).group(1))
        assert following.position == position + 1
        assert f"Question {position + 1} of 8" in html
        shown = [int(option_id) for option_id in OPTION_IDS.findall(html)]
        attempt.refresh_from_db()
        assert shown == attempt.option_order[str(following.pk)]
        # The review marks the answered question's right option only.
        assert html.count("Right answer") == 1
        question, option_ids = following, shown

    # An earlier feedback page, opened again mid-attempt, offers the question still to answer.
    second = start(learner_client, placement.pk)
    first_question, first_options = current_form(learner_client, second)
    learner_client.post(
        reverse("assessments:answer", args=[second.public_id]),
        {"question": first_question.pk, "option": first_options[0]},
    )
    for _ in range(2):
        following, options = current_form(learner_client, second)
        learner_client.post(
            reverse("assessments:answer", args=[second.public_id]),
            {"question": following.pk, "option": options[0]},
        )
    again = learner_client.get(reverse("assessments:feedback", args=[second.public_id, 1]))
    assert (
        Question.objects.get(pk=QUESTION_ID.search(again.content.decode()).group(1)).position == 4
    )


def test_options_are_shuffled_per_attempt_and_stable_within_it(learner_client, placement):
    attempt = start(learner_client, placement.pk)
    first_view = current_form(learner_client, attempt)[1]
    assert current_form(learner_client, attempt)[1] == first_view
    authored = [
        list(q.options.values_list("pk", flat=True)) for q in attempt.quiz_version.questions.all()
    ]
    shown = [attempt.option_order[str(q.pk)] for q in attempt.quiz_version.questions.all()]
    assert [sorted(ids) for ids in shown] == [sorted(ids) for ids in authored]
    # 8 questions of 4 options: the chance that a shuffle keeps every order is 24**-8.
    assert shown != authored


def test_leaving_and_coming_back_resumes_the_same_attempt_at_the_same_place(
    learner, learner_membership, placement
):
    first_visit = launched_client(learner_membership)
    attempt = start(first_visit, placement.pk)
    for _ in range(3):
        question, option_ids = current_form(first_visit, attempt)
        first_visit.post(
            reverse("assessments:answer", args=[attempt.public_id]),
            {"question": question.pk, "option": option_ids[0]},
        )
    where_we_left, order_we_saw = current_form(first_visit, attempt)

    later_visit = launched_client(learner_membership)  # a new browser session, the next day
    overview = later_visit.get(reverse("assessments:placement", args=[placement.pk]))
    assert "Resume attempt 1" in overview.content.decode()
    resumed = start(later_visit, placement.pk)
    assert resumed.pk == attempt.pk
    assert current_form(later_visit, resumed) == (where_we_left, order_we_saw)
    assert where_we_left.position == 4
    assert Attempt.objects.filter(user=learner).count() == 1


def test_language_switch_shows_translated_question_and_explanation(learner_client, placement):
    attempt = start(learner_client, placement.pk)
    question, option_ids = current_form(learner_client, attempt)

    learner_client.post(reverse("set_language"), {"language": "ru", "next": "/"})
    page = learner_client.get(reverse("assessments:attempt", args=[attempt.public_id]))
    html = page.content.decode()
    assert escape(question.text["ru"]) in html
    assert escape(question.text["en"]) not in html
    assert 'lang="ru"' in html
    assert "Ответить" in html

    feedback = learner_client.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question.pk, "option": option_ids[0]},
        follow=True,
    ).content.decode()
    assert escape(question.explanation["ru"]) in feedback
    assert escape(question.explanation["en"]) not in feedback

    learner_client.post(reverse("set_language"), {"language": "en", "next": "/"})
    english = learner_client.get(
        reverse("assessments:feedback", args=[attempt.public_id, 1])
    ).content.decode()
    assert escape(question.explanation["en"]) in english


def test_accept_language_picks_russian_for_a_new_visitor(learner_client, placement):
    page = learner_client.get(
        reverse("assessments:placement", args=[placement.pk]), HTTP_ACCEPT_LANGUAGE="ru-RU,ru;q=0.9"
    )
    assert "Тест на контрольные точки градиента" in page.content.decode()


@pytest.mark.parametrize(
    ("method", "scores", "expected"),
    [
        (GradingMethod.HIGHEST, [2, 7, 5], Decimal("7")),
        (GradingMethod.LAST, [2, 7, 5], Decimal("5")),
        (GradingMethod.FIRST, [2, 7, 5], Decimal("2")),
        (GradingMethod.AVERAGE, [2, 7, 5], Decimal("4.67")),
    ],
)
def test_grading_method_combines_attempts(
    learner_client, learner, placement, method, scores, expected
):
    quiz = placement.quiz_placement.quiz
    quiz.grading_method = method
    quiz.save()
    for score in scores:
        attempt = start(learner_client, placement.pk)
        answer_all(learner_client, attempt, lambda q, s=score: q.position <= s)
    grade = Grade.objects.get(user=learner, placement=placement)
    assert grade.score_given == expected
    assert grade.attempt_count == 3


def test_attempt_limit_is_enforced_with_a_clear_message(learner_client, learner, placement):
    quiz = placement.quiz_placement.quiz
    quiz.max_attempts = 1
    quiz.save()
    answer_all(learner_client, start(learner_client, placement.pk), lambda _q: True)
    overview = learner_client.get(reverse("assessments:placement", args=[placement.pk]))
    assert "You have used all your attempts." in overview.content.decode()
    refused = learner_client.post(reverse("assessments:start", args=[placement.pk]))
    assert refused.status_code == 403
    assert "You have used all 1 attempts allowed" in refused.content.decode()
    assert Attempt.objects.filter(user=learner).count() == 1


def test_the_activity_page_lists_the_latest_attempts_and_all_on_request(
    learner_client, learner, placement
):
    """A quiz with unlimited attempts may have hundreds: the page lists the latest ten, says
    how many it leaves out, and lists every one when asked."""
    from django.utils import timezone

    from assessments.views import LISTED_ATTEMPTS

    version = placement.quiz_placement.quiz.current_version
    made = LISTED_ATTEMPTS + 3
    Attempt.objects.bulk_create(
        Attempt(
            user=learner,
            placement=placement,
            quiz_version=version,
            number=number,
            state=AttemptState.FINISHED,
            language="en",
            option_order={},
            finished_at=timezone.now(),
            score=number % 9,
            max_score=8,
        )
        for number in range(1, made + 1)
    )
    url = reverse("assessments:placement", args=[placement.pk])
    page = learner_client.get(url).content.decode()
    assert "3 earlier attempts are not listed." in page
    assert f"Review attempt {made}<" in page
    assert "Review attempt 4<" in page
    assert "Review attempt 3<" not in page
    assert "Review attempt 1<" not in page
    everything = learner_client.get(url, {"attempts": "all"}).content.decode()
    assert "not listed" not in everything
    assert all(f"Review attempt {number}<" in everything for number in range(1, made + 1))
    russian = learner_client.get(url, HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    assert "3 более ранние попытки не показаны." in russian
    assert page.index("Review attempt 4<") < page.index(f"Review attempt {made}<")

    # With a new attempt in progress (the latest), the same ten are listed and it is resumed;
    # a finished attempt's summary counts every attempt.
    start(learner_client, placement.pk)
    page = learner_client.get(url).content.decode()
    assert f"Resume attempt {made + 1}" in page
    assert "3 earlier attempts are not listed." in page
    assert "Review attempt 4<" in page
    assert "Review attempt 3<" not in page
    latest = Attempt.objects.get(user=learner, number=made)
    summary = learner_client.get(reverse("assessments:summary", args=[latest.public_id]))
    assert f"{made} attempts" in summary.content.decode()
    assert f"Resume attempt {made + 1}" in summary.content.decode()


def test_pages_need_a_launch(client, placement):
    response = client.get(reverse("assessments:placement", args=[placement.pk]))
    assert response.status_code == 403
    assert "Open this activity from your course" in response.content.decode()


@pytest.mark.usefixtures("quiz")
def test_demo_entry_signs_in_a_new_learner_of_the_demo_course(client):
    response = client.post(reverse("activities:demo-launch"), follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Gradient checkpointing quiz" in html
    assert "Preview" in html
    assert "Start the quiz" in html


def test_a_placement_in_another_course_is_refused(learner_client, quiz):
    from activities.services import place_activity
    from lti.models import Context, ResourceLink

    other_course = Context.objects.create(context_id="other-course", title="Other course")
    elsewhere = ResourceLink(context=other_course, resource_link_id="rl-2", title="Quiz")
    place_activity(elsewhere, f"quiz:{quiz.slug}")
    for response in (
        learner_client.get(reverse("assessments:placement", args=[elsewhere.pk])),
        learner_client.post(reverse("assessments:start", args=[elsewhere.pk])),
    ):
        assert response.status_code == 403
        assert "not enrolled in the course" in response.content.decode()
    assert not Attempt.objects.filter(placement=elsewhere).exists()


def test_a_start_is_answered_by_its_question_and_posted_again_resumes_it(learner_client, placement):
    """The start's response is question 1's page, naming the attempt's address; a reload
    posts the start again and gets the same attempt's question; the start's address read
    (a bookmark, a restored tab) leads to the activity's page."""
    address = reverse("assessments:start", args=[placement.pk])
    first = learner_client.post(address)
    assert first.status_code == 200
    attempt = Attempt.objects.get(placement=placement)
    page = reverse("assessments:attempt", args=[attempt.public_id])
    assert f'<link rel="canonical" href="{page}">' in first.content.decode()
    assert "Question 1 of 8" in first.content.decode()

    again = learner_client.post(address)
    assert again.status_code == 200
    assert f'<link rel="canonical" href="{page}">' in again.content.decode()
    assert Attempt.objects.filter(placement=placement).count() == 1

    read = learner_client.get(address)
    assert read.status_code == 302
    assert read["Location"] == reverse("assessments:placement", args=[placement.pk])


def test_an_attempt_in_progress_with_no_question_left_is_not_found(learner_client, placement):
    """Every question answered and the attempt not finished is a state only the finishing
    answer's transaction sees (made by hand here): its page is not found, not a 500."""
    attempt = start(learner_client, placement.pk)
    for question in Question.objects.filter(version=attempt.quiz_version):
        option = question.options.first()
        attempt.responses.create(question=question, option=option, is_correct=option.is_correct)
    response = learner_client.get(reverse("assessments:attempt", args=[attempt.public_id]))
    assert response.status_code == 404
    assert "This page does not exist" in response.content.decode()
