"""The loop's pages keep what shows only a version's content, made once per process
(decision 50): fragments of the pages and each option's item. What must never come from
another request's: the order this attempt shows, what this student chose, the mark this
answer has now, the reader's language, and anything of the session (CSRF token, the page's
own address)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import translation

from assessments import selectors
from assessments.models import Option, Response
from tests.quiz_helpers import answer_all, current_form, start

pytestmark = pytest.mark.django_db

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
NEXT = re.compile(r'name="next" type="hidden" value="([^"]*)"')


def chosen_text(html: str) -> str:
    """The text of the option the page marks as the student's answer."""
    review = html.split('class="options review"')[1].split("</ul>")[0]
    found = re.search(r'<li class="[^"]*chosen">\s*<span>(.*?)</span>', review, re.S)
    assert found, review
    return found.group(1)


def answer(client, attempt, option: Option):
    return client.post(
        reverse("assessments:answer", args=[attempt.public_id]),
        {"question": option.question_id, "option": option.pk},
        follow=True,
    )


def test_each_page_shows_its_own_order_choice_mark_language_and_session(learner_client, placement):
    first = start(learner_client, placement.pk)
    question, order = current_form(learner_client, first)
    options = {option.pk: option for option in Option.objects.filter(question=question)}
    right = next(option for option in options.values() if option.is_correct)
    wrong = next(option for option in options.values() if not option.is_correct)
    page = answer(learner_client, first, right).content.decode()
    assert "✔ Correct" in page
    assert chosen_text(page) == right.text["en"]

    # A second attempt shown in the same order, its answer another: the same question's
    # fragments, made for the first attempt, must not answer for it.
    placement.placement.max_attempts = None
    placement.placement.save()
    first.state = "finished"
    first.save()
    second = start(learner_client, placement.pk)
    second.option_order = first.option_order
    second.save()
    assert current_form(learner_client, second) == (question, order)
    page = answer(learner_client, second, wrong).content.decode()
    assert "✘ Not quite" in page
    assert chosen_text(page) == wrong.text["en"]

    # A regrade that flips the answer's mark: the page follows the mark, not the fragment
    # cached before.
    Response.objects.filter(attempt=second).update(is_correct=True)
    feedback = reverse("assessments:feedback", args=[second.public_id, question.position])
    page = learner_client.get(feedback).content.decode()
    assert "✔ Correct" in page
    assert chosen_text(page) == wrong.text["en"]

    # The same fragments in Russian, and the session's own token and address on every page.
    with translation.override("ru"):
        page = learner_client.get(feedback, HTTP_ACCEPT_LANGUAGE="ru").content.decode()
    assert "✔ Верно" in page
    assert chosen_text(page) == wrong.text["ru"]
    assert "Ваш ответ" in page
    assert "Your answer" not in page
    assert "Submit answer" not in page
    assert "Ответить" in page
    # The layout's header, kept per language: the English one was made on the pages before.
    assert "Перейти к содержимому" in page
    assert re.search(r'value="ru" lang="ru"\s+aria-describedby="language-label"\s+'
                     r'aria-pressed="true"', page)  # fmt: skip
    assert NEXT.search(page).group(1) == feedback

    attempt_page = reverse("assessments:attempt", args=[second.public_id])
    pages = [learner_client.get(attempt_page).content.decode() for _ in range(2)]
    assert NEXT.search(pages[0]).group(1) == attempt_page
    tokens = [set(CSRF.findall(page)) for page in pages]
    # The language form's and the answer form's token: this request's, masked afresh.
    assert all(len(found) == 1 for found in tokens)
    assert tokens[0] != tokens[1]


def reviewed(html: str) -> list[tuple[str, str]]:
    """The results' review: each question's verdict and the text of the option marked as the
    student's answer, in order."""
    review = html.split('class="review-list"')[1].split("</ol>")[0]
    items = review.split('<li id="question-')[1:]
    return [
        (
            re.search(r'class="verdict[^"]*">(.*?)</p>', item, re.S).group(1).strip(),
            re.search(r'<li class="[^"]*chosen">\s*<span>(.*?)</span>', item, re.S).group(1),
        )
        for item in items
    ]


def test_the_results_review_shows_each_attempts_own_answers(learner_client, placement):
    """Each reviewed question is rendered once per process (decision 52): two attempts in
    the same order with opposite answers, then a regrade, each see their own."""
    placement.placement.max_attempts = None
    placement.placement.save()
    first = start(learner_client, placement.pk)
    answer_all(learner_client, first, lambda _question: True)
    second = start(learner_client, placement.pk)
    second.option_order = first.option_order
    second.save()
    answer_all(learner_client, second, lambda question: question.position % 2 == 0)

    def review(attempt, language="en"):
        url = reverse("assessments:summary", args=[attempt.public_id])
        with translation.override(language):
            return reviewed(learner_client.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode())

    chosen = {
        response.question.position: response.option
        for response in Response.objects.filter(attempt=second).select_related("question", "option")
    }
    assert review(first) == [
        ("✔ Correct", option.text["en"])
        for _position, option in sorted(
            (r.question.position, r.option)
            for r in Response.objects.filter(attempt=first).select_related("question", "option")
        )
    ]
    assert review(second) == [
        ("✔ Correct" if position % 2 == 0 else "✘ Not quite", chosen[position].text["en"])
        for position in sorted(chosen)
    ]
    page = learner_client.get(reverse("assessments:summary", args=[second.public_id]))
    strip = re.findall(r'href="#question-(\d+)"[^>]*data-verdict="(\w+)"', page.content.decode())
    assert strip == [
        (str(position), "correct" if position % 2 == 0 else "wrong") for position in range(1, 9)
    ]
    assert review(second, "ru")[0] == ("✘ Неверно", chosen[1].text["ru"])
    # A regrade that marks question 1's answer right: its review follows.
    Response.objects.filter(attempt=second, question__position=1).update(is_correct=True)
    assert review(second)[0] == ("✔ Correct", chosen[1].text["en"])


def test_a_question_text_cannot_take_the_options_slot(learner_client, placement):
    """The options go into a slot of the part rendered once (decision 52); a text that
    spells the slot comes out escaped, and the options stay where they belong."""
    question = placement.quiz_placement.quiz.current_version.questions.get(position=1)
    question.text = {**question.text, "en": "Where do <gc-options-slot> options go?"}
    question.save()
    selectors._layouts.pop(question.version_id, None)  # a version read before the edit
    attempt = start(learner_client, placement.pk)
    page = answer_all(learner_client, attempt, lambda _question: True)
    first = page.split('<li id="question-1"')[1].split('<li id="question-2"')[0]
    assert "Where do &lt;gc-options-slot&gt; options go?" in first
    assert "gc-options-slot>" not in first.replace("gc-options-slot&gt;", "")
    right = Option.objects.get(question=question, is_correct=True)
    assert reviewed(page)[0] == ("✔ Correct", right.text["en"])


def test_a_corrected_wording_reaches_every_process(learner_client, placement, monkeypatch):
    """A question's wording may be corrected in the admin; the version's layout is kept per
    process. The process that saved it shows the correction at once; any other (here: a
    change saved without the signal, as another process's is to this one) within
    LAYOUT_SECONDS, and the pages' kept parts follow the text."""
    attempt = start(learner_client, placement.pk)
    question, _order = current_form(learner_client, attempt)
    page_url = reverse("assessments:attempt", args=[attempt.public_id])
    assert question.text["en"] in learner_client.get(page_url).content.decode()

    elsewhere = {**question.text, "en": "Corrected in another process?"}
    type(question).objects.filter(pk=question.pk).update(text=elsewhere)
    assert "Corrected in another process?" not in learner_client.get(page_url).content.decode()
    later = selectors._clock() + selectors.LAYOUT_SECONDS
    monkeypatch.setattr(selectors, "_clock", lambda: later)
    assert "Corrected in another process?" in learner_client.get(page_url).content.decode()

    question.refresh_from_db()
    question.text = {**question.text, "en": "Corrected here?"}
    question.save()
    page = learner_client.get(page_url).content.decode()
    assert "Corrected here?" in page
    right = Option.objects.get(question=question, is_correct=True)
    page = answer(learner_client, attempt, right).content.decode()
    assert "Corrected here?" in page
    assert chosen_text(page) == right.text["en"]


@pytest.mark.usefixtures("quiz")
def test_the_quiz_script_is_on_the_quiz_s_answering_pages_only(learner_client, placement):
    """quiz.js answers a question in place; the site's layout names no script of a kind's,
    so the other pages (the home page, the activity's page) do not load it."""
    script = "assessments/quiz.js"
    attempt = start(learner_client, placement.pk)
    question = learner_client.get(reverse("assessments:attempt", args=[attempt.public_id]))
    assert script in question.content.decode()
    option = Option.objects.filter(question=current_form(learner_client, attempt)[0]).first()
    assert script in answer(learner_client, attempt, option).content.decode()  # the feedback
    activity = learner_client.get(reverse("assessments:placement", args=[placement.pk]))
    assert activity.status_code == 200
    assert script not in activity.content.decode()
    assert script not in learner_client.get(reverse("home")).content.decode()
