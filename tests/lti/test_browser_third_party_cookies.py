"""Launches in a browser that keeps no third-party cookies, from a platform that offers no
LTI platform storage (Moodle 5.1): the tool, in the platform's iframe on another site
(127.0.0.1 against the tool's localhost), finds that its cookie is not kept there and
offers the login again in a new window, where the launch ends on the right page, signed
in. And the platform's cross-site form POST over plain HTTP, where the state cookie is
SameSite=Lax."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from lti.models import LtiUser
from tests.labs_helpers import small_lab
from tests.lti.launch_helpers import answer_as, plain_http
from tests.lti_platform import ROLE, Platform

pytestmark = pytest.mark.browser


def course_page(context, moodle: Platform, user_id: str):
    """The course page with the tool in its iframe, as Moodle starts a launch (its login
    initiation without lti_storage_target)."""
    page = context.new_page()
    page.set_default_timeout(10_000)
    tool_login = f"{moodle.login_url}?{urlencode(moodle.login_initiation(user_id=user_id))}"
    page.goto(moodle.server.url("/course-page?" + urlencode({"tool": tool_login})))
    return page, page.frame_locator("iframe[name=tool]")


def continue_in_new_window(context, tool):
    expect(tool.get_by_role("heading", name="Open the activity in a new window")).to_be_visible()
    with context.expect_page() as opened:
        tool.get_by_role("button", name="Open in a new window").click()
    window = opened.value
    window.set_default_timeout(10_000)
    expect(tool.get_by_text("The activity is open in a new window")).to_be_visible()
    return window


@pytest.mark.parametrize("over_http", [False, True], ids=["samesite-none", "http-lax"])
def test_embedded_quiz_continues_in_a_new_window(blocking_browser, moodle, settings, over_http):
    if over_http:
        plain_http(settings)
    answer_as(moodle, user_id="stu-1", roles=[ROLE + "Learner"])
    _, tool = course_page(blocking_browser, moodle, "stu-1")
    window = continue_in_new_window(blocking_browser, tool)

    window.get_by_role("button", name="Start the quiz").click()
    window.locator("input[name=option]").first.check()
    window.get_by_role("button", name="Submit answer").click()
    expect(window.locator("[data-feedback] h2")).to_be_visible()
    assert LtiUser.objects.get().sub == "stu-1"
    assert "handoff" not in window.url


def test_embedded_lab_continues_in_a_new_window(blocking_browser, moodle):
    small_lab(slug="tiny-chain")
    answer_as(
        moodle,
        user_id="stu-2",
        roles=[ROLE + "Learner"],
        resource_link_id="lab-link",
        custom={"activity": "lab:tiny-chain"},
    )
    _, tool = course_page(blocking_browser, moodle, "stu-2")
    window = continue_in_new_window(blocking_browser, tool)

    expect(window.get_by_role("heading", name="Tiny chain")).to_be_visible()
    expect(window.get_by_role("button", name="Run this policy")).to_be_visible()
    assert "handoff" not in window.url


def test_embedded_deep_linking_continues_in_a_new_window(blocking_browser, moodle):
    call_command("load_labs")
    answer_as(moodle, user_id="teacher-1", roles=[ROLE + "Instructor"], deep_link=True)
    _, tool = course_page(blocking_browser, moodle, "teacher-1")
    window = continue_in_new_window(blocking_browser, tool)

    expect(window.get_by_role("heading", name="Add an activity to your course")).to_be_visible()
    expect(window.get_by_role("button", name="Add to the course")).to_be_visible()


def test_a_choice_made_in_the_new_window_reaches_the_platform_from_its_dialog(
    blocking_browser, moodle, live_server
):
    """Moodle's return page calls its parent (the dialog) from the frame it is loaded in: the
    answer picked in the new window must be posted from the dialog's iframe, not the window."""
    answer_as(moodle, user_id="teacher-1", roles=[ROLE + "Instructor"], deep_link=True)
    page, tool = course_page(blocking_browser, moodle, "teacher-1")
    window = continue_in_new_window(blocking_browser, tool)
    expect(tool.get_by_text("your choice comes back to this page")).to_be_visible()

    window.locator("select[name=activity]").select_option("quiz:gradient-checkpointing")
    window.locator("input[name=title]").fill("Checkpointing quiz, week 3")
    with window.expect_response(lambda response: response.request.method == "POST") as sent:
        window.get_by_role("button", name="Add to the course").click()

    # The window says where the choice went (and closes itself), without the signed answer.
    assert "You can close this window" in sent.value.text()
    assert 'name="JWT"' not in sent.value.text()
    expect(page.get_by_text("The activity was added to the course.")).to_be_visible()
    for _ in range(100):
        if window.is_closed():
            break
        page.wait_for_timeout(100)
    assert window.is_closed()
    [signed] = moodle.server.deep_links_received
    jwks = blocking_browser.request.get(f"{live_server.url}/lti/jwks/").json()
    items = moodle.verify_deep_linking_response(signed, jwks)
    assert [item["title"] for item in items] == ["Checkpointing quiz, week 3"]


def test_a_cross_site_launch_over_http_in_a_new_window(blocking_browser, moodle, settings):
    """Moodle's "open in a new window" over plain HTTP: the state cookie is SameSite=Lax and
    the platform's cross-site form POST does not carry it; the launch goes on from the
    tool's own page."""
    plain_http(settings)
    answer_as(moodle, user_id="stu-3", roles=[ROLE + "Learner"])
    page = blocking_browser.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{moodle.login_url}?{urlencode(moodle.login_initiation(user_id='stu-3'))}")

    expect(page.get_by_role("button", name="Start the quiz")).to_be_visible()
    assert LtiUser.objects.get().sub == "stu-3"
