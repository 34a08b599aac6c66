"""A lab in a real browser: a student builds a policy on the picture of the layers, waits
in the queue, and reads the result and its chart; an instructor sets the schedule."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from labs import services
from labs.models import LabRun, RunStatus
from tests.browser import axe_violations

pytestmark = pytest.mark.browser


def test_student_builds_a_policy_on_the_layers_and_reads_the_result(page, live_server, settings):
    settings.LAB_TIMING_REPEATS = 1
    call_command("load_labs")
    page.goto(live_server.url)
    page.get_by_role("button", name="Try the checkpointing lab as a student").click()
    expect(page.locator("h1")).to_contain_text("64-block chain")
    assert axe_violations(page) == []

    page.get_by_label("Choose on the picture of the layers").check()
    for block in range(0, 56):  # recompute blocks 0–55 in segments of 8; keep the last 8
        page.locator(f"label[for=block-{block}]").click()
    for block in range(8, 57, 8):
        page.locator(f"label[for=cut-{block}]").click()
    expect(page.locator("#block-3")).to_be_checked()
    expect(page.locator("#cut-16")).to_be_checked()
    page.get_by_role("button", name="Run this policy").click()

    expect(page.locator("#run-status")).to_contain_text("number 1 in the queue")
    run = LabRun.objects.get()
    assert [s["checkpoint"] for s in run.policy["segments"]] == [True] * 7 + [False]
    services.execute_run(run.pk)  # the GPU queue's worker's job (tests/labs/test_labs_worker.py)
    assert LabRun.objects.get().status == RunStatus.SUCCEEDED

    page.reload()
    expect(page.locator("#score")).to_be_visible()
    measured = LabRun.objects.get().result
    reference = measured["reference"]
    points = 2 + bool(reference.get("sqrt")) + len(reference["frontier"])  # student, baseline
    expect(page.locator("table.chart-data tbody tr")).to_have_count(points)
    student = page.locator("table.chart-data tr[data-kind=student]")
    assert int(student.get_attribute("data-peak-bytes")) == measured["peak_activation_bytes"]
    expect(page.locator("canvas[data-chart=run]")).to_have_attribute("data-drawn", "5")
    drawn = page.evaluate(
        """() => Chart.getChart(document.querySelector("canvas[data-chart=run]")).data.datasets
             .map((d) => [d.label, d.data.length])"""
    )
    assert drawn[:3] == [["Your policy", 1], ["√N segments", 1], ["No checkpointing", 1]]
    assert drawn[3] == ["Optimal frontier", len(reference["frontier"])]
    assert drawn[3][1] >= 5
    expect(page.locator("#explanation")).to_contain_text("Score")
    assert axe_violations(page) == []
