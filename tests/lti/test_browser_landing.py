"""What the browser shows after a launch: the deep-linking picker shows a lab's schedule
and offers only a lab's grading methods while a lab is chosen, and a landing page takes its
one-time handoff out of the address bar."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from tests.lti.launch_helpers import answer_as
from tests.lti_platform import ROLE

pytestmark = pytest.mark.browser

LAB_ONLY = ("opens_at", "due_at", "closes_at", "late_policy", "late_penalty_percent")


def test_the_picker_shows_the_lab_schedule_only_for_a_lab(blocking_browser, moodle):
    call_command("load_labs")
    answer_as(moodle, user_id="teacher-1", roles=[ROLE + "Instructor"], deep_link=True)
    page = blocking_browser.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{moodle.login_url}?{urlencode(moodle.login_initiation(user_id='teacher-1'))}")
    activity = page.get_by_label("Activity")
    values = [option.get_attribute("value") for option in activity.locator("option").all()]

    activity.select_option(value=next(v for v in values if v.startswith("quiz:")))
    for name in LAB_ONLY:
        expect(page.locator(f"[name={name}]")).to_be_hidden()
    expect(page.get_by_label("Title in the course")).to_be_visible()

    method = page.get_by_label("Grading method")
    method.select_option("average")
    offered = "el => [...el.options].filter(o => !o.disabled && !o.hidden).map(o => o.value)"
    assert method.evaluate(offered) == ["highest", "last", "first", "average"]

    activity.select_option(value=next(v for v in values if v.startswith("lab:")))
    for name in LAB_ONLY:
        expect(page.locator(f"[name={name}]")).to_be_visible()
    # A lab is graded by its best or last run: the quiz's other methods are not offered,
    # and the one chosen for the quiz gives way to the first a lab takes.
    assert method.evaluate(offered) == ["highest", "last"]
    expect(method).to_have_value("highest")

    activity.select_option(value=next(v for v in values if v.startswith("quiz:")))
    assert method.evaluate(offered) == ["highest", "last", "first", "average"]
