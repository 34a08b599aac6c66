"""The quiz in a real browser: headless Chromium against a live server."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from assessments.models import Attempt, Option
from tests.browser import axe_violations, tab_to

pytestmark = pytest.mark.browser


def correct_option_text(page: Page) -> str:
    question_id = page.locator("input[name=question]").input_value()
    return Option.objects.get(question_id=question_id, is_correct=True).text["en"]


def test_student_answers_sees_each_explanation_appear_and_finishes_with_a_score(page, live_server):
    page.goto(live_server.url)
    page.get_by_role("button", name="Start the demo quiz as a student").click()
    page.get_by_role("button", name="Start the quiz").click()

    page.evaluate("window.stillTheSamePage = true")
    expect(page.locator("#progress")).to_have_text("Question 1 of 8")
    for position in range(1, 9):
        right = correct_option_text(page)
        if position == 2:  # one wrong answer, to see that feedback too
            page.locator("label", has_not_text=right).first.click()
        else:
            page.get_by_label(right, exact=True).check()
        page.get_by_role("button", name="Submit answer").click()

        feedback = page.locator("[data-feedback]")
        expect(feedback).to_be_visible()
        expect(feedback.locator("h2")).to_have_text("✘ Not quite" if position == 2 else "✔ Correct")
        expect(feedback.locator(".tag-right")).to_have_count(1)
        expect(feedback.locator("li.right")).to_contain_text(right)
        expect(feedback.locator(".explanation")).not_to_be_empty()
        expect(feedback.locator("#verdict")).to_be_focused()
        if position < 8:
            assert page.url.endswith(f"/questions/{position}/feedback/")
        else:  # the last answer's feedback opens the results
            assert page.url.endswith("/summary/?answered=8")
        # The answer went through fetch: no page load happened.
        assert page.evaluate("window.stillTheSamePage === true")
        if position < 8:  # the next question is under the feedback, on the same page
            expect(page.locator("[data-next-question] #next-progress")).to_have_text(
                f"Question {position + 1} of 8"
            )
            expect(page.locator("form.question")).to_have_count(1)
    expect(page.locator("[data-next-question]")).to_have_count(0)

    expect(page.locator("#score")).to_have_text("Your score: 7 of 8")
    assert Attempt.objects.get().score == 7


def test_quiz_pages_pass_axe_in_both_languages(page, live_server):
    page.goto(live_server.url)
    checked = {"home": axe_violations(page)}
    page.get_by_role("button", name="Start the demo quiz as a student").click()
    # Each check waits for the page it checks: axe run while the previous document is being
    # replaced finds no document (seen once in CI).
    expect(page.get_by_role("button", name="Start the quiz")).to_be_visible()
    checked["placement"] = axe_violations(page)
    page.get_by_role("button", name="Start the quiz").click()
    expect(page.locator("#progress")).to_have_text("Question 1 of 8")
    checked["question"] = axe_violations(page)
    page.locator("input[name=option]").first.check()
    page.get_by_role("button", name="Submit answer").click()
    expect(page.locator("[data-feedback]")).to_be_visible()
    checked["feedback"] = axe_violations(page)
    page.get_by_role("button", name="Русский").click()
    expect(page.locator("html")).to_have_attribute("lang", "ru")
    checked["feedback-ru"] = axe_violations(page)
    for position in range(2, 8):
        page.locator("input[name=option]").first.check()
        page.get_by_role("button", name="Ответить").click()
        expect(page.locator("#progress")).to_have_text(f"Вопрос {position} из 8")
    checked["feedback-with-next-question-ru"] = axe_violations(page)
    page.locator("input[name=option]").first.check()
    page.get_by_role("button", name="Ответить").click()
    expect(page.locator("#score")).to_be_visible()
    checked["summary-ru"] = axe_violations(page)
    assert checked == {name: [] for name in checked}


def test_the_whole_flow_works_with_the_keyboard_alone(page, live_server):
    page.goto(live_server.url)
    tab_to(page, "form[action$='/demo/launch/'] button")
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Start the quiz")).to_be_visible()
    tab_to(page, "form[action$='/start/'] button")
    page.keyboard.press("Enter")

    expect(page.locator("#progress")).to_have_text("Question 1 of 8")
    # The start answered with question 1, whose own address the address bar shows.
    expect(page).to_have_url(re.compile(r"/attempts/[0-9a-f-]{36}/$"))
    for position in range(1, 9):
        right = correct_option_text(page)
        tab_to(page, "input[name=option]")
        page.keyboard.press("Space")
        # Arrow keys move through a radio group, selecting as they go.
        for _ in range(4):
            if page.evaluate("document.activeElement.labels[0].innerText.trim()") == right:
                break
            page.keyboard.press("ArrowDown")
        assert page.evaluate("document.activeElement.checked")
        tab_to(page, "form.question button[type=submit]")
        page.keyboard.press("Enter")
        expect(page.locator("[data-feedback] h2")).to_have_text("✔ Correct")
        if position < 8:  # the next question's options follow the feedback
            expect(page.locator("#next-progress")).to_have_text(f"Question {position + 1} of 8")

    expect(page.locator("#score")).to_have_text("Your score: 8 of 8")


@pytest.mark.parametrize("scripts", ["fetch", "fetch-fails", "none"])
def test_a_reload_after_an_answer_neither_loses_it_nor_records_another(
    browser, live_server, page, scripts
):
    """The answer's response is its feedback page (decision 57). With JavaScript the page
    takes the feedback's own address, so a reload fetches that, whether the answer went by
    fetch or, fetch failing, by the form itself; without, a reload posts the form again, and
    the same answer again shows its feedback and records nothing."""
    tab = page
    if scripts == "none":
        tab = browser.new_context(locale="en-US", java_script_enabled=False).new_page()
        tab.set_default_timeout(10_000)
    elif scripts == "fetch-fails":
        tab.add_init_script("window.fetch = () => Promise.reject(new TypeError('offline'));")
    tab.goto(live_server.url)
    tab.get_by_role("button", name="Start the demo quiz as a student").click()
    tab.get_by_role("button", name="Start the quiz").click()
    tab.get_by_label(correct_option_text(tab), exact=True).check()
    tab.get_by_role("button", name="Submit answer").click()
    expect(tab.locator("[data-feedback] h2")).to_have_text("✔ Correct")
    expected = "/answer/" if scripts == "none" else "/questions/1/feedback/"
    assert tab.url.endswith(expected)
    answered = Attempt.objects.get().responses.get()

    tab.reload()
    expect(tab.locator("[data-feedback] h2")).to_have_text("✔ Correct")
    expect(tab.locator("#next-progress")).to_have_text("Question 2 of 8")
    assert list(Attempt.objects.get().responses.values_list("pk", "option_id")) == [
        (answered.pk, answered.option_id)
    ]
    # The language switch returns to the feedback's address, not to the answer's.
    tab.get_by_role("button", name="Русский").click()
    assert tab.url.endswith("/questions/1/feedback/")
    expect(tab.locator("#next-progress")).to_have_text("Вопрос 2 из 8")
    tab.locator("input[name=option]").first.check()
    tab.get_by_role("button", name="Ответить").click()
    expect(tab.locator("#progress")).to_have_text("Вопрос 2 из 8")
    assert Attempt.objects.get().responses.count() == 2
    if scripts == "none":
        tab.context.close()
