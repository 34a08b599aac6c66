"""The question and feedback pages come from frames kept once per process, filled with each
request's own values (decision 71). Every page a frame makes must be the page its template
renders for that request: checked for two students whose attempts show the options in
different orders, at every question, in both languages, right and wrong, and after the
last answer; and the frames' marks must not be forgeable by content."""

from __future__ import annotations

import re
import sys

import pytest
from django.conf import settings
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone, translation

from activities.demo import enrol_demo_member
from assessments import frames, selectors
from assessments.models import Attempt, Option, Question
from lti.models import Role
from tests.quiz_helpers import OPTION_IDS, QUESTION_ID, current_form, launched_client, start

pytestmark = pytest.mark.django_db

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture
def two_students(learner_membership, placement):
    """Two students of the course, each with an attempt at the placement started, and no
    frames kept yet."""
    frames.forget_frames()
    students = []
    for membership in (learner_membership, enrol_demo_member(Role.LEARNER)):
        client = launched_client(membership)
        students.append((client, start(client, placement.pk)))
    return students


def _blank_tokens(html: str) -> str:
    return CSRF.sub('name="csrfmiddlewaretoken" value=""', html)


def assert_the_templates_page(response, attempt: Attempt, position: int | None = None) -> str:
    """The framed page is the page the view rendered before frames: its template through
    ``render()`` with the same request (context processors and all), for the same attempt and
    language, from a context written out here as the view wrote it. ``position`` names the
    question whose feedback the page is; without it, the question page. The tokens are
    blanked: each rendering masks the session's token anew (the page's own is checked by
    ``test_a_framed_pages_token_is_the_sessions``). Returns the page."""
    html = response.content.decode()
    view = selectors.own_attempt_view(attempt.user, attempt.public_id, translation.get_language())
    if position is None:
        template = "assessments/question.html"
        context = {
            "view": view,
            "question": view.current_question,
            "page_address": reverse("assessments:attempt", args=[attempt.public_id]),
        }
    else:
        template = "assessments/feedback.html"
        finished = view.attempt.is_finished
        context = {
            "view": view,
            "question": view.question_at(position),
            "finished": finished,
            "next_question": None if finished else view.current_question,
            "page_address": reverse("assessments:feedback", args=[attempt.public_id, position]),
        }
    reference = render(response.wsgi_request, template, context).content.decode()
    assert len(set(CSRF.findall(html))) == 1  # one token a page, in each of its forms
    assert _blank_tokens(html) == _blank_tokens(reference), (template, position)
    return html


def play(client, attempt: Attempt, language: str, right: bool) -> list[str]:
    """Every question page and every feedback page of the attempt, each checked against the
    template's rendering; answers right or wrong by turns, starting with ``right``."""
    pages = []
    address = reverse("assessments:attempt", args=[attempt.public_id])
    with translation.override(language):
        for position in range(1, attempt.max_score + 1):
            html = assert_the_templates_page(
                client.get(address, HTTP_ACCEPT_LANGUAGE=language), attempt
            )
            question = Question.objects.get(pk=QUESTION_ID.search(html).group(1))
            shown = [int(found) for found in OPTION_IDS.findall(html)]
            options = Option.objects.filter(pk__in=shown)
            chosen = next(o for o in options if o.is_correct == (right == (position % 2 == 1)))
            answered = client.post(
                reverse("assessments:answer", args=[attempt.public_id]),
                {"question": question.pk, "option": chosen.pk},
                HTTP_ACCEPT_LANGUAGE=language,
            )
            pages.append(html)
            if position < attempt.max_score:
                pages.append(assert_the_templates_page(answered, attempt, position))
        # The last answer's feedback, read again after the results: its link to them.
        attempt.refresh_from_db()
        assert attempt.is_finished
        feedback = reverse("assessments:feedback", args=[attempt.public_id, attempt.max_score])
        html = assert_the_templates_page(
            client.get(feedback, HTTP_ACCEPT_LANGUAGE=language), attempt, attempt.max_score
        )
        assert reverse("assessments:summary", args=[attempt.public_id]) in html
    return pages


def test_every_framed_page_is_the_page_its_template_renders(two_students, placement):
    (first, first_attempt), (other, other_attempt) = two_students
    # The other student sees each question's options in another order.
    other_attempt.option_order = {
        question: list(reversed(order)) for question, order in first_attempt.option_order.items()
    }
    other_attempt.save()

    first_pages = play(first, first_attempt, "en", right=True)
    kept = len(frames._frames)
    # The same frames serve the other student (made by the first), answering the other way.
    other_pages = play(other, other_attempt, "en", right=False)
    # Feedback frames for the other verdicts only, and the results opening with the other
    # verdict on the last question.
    assert len(frames._frames) == kept + 9
    for mine, theirs in zip(first_pages, other_pages, strict=True):
        assert str(first_attempt.public_id) not in theirs
        assert str(other_attempt.public_id) not in mine
        assert OPTION_IDS.findall(mine) == list(reversed(OPTION_IDS.findall(theirs)))
    assert str(frames.ATTEMPT_MARK) not in "".join(first_pages + other_pages)
    assert str(frames.PLACEMENT_MARK) not in "".join(first_pages + other_pages)
    assert "gc-slot" not in "".join(first_pages + other_pages)

    # In Russian, from frames of its own.
    placement.placement.max_attempts = None
    placement.placement.save()
    russian = play(first, start(first, placement.pk), "ru", right=False)
    assert "Ответить" in russian[0]
    assert "Submit answer" not in russian[0]


def test_content_cannot_spell_a_frames_mark(learner_client, placement):
    """A question whose text spells each mark shows it as text: escaped, not filled."""
    frames.forget_frames()
    attempt = start(learner_client, placement.pk)
    question, _order = current_form(learner_client, attempt)
    spelled = "<gc-slot-csrf> <gc-slot-answered> <gc-slot-options-1-choice>"
    question.text = {**question.text, "en": question.text["en"] + " " + spelled}
    question.save()  # drops the process's layout (decision 53)

    address = reverse("assessments:attempt", args=[attempt.public_id])
    with translation.override("en"):
        html = assert_the_templates_page(learner_client.get(address), attempt)
    assert "&lt;gc-slot-csrf&gt; &lt;gc-slot-answered&gt; &lt;gc-slot-options-1-choice&gt;" in html
    assert len(OPTION_IDS.findall(html)) == len(attempt.option_order[str(question.pk)])


def test_a_frame_is_cut_at_every_mark_and_filled_with_the_requests_values(
    learner_client, placement
):
    attempt = start(learner_client, placement.pk)
    view = selectors.own_attempt_view(attempt.user, attempt.public_id, "en")
    page = (
        f"a<gc-slot-csrf>b/{frames.ATTEMPT_MARK}/c<gc-slot-answered>d"
        f"<gc-slot-options-1-choice>e<gc-slot-csrf>f/{frames.PLACEMENT_MARK}/"
    )
    frame = frames.Frame(page)
    assert frame.cuts == ("a", "b/", "/c", "d", "e", "f/", "/")
    assert frame.slots == (
        ("csrf",),
        ("attempt",),
        ("answered",),
        ("options", 1, "choice"),
        ("csrf",),
        ("placement",),
    )
    filled = frame.fill(view, "TOKEN")
    assert filled.startswith(f"aTOKENb/{attempt.public_id}/c0d<li><label>")
    assert filled.endswith(f"eTOKENf/{placement.pk}/")


def answer_first_question(client, attempt: Attempt):
    """Answers the first question rightly; returns the response, its feedback page."""
    question, _order = current_form(client, attempt)
    response = client.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": question.pk, "option": question.options.get(is_correct=True).pk},
    )
    assert response.status_code == 200
    return response


def test_the_feedback_frame_shows_the_next_question_as_it_is_now(two_students):
    """The feedback page carries the next question's form: edited after one student's
    feedback was framed, the next student's feedback shows the edit."""
    (first, first_attempt), (other, other_attempt) = two_students
    before = answer_first_question(first, first_attempt).content.decode()
    upcoming = Question.objects.get(pk=QUESTION_ID.search(before).group(1))
    upcoming.text = {**upcoming.text, "en": "Edited after the first feedback"}
    upcoming.save()

    with translation.override("en"):
        answered = answer_first_question(other, other_attempt)
        after = assert_the_templates_page(answered, other_attempt, 1)
    assert "Edited after the first feedback" in after


def test_content_alike_in_both_languages_is_framed_per_language(learner_client, placement):
    """A quiz whose title and question read the same in every language still gets the
    page's own words (the button, the progress) in the student's language."""
    frames.forget_frames()
    attempt = start(learner_client, placement.pk)
    question, _order = current_form(learner_client, attempt)
    question.version.title = {"en": "Same title", "ru": "Same title"}
    question.version.save()
    question.text = {"en": "Same words", "ru": "Same words"}
    question.explanation = {"en": "Same reason", "ru": "Same reason"}
    question.save()
    address = reverse("assessments:attempt", args=[attempt.public_id])
    english = learner_client.get(address, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    learner_client.post(reverse("set_language"), {"language": "ru", "next": address})
    russian = learner_client.get(address, HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    assert "Submit answer" in english
    assert "Ответить" in russian
    assert "Submit answer" not in russian


def test_two_placements_of_one_quiz_share_its_frames_each_linking_to_its_own(
    learner_membership, placement, quiz
):
    """The same question in two placements of a course: one frame, and each page links to
    its own placement's activity page."""
    from activities.services import place_activity
    from lti.models import ResourceLink

    frames.forget_frames()
    client = launched_client(learner_membership)
    second = ResourceLink(context=placement.context, resource_link_id="rl-second", title="Again")
    place_activity(second, f"quiz:{quiz.slug}")
    for each in (placement, second):
        attempt = start(client, each.pk)
        with translation.override("en"):
            html = assert_the_templates_page(
                client.get(reverse("assessments:attempt", args=[attempt.public_id])), attempt
            )
        assert reverse("assessments:placement", args=[each.pk]) in html
    assert len(frames._frames) == 1


def test_a_retitled_quiz_is_framed_anew(two_students):
    (first, first_attempt), (other, other_attempt) = two_students
    current_form(first, first_attempt)
    version = first_attempt.quiz_version
    version.title = {**version.title, "en": "Retitled between two students"}
    version.save()
    html = other.get(reverse("assessments:attempt", args=[other_attempt.public_id])).content
    assert "Retitled between two students" in html.decode()


def test_a_process_keeps_at_most_its_number_of_frames_the_oldest_going_first(monkeypatch):
    """Four threads of one worker making frames at once: none fails, and no more than the
    bound are kept, the newest among them."""
    import threading

    frames.forget_frames()
    monkeypatch.setattr(frames, "MAX_FRAMES", 8)
    failures = []

    def make(thread: int) -> None:
        try:
            for number in range(300):
                frames._frame((thread, number), lambda: "<p>page</p>")
        except Exception as error:  # noqa: BLE001 - any failure is the test's finding
            failures.append(error)

    threads = [threading.Thread(target=make, args=(thread,)) for thread in range(4)]
    # Threads switched as often as the interpreter allows, so that their evictions meet
    # (without the lock, two of them evicted the same frame: KeyError, watched).
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch_interval)
    assert failures == []
    assert len(frames._frames) == 8
    assert all(number >= 290 for _thread, number in frames._frames)
    frames.forget_frames()


def test_a_framed_pages_token_is_the_sessions(learner_client, placement):
    """Each framed page carries a token that the CSRF check takes for this session's (the
    question page's, then the feedback page's), sets the CSRF cookie where the browser had
    none, and a forged token is refused with nothing recorded."""
    attempt = start(learner_client, placement.pk)
    learner_client.handler.enforce_csrf_checks = True
    learner_client.cookies.pop(settings.CSRF_COOKIE_NAME, None)
    address = reverse("assessments:attempt", args=[attempt.public_id])
    answer = reverse("assessments:answer", args=[attempt.public_id])
    page = learner_client.get(address)
    assert settings.CSRF_COOKIE_NAME in page.cookies
    for position in (1, 2):
        html = page.content.decode()
        (token,) = set(CSRF.findall(html))
        question = Question.objects.get(pk=QUESTION_ID.search(html).group(1))
        option = int(OPTION_IDS.findall(html)[0])
        forged = learner_client.post(
            answer, {"question": question.pk, "option": option, "csrfmiddlewaretoken": "A" * 64}
        )
        assert forged.status_code == 403
        assert attempt.responses.count() == position - 1
        page = learner_client.post(
            answer, {"question": question.pk, "option": option, "csrfmiddlewaretoken": token}
        )
        assert page.status_code == 200
        assert attempt.responses.count() == position


def test_the_last_feedback_links_to_the_results_only_once_the_attempt_finished(
    learner_client, placement
):
    """The last question's feedback while its answer is recorded and the attempt not yet
    finished (inside the finishing answer's transaction) has neither a next question nor the
    results' link; once finished, it has the link: the frames differ only by the attempt's
    state, which must be in their key."""
    from assessments.models import AttemptState

    frames.forget_frames()
    attempt = start(learner_client, placement.pk)
    for _position in range(attempt.max_score - 1):
        answer_first_question(learner_client, attempt)
    question, order = current_form(learner_client, attempt)
    option = question.options.get(pk=order[0])
    attempt.responses.create(question=question, option=option, is_correct=option.is_correct)
    feedback = reverse("assessments:feedback", args=[attempt.public_id, attempt.max_score])
    results = reverse("assessments:summary", args=[attempt.public_id])
    with translation.override("en"):
        unfinished = assert_the_templates_page(
            learner_client.get(feedback), attempt, attempt.max_score
        )
        assert results not in unfinished
        Attempt.objects.filter(pk=attempt.pk).update(
            state=AttemptState.FINISHED, finished_at=timezone.now(), score=0
        )
        finished = assert_the_templates_page(
            learner_client.get(feedback), attempt, attempt.max_score
        )
    assert results in finished
