"""The instructor's dashboard in headless Chromium: an LTI launch from a course, charts
drawn by the served Chart.js with the class's figures, CSV downloads that parse, and a
learner refused."""

from __future__ import annotations

import csv
import io
from urllib.parse import urlencode, urlsplit

import pytest
from playwright.sync_api import expect

from analytics.demo_data import generate_demo_data
from assessments.models import Attempt, Response
from lti.models import ResourceLink
from tests.browser import axe_violations
from tests.lti_platform import ROLE, Platform

pytestmark = pytest.mark.browser


def launch_as(page, platform: Platform, user_id: str, role: str) -> None:
    platform.server.authorize = lambda params: platform.authorize(
        params, user_id=user_id, roles=[ROLE + role], locale="en"
    )
    params = platform.login_initiation(user_id=user_id)
    page.goto(f"{platform.login_url}?{urlencode(params)}")


def chart_data(page, name: str) -> list:
    return page.evaluate(
        "name => Chart.getChart(document.querySelector(`canvas[data-chart=${name}]`))"
        ".data.datasets.map(d => d.data)",
        name,
    )


def test_instructor_reads_the_dashboard_and_downloads_csv(page, live_server, platform_server):
    platform = Platform(platform_server, tool=live_server.url)
    platform.register_in_tool()
    platform_server.launch_url = platform.launch_url
    launch_as(page, platform, "teacher", "Instructor")
    expect(page.locator("#test-statistics")).to_be_visible()
    placement = ResourceLink.objects.get()
    assert urlsplit(page.url).path == f"/dashboard/{placement.pk}/"

    generate_demo_data(placement, 80, seed=5)
    page.reload()
    attempts = Attempt.objects.filter(placement=placement).count()
    expect(page.locator("[data-stat=attempts]")).to_have_text(str(attempts))
    for name in ("histogram", "items", "timeline"):
        expect(page.locator(f"canvas[data-chart={name}]")).to_have_attribute(
            "data-drawn", "2" if name != "histogram" else "1"
        )
    [histogram] = chart_data(page, "histogram")
    assert sum(histogram) == attempts
    facility, discrimination = chart_data(page, "items")
    assert len(facility) == 8
    assert all(0 <= value <= 100 for value in facility)
    assert sum(value > 0 for value in discrimination) >= 6  # abler students do better
    assert sum(sum(series) for series in chart_data(page, "timeline")) == 2 * attempts
    assert axe_violations(page) == []

    with page.expect_download() as download:
        page.get_by_role("link", name="Responses (CSV)").click()
    text = download.value.path().read_text(encoding="utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == Response.objects.filter(attempt__placement=placement).count()
    assert set(rows[0]) >= {"attempt", "student", "question", "option", "is_correct"}

    learner = page.context.browser.new_context(locale="en-US").new_page()
    launch_as(learner, platform, "student-1", "Learner")
    expect(learner.get_by_role("button", name="Start the quiz")).to_be_visible()
    response = learner.goto(f"{live_server.url}/dashboard/{placement.pk}/")
    assert response.status == 403
    expect(learner.locator("main")).to_contain_text("instructors")
    learner.context.close()
