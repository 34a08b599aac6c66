"""The results page comes from a frame kept once per process, as the question and feedback
pages do (decision 74): what differs between two attempts with the same last verdict (the
attempt's number, score and addresses, its facts and grade, its buttons, its verdicts and
reviewed options) goes into the frame's slots, each fact formatted for its request
(decision 77). Every results page a frame makes must be the
page its template renders for that request, whatever the attempt, its verdicts, the
student's grade, the buttons the policy leaves and the language."""

from __future__ import annotations

import re

import pytest
from django.shortcuts import render
from django.urls import reverse
from django.utils import translation

from activities.demo import enrol_demo_member
from activities.models import Grade
from assessments import frames, selectors
from assessments.models import Attempt, Question
from lti.models import Role
from tests.quiz_helpers import current_form, launched_client, start

pytestmark = pytest.mark.django_db

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _blank_tokens(html: str) -> str:
    return CSRF.sub('name="csrfmiddlewaretoken" value=""', html)


def assert_the_templates_results(response, attempt: Attempt, answered: int | None = None) -> str:
    """The framed results page is the page its template renders through ``render()`` with
    the same request, for the same attempt, overview and language, from a context written
    out here as the view writes it; ``answered`` is the position of the answer the page
    opens with (the last answer's response). Tokens are blanked (each rendering masks the
    session's anew). Returns the page."""
    assert response.status_code == 200
    html = response.content.decode()
    language = translation.get_language()
    view = selectors.own_attempt_view(attempt.user, attempt.public_id, language)
    overview = selectors.placement_overview(
        user=attempt.user, placement_id=attempt.placement_id, language=language, listed=0
    )
    address = reverse("assessments:summary", args=[attempt.public_id])
    if answered is not None:
        address += f"?answered={answered}"
    context = {
        "view": view,
        "overview": overview,
        "just_answered": None if answered is None else view.question_at(answered),
        "page_address": address,
    }
    reference = render(response.wsgi_request, "assessments/summary.html", context)
    assert len(set(CSRF.findall(html))) == 1  # one token a page, in each of its forms
    assert _blank_tokens(html) == _blank_tokens(reference.content.decode())
    assert "<gc-slot" not in html
    assert str(frames.ATTEMPT_MARK) not in html
    assert str(frames.PLACEMENT_MARK) not in html
    return html


def _results_frames() -> int:
    return sum(1 for key in frames._frames if key[0] == frames.RESULTS_TEMPLATE)


def finish(client, attempt: Attempt, right: set[int], language: str = "en"):
    """Answers every question, rightly at the positions in ``right``; returns the last
    answer's response (the results)."""
    for position in range(1, attempt.max_score + 1):
        question, order = current_form(client, attempt)
        options = question.options.filter(pk__in=order)
        chosen = options.filter(is_correct=position in right).first()
        response = client.post(
            reverse("assessments:answer", args=[attempt.public_id]),
            {"question": question.pk, "option": chosen.pk},
            HTTP_ACCEPT_LANGUAGE=language,
        )
    attempt.refresh_from_db()
    assert attempt.is_finished
    return response


def _results(client, attempt: Attempt, language: str = "en"):
    return client.get(
        reverse("assessments:summary", args=[attempt.public_id]), HTTP_ACCEPT_LANGUAGE=language
    )


def test_every_framed_results_page_is_the_page_its_template_renders(learner_membership, placement):
    frames.forget_frames()
    placement.placement.max_attempts = 3
    placement.placement.save()
    first = launched_client(learner_membership)
    other = launched_client(enrol_demo_member(Role.LEARNER))
    first_attempt, other_attempt = start(first, placement.pk), start(other, placement.pk)
    # The other student sees each question's options in another order.
    other_attempt.option_order = {
        question: list(reversed(order)) for question, order in first_attempt.option_order.items()
    }
    other_attempt.save()

    with translation.override("en"):
        # Right at odd positions; the last answer's response opens with its feedback.
        mine = assert_the_templates_results(
            finish(first, first_attempt, {1, 3, 5, 7}), first_attempt, 8
        )
        assert _results_frames() == 1
        # The other student, right at the same positions in their own order of options: the
        # same results frame (the same last verdict), filled with their own attempt.
        theirs = assert_the_templates_results(
            finish(other, other_attempt, {1, 3, 5, 7}), other_attempt, 8
        )
        assert _results_frames() == 1
        assert str(first_attempt.public_id) not in theirs
        assert str(other_attempt.public_id) not in mine
        assert "Your score: 4 of 8" in mine

        # Read again (no answer to open with), then while another attempt is in progress
        # (its resume button), and once every attempt allowed is used.
        assert "start-another" in assert_the_templates_results(
            _results(first, first_attempt), first_attempt
        )
        second = start(first, placement.pk)
        resumed = assert_the_templates_results(_results(first, first_attempt), first_attempt)
        assert "Resume attempt 2" in resumed
        # All right: the last verdict right, another frame.
        assert "Your score: 8 of 8" in assert_the_templates_results(
            finish(first, second, set(range(1, 9))), second, 8
        )
        assert _results_frames() == 4  # and those read again above: two buttons
        third = start(first, placement.pk)
        # The resume button's frame again, for another attempt in progress.
        resumed = assert_the_templates_results(_results(first, first_attempt), first_attempt)
        assert "Resume attempt 3" in resumed
        last = assert_the_templates_results(finish(first, third, set()), third, 8)
        assert "You have used all your attempts." in last
        assert "Review of attempt 3" in last

        # A grade the instructor set, with a reason shown to the student (escaped).
        Grade.objects.filter(user=first_attempt.user).update(
            is_overridden=True,
            override_reason="<b>late work</b>",
            override_reason_shared=True,
        )
        overridden = assert_the_templates_results(_results(first, third), third)
        assert "&lt;b&gt;late work&lt;/b&gt;" in overridden

    # In Russian, from a frame of its own.
    with translation.override("ru"):
        russian = assert_the_templates_results(_results(other, other_attempt, "ru"), other_attempt)
    assert "Ваш результат: 4 из 8" in russian
    assert "Начать ещё одну попытку" in russian
    assert "Start another attempt" not in russian


def test_two_placements_share_a_results_frame_each_starting_its_own(
    learner_membership, placement, quiz
):
    """The results of the same quiz in two placements of a course: one frame, and each page
    starts the next attempt in its own placement."""
    from activities.services import place_activity
    from lti.models import ResourceLink

    frames.forget_frames()
    client = launched_client(learner_membership)
    second = ResourceLink(context=placement.context, resource_link_id="rl-second", title="Again")
    place_activity(second, f"quiz:{quiz.slug}")
    for each, other in ((placement, second), (second, placement)):
        attempt = start(client, each.pk)
        with translation.override("en"):
            html = assert_the_templates_results(finish(client, attempt, {1, 2}), attempt, 8)
        assert reverse("assessments:start", args=[each.pk]) in html
        assert reverse("assessments:start", args=[other.pk]) not in html
    assert _results_frames() == 1


def test_the_facts_are_in_the_sites_time_zone_and_the_readers_plural_forms(
    learner_membership, placement, settings
):
    """The facts of a framed results page are formatted for each request: the times in the
    site's time zone (not the database's UTC), the count of attempts in the plural form of
    the reader's language, a frame for one attempt and another for several."""
    from datetime import datetime, timedelta
    from zoneinfo import ZoneInfo

    frames.forget_frames()
    settings.TIME_ZONE = "Asia/Vladivostok"  # UTC+10 all year
    placement.placement.max_attempts = 0
    placement.placement.save()
    client = launched_client(learner_membership)
    attempts = []
    for count in range(1, 6):
        attempt = start(client, placement.pk)
        finish(client, attempt, {1, 2})
        started = datetime(2026, 3, 1, 23, 30, tzinfo=ZoneInfo("UTC")) + timedelta(days=count)
        Attempt.objects.filter(pk=attempt.pk).update(
            started_at=started, finished_at=started + timedelta(minutes=5, seconds=7)
        )
        attempts.append(attempt)
        with translation.override("ru"):
            html = assert_the_templates_results(_results(client, attempt, "ru"), attempt)
        # 23:30 UTC on 1 March + count days is 09:30 the next morning in Vladivostok.
        assert f'datetime="2026-03-{count + 2:02d}T09:30:00+10:00"' in html
        assert "5 минут 7 секунд" in html
        plural = {1: None, 2: "2 попытки", 3: "3 попытки", 4: "4 попытки", 5: "5 попыток"}
        if plural[count]:
            assert plural[count] in html
        else:
            method = html.split('data-fact="method">')[1].split("</span>")[0]
            assert method == "Лучшая попытка"  # the method alone
    # The first attempt read again now that five are counted: the several attempts' frame,
    # with the count of five.
    with translation.override("ru"):
        first = assert_the_templates_results(_results(client, attempts[0], "ru"), attempts[0])
    assert "5 попыток" in first
    # One attempt or several, each opening with the last answer's feedback or read again.
    assert _results_frames() == 4


def test_content_cannot_spell_a_results_frames_mark(learner_client, placement):
    """A question whose text spells the results page's marks shows them as text, and the
    page has each of its parts once."""
    frames.forget_frames()
    attempt = start(learner_client, placement.pk)
    question, _order = current_form(learner_client, attempt)
    spelled = "<gc-slot-number> <gc-slot-score> <gc-slot-fact-percent> <gc-slot-part-review>"
    question = Question.objects.get(pk=question.pk)
    question.text = {**question.text, "en": question.text["en"] + " " + spelled}
    question.save()  # drops the process's layout (decision 53)
    with translation.override("en"):
        html = assert_the_templates_results(
            finish(learner_client, attempt, {1}), attempt, attempt.max_score
        )
    escaped = "&lt;gc-slot-number&gt; &lt;gc-slot-score&gt; &lt;gc-slot-fact-percent&gt;"
    assert escaped in html
    assert html.count('id="attempt-facts"') == 1
    assert html.count('class="review-list"') == 1


def test_the_results_pages_token_starts_another_attempt(learner_client, placement):
    """The results page's forms carry a token that the CSRF check takes for this session's:
    its "Start another attempt" starts one; a forged token starts nothing."""
    from django.conf import settings

    attempt = start(learner_client, placement.pk)
    finish(learner_client, attempt, {1})
    learner_client.handler.enforce_csrf_checks = True
    learner_client.cookies.pop(settings.CSRF_COOKIE_NAME, None)
    page = _results(learner_client, attempt)
    assert settings.CSRF_COOKIE_NAME in page.cookies
    (token,) = set(CSRF.findall(page.content.decode()))
    start_address = reverse("assessments:start", args=[placement.pk])
    forged = learner_client.post(start_address, {"csrfmiddlewaretoken": "A" * 64})
    assert forged.status_code == 403
    assert Attempt.objects.filter(user=attempt.user).count() == 1
    started = learner_client.post(start_address, {"csrfmiddlewaretoken": token})
    assert started.status_code == 200
    assert Attempt.objects.filter(user=attempt.user).count() == 2


def test_a_results_frame_is_cut_at_its_marks_and_filled_with_the_attempts_values(
    learner_client, placement
):
    attempt = start(learner_client, placement.pk)
    finish(learner_client, attempt, {1, 2})
    second = start(learner_client, placement.pk)  # in progress: the resume button's number
    view = selectors.own_attempt_view(attempt.user, attempt.public_id, "en")
    overview = selectors.placement_overview(
        user=attempt.user, placement_id=placement.pk, language="en", listed=0
    )
    frame = frames.Frame(
        "a<gc-slot-number>b<gc-slot-score>c<gc-slot-max-score>d<gc-slot-resume>"
        "e<gc-slot-fact-percent>%<gc-slot-fact-grade-given>f<gc-slot-part-strip>g"
    )
    assert frame.cuts == ("a", "b", "c", "d", "e", "%", "f", "g")
    assert frame.slots == (
        ("number",),
        ("score",),
        ("max-score",),
        ("resume",),
        ("fact", "percent"),
        ("fact", "grade-given"),
        ("part", "strip"),
    )
    with translation.override("en"):
        filled = frame.fill(view, "TOKEN", overview)
    assert filled.startswith(f'a1b2c8d{second.number}e25.0%2.00f<li><a href="#question-1"')
    assert filled.endswith("Question 8: Not quite</span></a></li>\ng")
    with translation.override("ru"):
        assert "e25,0%2,00f" in frame.fill(view, "TOKEN", overview)
    with pytest.raises(LookupError):
        frames.results_part_mark("grades")
    with pytest.raises(LookupError):
        frames.results_fact_mark("grades")
