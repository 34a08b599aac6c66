"""Browser launches from the independent platform on 127.0.0.1 into the tool on localhost
(two sites), in a browser that blocks third-party cookies."""

from __future__ import annotations

import pytest

from assessments.services import load_quiz
from tests.browser import CHROMIUM, CHROMIUM_ARGS
from tests.lti_platform import Platform


@pytest.fixture
def blocking_browser(playwright, live_server, transactional_db, seed_content):  # noqa: ARG001
    """A browser context that blocks third-party cookies (Playwright's contexts do, as
    Safari does by default), on the live tool with the quiz loaded."""
    load_quiz(seed_content)
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    context = browser.new_context(locale="en-US")
    try:
        yield context
    finally:
        browser.close()  # closes the context too (a context.close() once hung the suite)


@pytest.fixture
def moodle(live_server, platform_server):
    """The platform, on 127.0.0.1 (another site than the tool's localhost)."""
    platform = Platform(platform_server, tool=live_server.url)
    platform.register_in_tool()
    platform_server.launch_url = platform.launch_url
    return platform
