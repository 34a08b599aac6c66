"""Reads for the lab pages and the API: the rules in force, queues, runs and charts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import models
from django.db.models import Q, QuerySet

from assessments.grading import ComputedGrade
from assessments.models import Grade, GradingMethod
from lti.models import ResourceLink

from .grading import GradedRun, lab_grade
from .models import LabRun, LabSchedule, LatePolicy, RunStatus
from .runner.spec import REFERENCE_VERSION

# A lab is graded from its best or its last run.
LAB_METHODS = (GradingMethod.HIGHEST, GradingMethod.LAST)


@dataclass(frozen=True)
class LabRules:
    opens_at: datetime | None
    due_at: datetime | None
    closes_at: datetime | None
    max_runs: int
    grading_method: str
    late_policy: LatePolicy
    late_penalty_percent: int


def lab_policy(placement: ResourceLink) -> LabRules:
    """The lab's defaults, then what deep linking placed, then the instructor's schedule."""
    lab = placement.lab
    schedule = LabSchedule.objects.filter(pk=placement.pk).first() or LabSchedule()
    return LabRules(
        opens_at=schedule.opens_at,
        due_at=schedule.due_at,
        closes_at=schedule.closes_at,
        max_runs=next(
            limit
            for limit in (schedule.max_runs, placement.max_attempts, lab.max_runs)
            if limit is not None
        ),
        grading_method=schedule.grading_method
        or (placement.grading_method if placement.grading_method in LAB_METHODS else "")
        or lab.grading_method,
        late_policy=LatePolicy(schedule.late_policy),
        late_penalty_percent=schedule.late_penalty_percent,
    )


class SubmissionWindow(models.TextChoices):
    NOT_OPEN = "not_open"
    OPEN = "open"
    LATE = "late"  # past due, late runs accepted
    CLOSED = "closed"


def submission_window(rules: LabRules, now: datetime) -> SubmissionWindow:
    """Whether runs are accepted now; labs.services.submit_run refuses runs by it."""
    if rules.opens_at and now < rules.opens_at:
        return SubmissionWindow.NOT_OPEN
    if rules.closes_at and now >= rules.closes_at:
        return SubmissionWindow.CLOSED
    if rules.due_at and now > rules.due_at:
        late_refused = rules.late_policy == LatePolicy.REFUSE
        return SubmissionWindow.CLOSED if late_refused else SubmissionWindow.LATE
    return SubmissionWindow.OPEN


def runs_of(user: Any, placement: ResourceLink) -> QuerySet[LabRun]:
    return LabRun.objects.filter(user=user, placement=placement).order_by("-number")


def placement_runs(placement: ResourceLink) -> QuerySet[LabRun]:
    return (
        LabRun.objects.filter(placement=placement)
        .select_related("user__lti_user")
        .order_by("-submitted_at")
    )


def runs_left(rules: LabRules, runs: list[LabRun]) -> int | None:
    """Runs the student may still submit; None when there is no limit."""
    limit = rules.max_runs
    if not limit:
        return None
    used = sum(run.status != RunStatus.INFRASTRUCTURE_FAILED for run in runs)
    return max(limit - used, 0)


def lab_grades(
    placement: ResourceLink, rules: LabRules, *, user_id: int | None = None
) -> dict[int, ComputedGrade]:
    """Each student's lab grade by the rules in force, from their measured runs among those
    the run limit allows (the first ones, not counting runs the machine could not carry out:
    runs made before the limit was lowered stop counting), one query."""
    runs = LabRun.objects.filter(placement=placement).exclude(
        status=RunStatus.INFRASTRUCTURE_FAILED
    )
    if user_id is not None:
        runs = runs.filter(user_id=user_id)
    counting: dict[int, list[GradedRun]] = {}
    seen: dict[int, int] = {}
    for student, number, status, submitted_at, score, is_late in runs.order_by(
        "user_id", "number"
    ).values_list("user_id", "number", "status", "submitted_at", "score", "is_late"):
        seen[student] = seen.get(student, 0) + 1
        if rules.max_runs and seen[student] > rules.max_runs:
            continue
        if status == RunStatus.SUCCEEDED:
            counting.setdefault(student, []).append(
                GradedRun(submitted_at=submitted_at, score=score, is_late=is_late, number=number)
            )
    grades = {}
    for student, graded in counting.items():
        computed = lab_grade(
            graded, rules.grading_method, rules.late_policy, rules.late_penalty_percent
        )
        if computed is not None:
            grades[student] = computed
    return grades


def grade_of(user: Any, placement: ResourceLink) -> Grade | None:
    return Grade.objects.filter(user=user, placement=placement).first()


@dataclass(frozen=True)
class RunReport:
    """The figures a student's result page explains, and why the score is what it is."""

    peak_bytes: int
    budget_bytes: int
    baseline_peak_bytes: int
    recompute_flops: int
    forward_flops: int
    optimal_flops: int | None
    grads_match: bool
    within_budget: bool
    score: float
    reason: str
    graded_before: bool  # graded by an earlier scoring (docs/labs.md, "Runs graded before")
    device: str
    time_ms: float | None
    baseline_time_ms: float | None
    recompute_pointwise_ops: int


def _legacy_reason(result: dict[str, Any]) -> str:
    """Why a run graded by the first scoring (against the optimum at its own peak) scored
    what it did."""
    if not result["grads_match"]:
        return "grads_differ"
    if not result["within_budget"]:
        return "over_budget"
    if result["recompute_flops"] <= 0 or result["optimal_recompute_flops"] is None:
        return "legacy_full"
    return "legacy_ratio"


def run_report(run: LabRun) -> RunReport | None:
    result = run.result
    if not result or "score" not in result:
        return None
    graded_before = result.get("scoring_version") != REFERENCE_VERSION
    reason = _legacy_reason(result) if graded_before else result["score_reason"]
    return RunReport(
        peak_bytes=result["peak_activation_bytes"],
        budget_bytes=result["budget_bytes"],
        baseline_peak_bytes=result["baseline_peak_activation_bytes"],
        recompute_flops=result["recompute_flops"],
        forward_flops=result["forward_flops"],
        optimal_flops=result["optimal_recompute_flops"],
        grads_match=result["grads_match"],
        within_budget=result["within_budget"],
        score=result["score"],
        reason=reason,
        graded_before=graded_before,
        device=result["device"],
        time_ms=result.get("time_ms_median"),
        baseline_time_ms=result.get("baseline_time_ms_median"),
        recompute_pointwise_ops=result.get("recompute_pointwise_ops", 0),
    )


def submissions_end(rules: LabRules) -> datetime | None:
    """When the last run can be submitted: the closing time, or the due time when late runs
    are refused; None while runs are accepted without an end."""
    if rules.closes_at:
        return rules.closes_at
    if rules.due_at and rules.late_policy == LatePolicy.REFUSE:
        return rules.due_at
    return None


def optimal_policy(placement: ResourceLink, now: datetime, *, staff: bool) -> dict | None:
    """The shape of the policy that reaches the optimum, once no run can be submitted any
    more (or for the course's staff): before then it would be the answer."""
    reference = placement.lab.reference or {}
    if reference.get("version") != REFERENCE_VERSION:
        return None
    end = submissions_end(lab_policy(placement))
    if staff or (end is not None and now >= end):
        return reference.get("optimal_policy")
    return None


def queue_position(run: LabRun) -> int | None:
    """1 for the next run the GPU queue will take; None once the run has started."""
    if run.status != RunStatus.QUEUED:
        return None
    ahead = LabRun.objects.filter(status=RunStatus.QUEUED).filter(
        Q(next_attempt_at__lt=run.next_attempt_at)
        | Q(next_attempt_at=run.next_attempt_at, pk__lt=run.pk)
    )
    return ahead.count() + 1


@dataclass(frozen=True)
class ChartPoint:
    label: str
    peak_bytes: int
    recompute_flops: int
    x: float
    y: float
    kind: str


@dataclass(frozen=True)
class RunChart:
    """Memory (x) against recomputation (y), scaled to an SVG of ``width`` × ``height``."""

    width: int
    height: int
    points: list[ChartPoint]
    frontier_path: str
    budget_x: float
    max_peak_bytes: int
    max_recompute_flops: int


CHART_WIDTH, CHART_HEIGHT, MARGIN = 560, 300, 48


def run_chart(result: dict[str, Any], labels: dict[str, str]) -> RunChart | None:
    """The student's point beside the unchecked baseline, the sqrt(N) schedule and the
    optimal frontier; ``labels`` names them in the page's language."""
    reference = result.get("reference")
    if not reference:
        return None
    raw = [
        (labels["student"], result["peak_activation_bytes"], result["recompute_flops"], "student"),
        (labels["baseline"], result["baseline_peak_activation_bytes"], 0, "baseline"),
    ]
    if reference.get("sqrt"):
        sqrt = reference["sqrt"]
        raw.append((labels["sqrt"], sqrt["peak_activation_bytes"], sqrt["recompute_flops"], "sqrt"))
    frontier = reference.get("frontier") or []
    raw += [
        (labels["frontier"], p["peak_activation_bytes"], p["recompute_flops"], "frontier")
        for p in frontier
    ]
    budget = int(result.get("budget_bytes") or 0)
    max_x = max([peak for _l, peak, _r, _k in raw] + [budget]) or 1
    max_y = max(recompute for _l, _p, recompute, _k in raw) or 1

    def sx(value: float) -> float:
        return round(MARGIN + (CHART_WIDTH - 2 * MARGIN) * value / max_x, 1)

    def sy(value: float) -> float:
        return round(CHART_HEIGHT - MARGIN - (CHART_HEIGHT - 2 * MARGIN) * value / max_y, 1)

    points = [
        ChartPoint(label, peak, recompute, sx(peak), sy(recompute), kind)
        for label, peak, recompute, kind in raw
    ]
    ordered = sorted((p for p in points if p.kind == "frontier"), key=lambda p: p.peak_bytes)
    path = " ".join(f"{'M' if i == 0 else 'L'}{p.x},{p.y}" for i, p in enumerate(ordered))
    return RunChart(CHART_WIDTH, CHART_HEIGHT, points, path, sx(budget), max_x, max_y)
