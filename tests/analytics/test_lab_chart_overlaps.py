"""The class's lab chart: runs of one policy measure the same figures, so they share one
point; the point grows with them and its tooltip names the students, without jitter."""

from __future__ import annotations

import pytest
from django.utils import timezone

from analytics.charts import lab_charts
from analytics.selectors import lab_dashboard
from labs.models import LabRun, RunStatus
from tests.grades_helpers import graded_placement, student
from tests.labs_helpers import small_lab


@pytest.mark.usefixtures("db", "quiz")
def test_runs_on_one_point_are_one_larger_point_that_names_its_students(fake_lms):
    placement = graded_placement(fake_lms, small_lab())
    now = timezone.now()
    for number, (name, peak, recompute) in enumerate(
        [("Ada", 3000, 4000), ("Boris", 3000, 4000), ("Chen", 3000, 4000), ("Dana", 5000, 0)]
    ):
        user = student(placement, f"s{number}")
        user.first_name = name
        user.save()
        LabRun.objects.create(
            placement=placement,
            user=user,
            number=1,
            policy={"kind": "sqrt"},
            submitted_at=now,
            next_attempt_at=now,
            status=RunStatus.SUCCEEDED,
            score=0.5,
            result={
                "peak_activation_bytes": peak,
                "recompute_flops": recompute,
                "within_budget": True,
                "baseline_peak_activation_bytes": 4616,
                "reference": {"frontier": []},
            },
        )
    runs = lab_charts(lab_dashboard(placement))["runs"]["data"]["datasets"][0]
    by_runs = {point["runs"]: point for point in runs["data"]}
    assert sorted(by_runs) == [1, 3]
    shared = by_runs[3]
    assert (shared["x"], shared["y"]) == (3000 / 2**20, 4000 / 1e9)  # exact, not jittered
    assert shared["label"] == "3 runs with these figures: Ada, Boris, Chen"
    radius = dict(zip((point["runs"] for point in runs["data"]), runs["pointRadius"], strict=True))
    assert radius[3] > radius[1]
