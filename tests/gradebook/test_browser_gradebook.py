"""The instructor's grades page in headless Chromium: reached from the launch, searched,
sorted and paged, a grade overridden and cleared from the page, a regrade previewed and
done, and no serious accessibility violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from activities.models import Grade, GradeChange, Placement, Regrade
from analytics.demo_data import generate_demo_data
from lti.models import ResourceLink
from tests.analytics.test_browser_dashboard import launch_as
from tests.browser import axe_violations
from tests.lti_platform import Platform

pytestmark = pytest.mark.browser


def test_instructor_overrides_and_regrades_from_the_grades_page(page, live_server, platform_server):
    platform = Platform(platform_server, tool=live_server.url)
    platform.register_in_tool()
    platform_server.launch_url = platform.launch_url
    launch_as(page, platform, "teacher", "Instructor")
    expect(page.locator("#test-statistics")).to_be_visible()
    placement = ResourceLink.objects.get()
    generate_demo_data(placement, 70, seed=3, absent_share=0.1)

    page.goto(f"{live_server.url}/quiz/{placement.pk}/manage/")
    page.get_by_role("link", name="Grades, overrides and regrades").click()
    expect(page.locator("#grades-count")).to_contain_text("70 students")
    expect(page.locator("#grades tbody tr")).to_have_count(50)
    page.get_by_role("link", name="Next page").click()
    expect(page.locator("#grades tbody tr")).to_have_count(20)

    # The best grade first, then a search for that student.
    page.get_by_role("link", name="Grade", exact=True).click()
    best = Grade.objects.filter(placement=placement).order_by("-score_given", "pk").first()
    first_row = page.locator("#grades tbody tr").first
    expect(first_row.locator("td.grade")).to_contain_text(f"{best.score_given:.2f} / 8.00")
    name = first_row.locator("th").inner_text()
    page.get_by_label("Find a student").fill(name)
    page.get_by_role("button", name="Search").click()
    row = page.locator("#grades tbody tr").filter(has_text=name).first
    expect(row).to_be_visible()
    student_id = int(row.get_attribute("id").split("-")[1])
    before = Grade.objects.get(placement=placement, user_id=student_id).score_given

    row.locator("summary").click()
    row.get_by_label("Grade (0–8.00)").fill("3.5")
    row.get_by_label("Reason", exact=True).fill("Missed question 2 through an LMS outage")
    row.get_by_label("Show the reason to the student").check()
    row.get_by_role("button", name="Save the override").click()
    expect(page.locator(".messages")).to_contain_text("The grade was overridden.")
    row = page.locator(f"#student-{student_id}")
    expect(row).to_have_class("overridden")
    expect(row.locator("td.grade")).to_contain_text("3.50 / 8.00")
    expect(row.locator("td.grade .badge")).to_have_text("overridden")
    expect(row.locator("td.how")).to_contain_text("Missed question 2")
    assert page.get_by_label("Find a student").input_value() == name  # the search is kept
    assert axe_violations(page) == []

    row.get_by_role("button", name="Clear the override").click()
    expect(page.locator(f"#student-{student_id} td.grade")).to_contain_text(f"{before:.2f} / 8.00")
    expect(page.locator("#grade-changes tbody tr")).to_have_count(2)
    grade = Grade.objects.get(placement=placement, user_id=student_id)
    assert (grade.score_given, grade.is_overridden) == (before, False)
    assert GradeChange.objects.filter(user_id=student_id).count() == 2

    # A method changed behind the page's back: the regrade's preview shows it, then does it.
    Placement.objects.filter(pk=placement.pk).update(grading_method="first")
    page.get_by_role("link", name="Regrade all…").click()
    expect(page.locator("#regrade-summary")).to_be_visible()
    previewed = page.locator("#regrade-changes tbody tr").count()
    assert previewed >= 1  # retakers whose first attempt was not their best
    assert axe_violations(page) == []
    page.get_by_role("button", name="Regrade now").click()
    expect(page.locator(".messages")).to_contain_text("Regraded")
    assert Regrade.objects.get().grades_changed == previewed
