"""Chart.js configurations for the dashboards: data as the page's tables show it, so each
chart and its accessible table come from the same figures."""

from __future__ import annotations

import math
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from .selectors import LabDashboard, QuizDashboard

BLUE, ORANGE, GREY, RED, PURPLE = "#0b5cad", "#c05600", "#59636e", "#b00020", "#8250df"
MIB, GFLOP = 2**20, 1e9


def _axes(x_title: str, y_title: str, x_scale: dict | None = None) -> dict[str, Any]:
    return {
        "animation": False,
        "responsive": True,
        "maintainAspectRatio": False,
        "scales": {
            "x": {"title": {"display": True, "text": x_title}, **(x_scale or {})},
            "y": {"title": {"display": True, "text": y_title}, "beginAtZero": True},
        },
    }


def quiz_charts(dashboard: QuizDashboard) -> dict[str, dict[str, Any]]:
    return {
        "histogram": {
            "type": "bar",
            "data": {
                "labels": [str(score) for score, _count in dashboard.histogram],
                "datasets": [
                    {
                        "label": _("Attempts"),
                        "data": [count for _score, count in dashboard.histogram],
                        "backgroundColor": BLUE,
                    }
                ],
            },
            "options": _axes(_("Score"), _("Attempts")),
        },
        "timeline": {
            "type": "line",
            "data": {
                "labels": [day.isoformat() for day, _s, _f in dashboard.timeline],
                "datasets": [
                    {
                        "label": _("Started"),
                        "data": [started for _d, started, _f in dashboard.timeline],
                        "borderColor": GREY,
                        "backgroundColor": GREY,
                    },
                    {
                        "label": _("Finished"),
                        "data": [finished for _d, _s, finished in dashboard.timeline],
                        "borderColor": BLUE,
                        "backgroundColor": BLUE,
                    },
                ],
            },
            "options": _axes(_("Day"), _("Attempts")),
        },
        "items": {
            "type": "bar",
            "data": {
                "labels": [f"Q{row.position}" for row in dashboard.questions],
                "datasets": [
                    {
                        "label": _("Facility index (%)"),
                        "data": [_round(row.statistics.facility) for row in dashboard.questions],
                        "backgroundColor": BLUE,
                    },
                    {
                        "label": _("Discrimination index (%)"),
                        "data": [
                            _round(row.statistics.discrimination_index)
                            for row in dashboard.questions
                        ],
                        "backgroundColor": ORANGE,
                    },
                ],
            },
            "options": _axes(_("Question"), "%"),
        },
        "scatter": _item_scatter(dashboard),
    }


def _item_scatter(dashboard: QuizDashboard) -> dict[str, Any]:
    """Facility against discrimination, one point per question (labelled Q1, Q2, … in
    the tooltip), the flagged questions in their own series so they stand out."""

    def points(flagged: bool) -> list[dict[str, Any]]:
        return [
            {
                "x": _round(row.statistics.facility),
                "y": _round(row.statistics.discrimination_index),
                "label": f"Q{row.position}",
            }
            for row in dashboard.questions
            if row.flagged == flagged
            and row.statistics.facility is not None
            and row.statistics.discrimination_index is not None
        ]

    options = _axes(
        _("Facility index (%)"),
        _("Discrimination index (%)"),
        x_scale={"type": "linear", "min": 0, "max": 100},
    )
    options["scales"]["y"].update({"beginAtZero": False, "suggestedMin": 0, "suggestedMax": 60})
    return {
        "type": "scatter",
        "data": {
            "datasets": [
                {
                    "label": _("Questions"),
                    "data": points(False),
                    "backgroundColor": BLUE,
                    "pointRadius": 6,
                },
                {
                    "label": _("Flagged: a wrong option needs a look"),
                    "data": points(True),
                    "backgroundColor": RED,
                    "pointStyle": "triangle",
                    "pointRadius": 9,
                },
            ]
        },
        "options": options,
    }


def lab_charts(dashboard: LabDashboard) -> dict[str, dict[str, Any]]:
    top = max(
        [p.recompute_flops for p in dashboard.points]
        + [p["recompute_flops"] for p in dashboard.frontier]
        + [1]
    )
    runs = _grouped_runs(dashboard)
    datasets: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "label": _("Runs (a larger point: several runs with the same figures)"),
            "data": runs,
            "backgroundColor": ORANGE,
            "borderColor": "#24292f",
            "borderWidth": 1,
            "pointRadius": [point["radius"] for point in runs],
        },
        {
            "type": "line",
            "label": _("Optimal frontier"),
            "data": [
                {"x": p["peak_activation_bytes"] / MIB, "y": p["recompute_flops"] / GFLOP}
                for p in sorted(dashboard.frontier, key=lambda p: p["peak_activation_bytes"])
            ],
            "borderColor": BLUE,
            "backgroundColor": BLUE,
            "showLine": True,
        },
        {
            "type": "line",
            "label": _("Budget"),
            "data": [
                {"x": dashboard.budget_bytes / MIB, "y": 0},
                {"x": dashboard.budget_bytes / MIB, "y": top / GFLOP},
            ],
            "borderColor": RED,
            "borderDash": [4, 3],
            "pointRadius": 0,
            "showLine": True,
        },
    ]
    if dashboard.baseline_peak_bytes:
        datasets.append(
            {
                "type": "scatter",
                "label": _("No checkpointing"),
                "data": [{"x": dashboard.baseline_peak_bytes / MIB, "y": 0}],
                "backgroundColor": GREY,
            }
        )
    return {
        "runs": {
            "type": "scatter",
            "data": {"datasets": datasets},
            "options": _axes(
                _("Peak activation memory (MiB)"),
                _("Recomputed GFLOP"),
                x_scale={"type": "linear", "beginAtZero": True},
            ),
        }
    }


def _grouped_runs(dashboard: LabDashboard) -> list[dict[str, Any]]:
    """One point per distinct (peak, recomputation): runs of one policy measure the same
    figures, so they would sit on one point. Its size grows with the runs on it and its
    tooltip names the students (no jitter: the position stays exact)."""
    groups: dict[tuple[int, int], list[str]] = {}
    for point in dashboard.points:
        groups.setdefault((point.peak_bytes, point.recompute_flops), []).append(point.student)
    grouped = []
    for (peak, recompute), students in groups.items():
        names = ", ".join(sorted(set(students)))
        runs = len(students)
        grouped.append(
            {
                "x": peak / MIB,
                "y": recompute / GFLOP,
                "runs": runs,
                "radius": min(4 + 2 * math.isqrt(runs * 4 - 3), 16),
                "label": ngettext(
                    "%(runs)d run with these figures: %(names)s",
                    "%(runs)d runs with these figures: %(names)s",
                    runs,
                )
                % {"runs": runs, "names": names},
            }
        )
    return grouped


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)
