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

from assessments.models import Option, Response
from tests.quiz_helpers import current_form, start

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
