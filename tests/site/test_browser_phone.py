"""Every page of the student's and the instructor's flows fits a 375 px phone screen:
the document never scrolls sideways (wide tables scroll inside their own box), in English
and in Russian."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from activities.demo import ensure_demo_placement
from analytics.demo_data import generate_demo_data
from labs import services
from labs.models import LabRun

pytestmark = pytest.mark.browser

PHONE = {"width": 375, "height": 740}
LABELS = {
    "en": {
        "student": "Start the demo quiz as a student",
        "staff": "Open the demo course as an instructor",
        "lab-student": "Try the checkpointing lab as a student",
        "lab-staff": "Open the lab as an instructor",
        "start": "Start the quiz",
        "submit": "Submit answer",
        "settings": "Settings and gradebook",
        "lab-settings": "Schedule, runs and gradebook",
    },
    "ru": {
        "student": "Пройти демо-тест как студент",
        "staff": "Открыть демо-курс как преподаватель",
        "lab-student": "Попробовать лабораторную как студент",
        "lab-staff": "Открыть лабораторную как преподаватель",
        "start": "Начать тест",
        "submit": "Ответить",
        "settings": "Настройки и журнал оценок",
        "lab-settings": "Расписание, запуски и журнал оценок",
    },
}


def document_width(page: Page) -> int:
    page.wait_for_load_state("load")
    return page.evaluate(
        "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
    )


# The outermost elements that stick out past the screen's right edge, to name in a failure.
OVERFLOWING = """limit => {
  // A scroll box clips what it holds, except absolutely positioned elements whose
  // containing block lies outside it.
  const clipped = e => {
    if (getComputedStyle(e).position === "absolute") return false;
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (["auto", "scroll", "hidden"].includes(getComputedStyle(a).overflowX)) return true;
    }
    return false;
  };
  return [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > limit + 1 && !clipped(e))
    .slice(0, 8)
    .map(e => `${e.tagName.toLowerCase()}#${e.id}.${e.className}: `
              + Math.round(e.getBoundingClientRect().right));
}"""


@pytest.fixture
def phone(browser, page, live_server, settings):  # noqa: ARG001
    """A phone-sized browser per language, on a demo course with a class."""
    settings.LAB_TIMING_REPEATS = 1
    call_command("load_labs")
    generate_demo_data(ensure_demo_placement(), 40, seed=3)
    contexts = []

    def open_phone(language: str) -> Page:
        context = browser.new_context(
            viewport=PHONE, locale="ru-RU" if language == "ru" else "en-US", is_mobile=True
        )
        contexts.append(context)
        tab = context.new_page()
        tab.set_default_timeout(10_000)
        return tab

    yield open_phone
    for context in contexts:
        context.close()


@pytest.mark.parametrize("language", ["en", "ru"])
def test_every_page_of_both_flows_fits_a_phone(phone, live_server, language):
    labels = LABELS[language]
    widths: dict[str, int] = {}
    offenders: dict[str, list[str]] = {}

    def measure(page: Page, name: str) -> None:
        expect(page.locator("html")).to_have_attribute("lang", language)
        widths[name] = document_width(page)
        if widths[name] > PHONE["width"]:
            offenders[name] = page.evaluate(OVERFLOWING, PHONE["width"])

    student = phone(language)
    student.goto(live_server.url)
    measure(student, "home")
    student.get_by_role("button", name=labels["student"]).click()
    measure(student, "quiz")
    student.get_by_role("button", name=labels["start"]).click()
    for position in range(1, 9):
        student.locator("input[name=option]").first.check()
        if position == 1:
            measure(student, "question")
        asked = student.locator("input[name=question]").input_value()
        student.get_by_role("button", name=labels["submit"]).click()
        expect(student.locator(f"input[name=question][value='{asked}']")).to_have_count(0)
        expect(student.locator("[data-feedback]")).to_be_visible()
        if position == 1:
            measure(student, "feedback")
    expect(student.locator("#score")).to_be_visible()
    measure(student, "review")

    student.goto(live_server.url)
    student.get_by_role("button", name=labels["lab-student"]).click()
    measure(student, "lab")
    lab = ensure_demo_placement("lab")
    learner = get_user_model().objects.filter(lti_memberships__role="learner").latest("pk")
    run = services.submit_run(placement=lab, user=learner, policy={"kind": "sqrt"})
    student.goto(f"{live_server.url}/runs/{run.public_id}/")
    measure(student, "lab-run-queued")
    services.execute_run(run.pk)
    assert LabRun.objects.get(pk=run.pk).result
    try:
        student.goto(f"{live_server.url}/runs/{run.public_id}/")
    except PlaywrightError as error:
        # The queued page refreshes itself every 5 s, and did just then: the same page.
        if "interrupted by another navigation" not in str(error):
            raise
        student.wait_for_load_state()
    expect(student.locator("#score")).to_be_visible()
    measure(student, "lab-run")

    staff = phone(language)
    staff.goto(live_server.url)
    staff.get_by_role("button", name=labels["staff"]).click()
    expect(staff.locator("canvas[data-chart=scatter]")).to_have_attribute("data-drawn", "2")
    measure(staff, "dashboard")
    staff.get_by_role("link", name=labels["settings"]).click()
    measure(staff, "manage")
    staff.goto(live_server.url)
    staff.get_by_role("button", name=labels["lab-staff"]).click()
    measure(staff, "lab-dashboard")
    staff.get_by_role("link", name=labels["lab-settings"]).click()
    measure(staff, "lab-manage")

    too_wide = {name: width for name, width in widths.items() if width > PHONE["width"]}
    assert len(widths) == 12
    assert too_wide == {}, offenders
