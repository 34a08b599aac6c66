"""The lab workbench in a real browser: each policy kind shows only its own inputs, the
estimate follows the policy as it is built, the policy is edited as JSON, every control is
a touch target of at least 24 × 24 px, and the result's chart is a Chart.js chart with its
legend, axes and table."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from labs import services
from labs.models import Lab, LabRun
from labs.runner.costmodel import BlockCosts, plan_cost
from labs.runner.policies import uniform_segments
from tests.browser import axe_violations

pytestmark = pytest.mark.browser

# Which inputs each policy kind shows (the JSON editor shows for every kind).
INPUTS = {"size": "#id_size", "layers": ".layer-strip", "save": "input[name=save]"}
SHOWN = {
    "none": set(),
    "every_block": set(),
    "segments": {"size"},
    "sqrt": set(),
    "layers": {"layers"},
    "selective": {"save"},
    "json": set(),
}


def estimated_peak(page) -> int:
    return int(page.locator("#estimate [data-peak-bytes]").get_attribute("data-peak-bytes"))


def small_targets(page) -> list[tuple[str, float, float]]:
    """Visible controls of the workbench (and the labels that act for hidden boxes) smaller
    than 24 × 24 CSS px."""
    return page.evaluate(
        """() => {
          const found = [];
          const controls = document.querySelectorAll(
            "#workbench input:not([type=hidden]), #workbench label, #workbench button, " +
            "#workbench textarea, #workbench summary");
          for (const element of controls) {
            const box = element.getBoundingClientRect();
            const style = getComputedStyle(element);
            if (element.closest("[hidden]") || style.display === "none") continue;
            // A visually hidden box is operated through its label, which is checked instead.
            if (element.matches(".layer-strip input")) continue;
            if (box.width < 24 || box.height < 24) {
              found.push([element.outerHTML.slice(0, 80), box.width, box.height]);
            }
          }
          return found;
        }"""
    )


def test_the_workbench_shows_one_kind_at_a_time_estimates_live_and_edits_json(
    page, live_server, settings
):
    settings.LAB_TIMING_REPEATS = 3
    call_command("load_labs")
    lab = Lab.objects.get(slug="chain-under-budget")
    reference = services.ensure_reference(lab)
    costs = BlockCosts.from_dict(reference["block_costs"])
    page.goto(live_server.url)
    page.get_by_role("button", name="Try the checkpointing lab as a student").click()
    expect(page.locator("h1")).to_contain_text("64-block chain")
    # The instructions are paragraphs, not lines broken mid-sentence.
    expect(page.locator(".instructions p")).to_have_count(3)
    expect(page.locator(".instructions br")).to_have_count(0)
    # A chain of Linear+ReLU has no attention and no norms to keep.
    expect(page.locator("input[name=save][value=attention]")).to_have_count(0)
    expect(page.locator("input[name=save][value=norm]")).to_have_count(0)

    for kind, label in (
        ("none", "No checkpointing"),
        ("every_block", "Checkpoint every block"),
        ("segments", "Segments of a fixed size"),
        ("sqrt", "√N segments"),
        ("layers", "Choose on the picture of the layers"),
        ("selective", "Selective: keep the outputs"),
        ("json", "Write the policy as JSON"),
    ):
        page.get_by_label(label).check()
        for name, selector in INPUTS.items():
            if name in SHOWN[kind]:
                expect(page.locator(selector).first).to_be_visible()
            else:
                expect(page.locator(selector).first).to_be_hidden()
        expect(page.locator("#id_policy_json")).to_be_visible()
        assert small_targets(page) == [], kind

    # The estimate follows the policy: √N, then segments of 4, each as the cost model says.
    page.get_by_label("√N segments").check()
    expect(page.locator("#estimate [data-peak-bytes]")).to_have_attribute(
        "data-peak-bytes", str(reference["sqrt"]["peak_activation_bytes"])
    )
    assert json.loads(page.locator("#id_policy_json").input_value()) == {"kind": "sqrt"}
    page.get_by_label("Segments of a fixed size").check()
    page.locator("#id_size").fill("4")
    four = plan_cost(costs, uniform_segments(64, 4))
    expect(page.locator("#estimate [data-peak-bytes]")).to_have_attribute(
        "data-peak-bytes", str(four[0])
    )
    expect(page.locator("#estimate [data-recompute-flops]")).to_have_attribute(
        "data-recompute-flops", str(four[1])
    )
    expect(page.locator("#estimate")).to_contain_text("over the budget")  # 4 blocks: 1 + 16
    assert json.loads(page.locator("#id_policy_json").input_value()) == {
        "kind": "segments",
        "size": 4,
    }

    # Editing the JSON chooses "Write the policy as JSON"; a typo gets a message at once.
    editor = page.locator("#id_policy_json")
    editor.fill('{"kind": "segments", "size": 8')
    expect(page.get_by_label("Write the policy as JSON")).to_be_checked()
    expect(page.locator("#estimate-errors")).to_contain_text("not valid JSON")
    editor.fill('{"kind": "segments", "size": 8}')
    expect(page.locator("#estimate [data-peak-bytes]")).to_have_attribute(
        "data-peak-bytes", str(reference["sqrt"]["peak_activation_bytes"])
    )
    expect(page.locator("#estimate")).to_contain_text("fits the budget")
    assert axe_violations(page) == []

    page.get_by_role("button", name="Run this policy").click()
    run = LabRun.objects.get()
    assert run.policy == {"kind": "segments", "size": 8}
    services.execute_run(run.pk)
    # The pending page refreshes itself every 5 s; a reload of the test's own raced it
    # (net::ERR_ABORTED when both navigated at once), so the test waits for that refresh.
    expect(page.locator("#run-status.status-succeeded")).to_be_visible(timeout=15_000)
    measured = LabRun.objects.get().result
    assert measured["peak_activation_bytes"] == reference["sqrt"]["peak_activation_bytes"]

    canvas = page.locator("canvas[data-chart=run]")
    expect(canvas).to_have_attribute("data-drawn", "5")
    config = page.evaluate(
        """() => {
          const chart = Chart.getChart(document.querySelector("canvas[data-chart=run]"));
          const scales = chart.options.scales;
          return {
            legend: chart.options.plugins.legend.display,
            legendItems: chart.legend.legendItems.map((item) => item.text),
            x: scales.x.title.text, y: scales.y.title.text,
            xTicks: chart.scales.x.ticks.length, yTicks: chart.scales.y.ticks.length,
            order: chart.data.datasets.map((d) => [d.label, d.order]),
          };
        }"""
    )
    assert config["legend"] is True
    assert config["legendItems"] == [
        "Your policy",
        "√N segments",
        "No checkpointing",
        "Optimal frontier",
        "Budget",
    ]
    assert config["x"] == "Peak activation memory (MiB)"
    assert config["y"] == "Recomputed GFLOP"
    assert config["xTicks"] >= 3
    assert config["yTicks"] >= 3
    order = dict(config["order"])
    assert order["√N segments"] < order["Optimal frontier"]
    assert order["No checkpointing"] < order["Optimal frontier"]
    rows = page.locator("table.chart-data tbody tr")
    expect(rows).to_have_count(3 + len(reference["frontier"]))
    expect(page.locator("#timing")).to_contain_text("not comparable")
    expect(page.locator("#timing-table tbody tr")).to_have_count(2)
    expect(page.locator("#policy")).to_contain_text('"size": 8')
    assert axe_violations(page) == []
