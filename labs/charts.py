"""The student's result chart as a Chart.js configuration (drawn by the dashboards' one
chart script), and the same figures for the table beside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

MIB, GFLOP = 2**20, 1e9
BLUE, ORANGE, GREY, RED, PURPLE = "#0b5cad", "#c05600", "#59636e", "#b00020", "#8250df"


@dataclass(frozen=True)
class ChartPoint:
    kind: str  # student, baseline, sqrt or frontier
    label: str
    peak_bytes: int
    recompute_flops: int


@dataclass(frozen=True)
class RunChart:
    points: list[ChartPoint]
    budget_bytes: int
    config: dict[str, Any]


def _xy(point: ChartPoint) -> dict[str, Any]:
    return {
        "x": round(point.peak_bytes / MIB, 4),
        "y": round(point.recompute_flops / GFLOP, 6),
        "label": point.label,
    }


# Drawn from the highest order down, so the reference points and the student's ring sit
# above the frontier; each has its own marker, so a point that coincides with another
# still shows (the student's ring is hollow: what lies under it stays visible).
_STYLES = {
    "frontier": {"backgroundColor": BLUE, "borderColor": BLUE, "pointRadius": 4, "order": 4},
    "baseline": {
        "backgroundColor": GREY, "borderColor": "#24292f", "borderWidth": 1,
        "pointStyle": "triangle", "pointRadius": 9, "order": 2,
    },
    "sqrt": {
        "backgroundColor": PURPLE, "borderColor": "#24292f", "borderWidth": 1,
        "pointStyle": "rectRot", "pointRadius": 8, "order": 1,
    },
    "student": {
        "backgroundColor": "rgba(0,0,0,0)", "borderColor": ORANGE, "borderWidth": 3,
        "pointStyle": "circle", "pointRadius": 11, "order": 0,
    },
}  # fmt: skip


def run_chart(result: dict[str, Any]) -> RunChart | None:
    """The student's point beside no checkpointing, the √N schedule and the optimal
    frontier (least recomputation at each peak), with the budget as a vertical line."""
    reference = result.get("reference")
    if not reference:
        return None
    labels = {
        "student": _("Your policy"),
        "baseline": _("No checkpointing"),
        "sqrt": _("√N segments"),
        "frontier": _("Optimal frontier"),
    }
    points = [
        ChartPoint(
            "student",
            labels["student"],
            result["peak_activation_bytes"],
            result["recompute_flops"],
        ),
        ChartPoint("baseline", labels["baseline"], result["baseline_peak_activation_bytes"], 0),
    ]
    if reference.get("sqrt"):
        sqrt = reference["sqrt"]
        points.append(
            ChartPoint(
                "sqrt", labels["sqrt"], sqrt["peak_activation_bytes"], sqrt["recompute_flops"]
            )
        )
    frontier = sorted(reference.get("frontier") or [], key=lambda p: p["peak_activation_bytes"])
    points += [
        ChartPoint("frontier", labels["frontier"], p["peak_activation_bytes"], p["recompute_flops"])
        for p in frontier
    ]
    budget = int(result.get("budget_bytes") or 0)
    top = max(point.recompute_flops for point in points) / GFLOP or 1
    datasets: list[dict[str, Any]] = []
    for kind in ("student", "sqrt", "baseline", "frontier"):
        mine = [point for point in points if point.kind == kind]
        if not mine:
            continue
        datasets.append(
            {
                "label": labels[kind],
                "data": [_xy(point) for point in mine],
                "showLine": kind == "frontier",
                **_STYLES[kind],
            }
        )
    datasets.append(
        {
            "label": _("Budget"),
            "data": [{"x": budget / MIB, "y": 0}, {"x": budget / MIB, "y": top}],
            "borderColor": RED,
            "backgroundColor": RED,
            "borderDash": [6, 4],
            "pointRadius": 0,
            "showLine": True,
            "order": 5,
        }
    )
    config = {
        "type": "scatter",
        "data": {"datasets": datasets},
        "options": {
            "animation": False,
            "responsive": True,
            "maintainAspectRatio": False,
            "plugins": {
                "legend": {"display": True, "position": "bottom", "labels": {"usePointStyle": True}}
            },
            "scales": {
                "x": {
                    "type": "linear",
                    "beginAtZero": True,
                    "title": {"display": True, "text": _("Peak activation memory (MiB)")},
                },
                "y": {
                    "type": "linear",
                    "beginAtZero": True,
                    "title": {"display": True, "text": _("Recomputed GFLOP")},
                },
            },
        },
    }
    return RunChart(points, budget, config)
