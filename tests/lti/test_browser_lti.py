"""Embedded launches in headless Chromium: the tool in an iframe of a course page served
from another origin (the platform's), with cookies, with LTI platform storage, and in a
browser that blocks the tool's cookies there (continuing in a new window)."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

import pytest
from playwright.sync_api import expect

from assessments.services import load_quiz
from lti.models import LtiUser
from tests.browser import CHROMIUM, CHROMIUM_ARGS, third_party_cookie_profile
from tests.lti_platform import ROLE, Platform

pytestmark = pytest.mark.browser


@pytest.fixture
def embedded(playwright, live_server, transactional_db, seed_content, tmp_path):  # noqa: ARG001
    """A browser whose profile keeps third-party cookies, on the live tool."""
    load_quiz(seed_content)
    context = playwright.chromium.launch_persistent_context(
        str(third_party_cookie_profile(tmp_path / "profile")),
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_ARGS,
        locale="en-US",
    )
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    yield tab
    context.close()


@pytest.fixture
def lms(live_server, platform_server):
    platform = Platform(platform_server, tool=live_server.url)
    platform.register_in_tool()
    platform_server.launch_url = platform.launch_url
    platform_server.authorize = lambda params: platform.authorize(
        params, user_id="stu-embedded", roles=[ROLE + "Learner"], locale="en"
    )
    return platform


def open_course_page(page, lms: Platform, **login_extra: str):
    params = {**lms.login_initiation(user_id="stu-embedded"), **login_extra}
    tool_login = f"{lms.login_url}?{urlencode(params)}"
    page.goto(lms.server.url("/course-page?" + urlencode({"tool": tool_login})))
    return page.frame_locator("iframe[name=tool]")


def take_one_question(tool) -> None:
    tool.get_by_role("button", name="Start the quiz").click()
    tool.locator("input[name=option]").first.check()
    tool.get_by_role("button", name="Submit answer").click()
    expect(tool.locator("[data-feedback] h2")).to_be_visible()
    expect(tool.locator(".explanation")).not_to_be_empty()


def test_embedded_launch_with_cookies(embedded, lms):
    requested = []
    embedded.on("request", lambda request: requested.append(request.url))
    tool = open_course_page(embedded, lms)
    expect(tool.get_by_role("button", name="Start the quiz")).to_be_visible()
    # The launch named a handoff in the landing's address; the page took it out of the
    # address bar and the history.
    assert any("handoff=" in url for url in requested)
    embedded.frame(name="tool").wait_for_function("!location.href.includes('handoff')")
    take_one_question(tool)
    assert LtiUser.objects.get().sub == "stu-embedded"
    assert embedded.evaluate("window.storageLog") == []


def test_a_launch_into_an_attempt_in_progress_answers_with_its_question(embedded, lms, live_server):
    """The launch's state cookie came back in the iframe, so the launch answers with the
    question itself (decision 60): no redirect and no handoff; the frame shows the question's
    address, a reload fetches the question rather than posting the launch again, and the
    page's form answers with the session and the CSRF token the launch set."""
    take_one_question(open_course_page(embedded, lms))
    requested: list[tuple[str, str]] = []
    embedded.on("request", lambda request: requested.append((request.method, request.url)))
    tool = open_course_page(embedded, lms)
    expect(tool.locator("#progress")).to_have_text("Question 2 of 8")
    frame = embedded.frame(name="tool")
    frame.wait_for_function("location.pathname.startsWith('/attempts/')")
    address = frame.evaluate("location.pathname")
    assert not any("handoff" in url for _method, url in requested)
    assert not any(url.endswith(address) for _method, url in requested)  # no redirect to it

    requested.clear()
    frame.evaluate("location.reload()")
    expect(tool.locator("#progress")).to_have_text("Question 2 of 8")
    assert ("GET", live_server.url + address) in requested
    assert not any(url.endswith("/lti/launch/") for _method, url in requested)

    tool.locator("input[name=option]").first.check()
    tool.get_by_role("button", name="Submit answer").click()
    expect(tool.locator("[data-feedback] h2")).to_be_visible()
    expect(tool.locator("#next-progress")).to_have_text("Question 3 of 8")


@pytest.mark.usefixtures("transactional_db")
def test_a_reload_without_javascript_of_the_question_a_launch_answered_with(
    browser, live_server, seed_content, lms
):
    """Without JavaScript the address bar keeps the launch's address, so a reload posts the
    spent launch again: the browser that made it is sent to the question (decision 68),
    where before it read that the launch was already used."""
    load_quiz(seed_content)
    tab = browser.new_context(locale="en-US", java_script_enabled=False).new_page()
    tab.set_default_timeout(10_000)

    def launch_from_the_course() -> None:
        params = lms.login_initiation(user_id="stu-embedded")
        tab.goto(f"{lms.login_url}?{urlencode(params)}")
        tab.get_by_role("button", name="Continue").click()  # the platform's auto-post form

    launch_from_the_course()
    tab.get_by_role("button", name="Start the quiz").click()
    expect(tab.locator("#progress")).to_have_text("Question 1 of 8")
    # The start answered with the question (decision 72), which names its own address.
    address = tab.locator("link[rel=canonical]").get_attribute("href")
    assert address.startswith("/attempts/")

    launch_from_the_course()
    expect(tab.locator("#progress")).to_have_text("Question 1 of 8")
    assert tab.url == live_server.url + "/lti/launch/"
    tab.reload()  # the launch's form, posted again
    expect(tab.locator("#progress")).to_have_text("Question 1 of 8")
    assert urlsplit(tab.url).path == address
    tab.context.close()


def test_embedded_launch_with_platform_storage(embedded, lms, live_server):
    tool = open_course_page(embedded, lms, lti_storage_target="_parent")
    take_one_question(tool)
    log = embedded.evaluate("window.storageLog")
    assert [entry[0] for entry in log] == ["put", "get"]
    assert {entry[1] for entry in log} == {live_server.url}
    assert log[0][2] == log[1][2]
    assert log[0][2].startswith("state_")


@pytest.mark.usefixtures("transactional_db")
def test_a_browser_that_blocks_the_cookie_continues_in_a_new_window(
    playwright, live_server, seed_content, lms
):
    """Chromium blocking third-party cookies, as Safari does by default: the platform
    storage carries the login, the landing offers a new window, and there the student
    takes the quiz signed in."""
    load_quiz(seed_content)
    # The shared arguments keep the tool's frame in the page's renderer process (tests/browser.py:
    # Playwright lost it among site isolation's process swaps); the cookie policy, which this
    # test is about, is the same (the heading proves it applied).
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    context = browser.new_context(locale="en-US")  # blocks third-party cookies
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        tool = open_course_page(page, lms, lti_storage_target="_parent")
        heading = tool.get_by_role("heading", name="Open the activity in a new window")
        expect(heading).to_be_visible()
        with context.expect_page() as opened:
            tool.get_by_role("link", name="Open in a new window").click()
        window = opened.value
        window.set_default_timeout(10_000)
        take_one_question(window)
        assert LtiUser.objects.get().sub == "stu-embedded"
        # The handoff served once: the same link opens nothing more.
        link = tool.get_by_role("link", name="Open in a new window").get_attribute("href")
        again = context.new_page()
        again.goto(live_server.url + link)
        expect(again.get_by_text("expired or was used")).to_be_visible()
    finally:
        # Closing the browser closes its context; a separate context.close() once hung
        # for minutes in a full run (Chromium never answered it) and held the suite.
        browser.close()
