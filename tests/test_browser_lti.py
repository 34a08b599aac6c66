"""Embedded launches in headless Chromium: the tool in an iframe of a course page served
from another origin (the platform's), with cookies and with LTI platform storage."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from assessments.services import load_quiz
from lti.models import LtiUser

from .browser import CHROMIUM, CHROMIUM_ARGS, third_party_cookie_profile
from .lti_platform import ROLE, Platform

pytestmark = pytest.mark.browser


@pytest.fixture
def embedded(playwright, live_server, transactional_db, seed_content, tmp_path):
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
    tool = open_course_page(embedded, lms)
    take_one_question(tool)
    assert LtiUser.objects.get().sub == "stu-embedded"
    assert embedded.evaluate("window.storageLog") == []


def test_embedded_launch_with_platform_storage(embedded, lms, live_server):
    tool = open_course_page(embedded, lms, lti_storage_target="_parent")
    take_one_question(tool)
    log = embedded.evaluate("window.storageLog")
    assert [entry[0] for entry in log] == ["put", "get"]
    assert {entry[1] for entry in log} == {live_server.url}
    assert log[0][2] == log[1][2] and log[0][2].startswith("state_")
