"""Reads for the lab pages and the API: the rules in force, queues, runs and charts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db import models
from django.db.models import Q, QuerySet
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

from activities.grading import ComputedGrade, round_grade
from activities.models import GradingMethod
from activities.selectors import PlannedGrade
from lti.models import ResourceLink

from .grading import LAB_SCORE_MAXIMUM, GradedRun, lab_grade
from .models import Lab, LabRun, LabSchedule, LatePolicy, RunStatus
from .runner.costmodel import BlockCosts, plan_cost
from .runner.policies import parse_policy, policy_text
from .runner.spec import MODEL_OP_KINDS, REFERENCE_VERSION

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


def placed_lab(placement: ResourceLink) -> Lab:
    """The lab at ``placement``, for code that serves lab placements only."""
    try:
        return placement.lab_placement.lab
    except ObjectDoesNotExist:
        raise ValueError(f"the placement {placement.pk} is not a lab's") from None


def lab_policy(placement: ResourceLink) -> LabRules:
    """The lab's defaults, then what deep linking placed, then the instructor's schedule."""
    lab = placed_lab(placement)
    schedule = LabSchedule.objects.filter(pk=placement.pk).first() or LabSchedule()
    placed = placement.placement
    return LabRules(
        opens_at=schedule.opens_at,
        due_at=schedule.due_at,
        closes_at=schedule.closes_at,
        max_runs=next(
            limit
            for limit in (schedule.max_runs, placed.max_attempts, lab.max_runs)
            if limit is not None
        ),
        grading_method=schedule.grading_method
        or (placed.grading_method if placed.grading_method in LAB_METHODS else "")
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
    # is_late is the manager's annotation (labs/models.py), which the stubs cannot see.
    rows = runs.order_by("user_id", "number").values_list(  # type: ignore[misc]
        "user_id", "number", "status", "submitted_at", "score", "is_late"
    )
    for student, number, status, submitted_at, score, is_late in rows:
        seen[student] = seen.get(student, 0) + 1
        if rules.max_runs and seen[student] > rules.max_runs:
            continue
        if status == RunStatus.SUCCEEDED and score is not None:  # a measured run has one
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


@dataclass(frozen=True)
class Timing:
    """A step's time over the timed repeats: the median and the spread around it. Runs
    measured before the spread was kept have only the median (``repeats`` 0)."""

    median_ms: float
    min_ms: float | None
    max_ms: float | None
    repeats: int

    @classmethod
    def of(cls, median: float | None, timings: list[float] | None) -> Timing | None:
        if median is None:
            return None
        if not timings:
            return cls(median, None, None, 0)
        return cls(median, min(timings), max(timings), len(timings))


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
    timing: Timing | None
    baseline_timing: Timing | None
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
        timing=Timing.of(result.get("time_ms_median"), result.get("timings_ms")),
        baseline_timing=Timing.of(
            result.get("baseline_time_ms_median"), result.get("baseline_timings_ms")
        ),
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
    more (or for the course's staff): before then it would be the answer.

    Never in the demo course: anyone may enter it, as its staff too, and close its lab, and
    the lab is the one real courses place, so there it would be the answer to their labs."""
    if placement.context.is_demo:
        return None
    reference = placed_lab(placement).reference or {}
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


# CommonMark with raw HTML off: an author's "<script>" shows as text, and links with
# javascript: and similar schemes are not made links.
_MARKDOWN = MarkdownIt("commonmark", {"html": False})


@lru_cache(maxsize=64)
def instructions_html(text: str) -> SafeString:
    """A lab's instructions (Markdown in ``content/labs.yaml``) as HTML; rendered once per
    text, that is once per lab version and language, not on every request."""
    return mark_safe(_MARKDOWN.render(text))  # safe: the renderer escapes raw HTML


def policy_json(policy: Any) -> str:
    """A policy as the student reads and edits it: indented JSON with sorted keys."""
    if isinstance(policy, str):
        try:
            policy = json.loads(policy)
        except ValueError:
            return policy
    return json.dumps(policy, indent=2, sort_keys=True, ensure_ascii=False)


def op_kinds_of(lab: Lab) -> tuple[str, ...]:
    """The op kinds a selective policy can keep in this lab's model."""
    return MODEL_OP_KINDS[lab.model_kind]


@dataclass(frozen=True)
class PolicyEstimate:
    """What the grading cost model says a policy will measure, before it runs."""

    peak_bytes: int
    recompute_flops: int
    budget_bytes: int
    forward_flops: int

    @property
    def within_budget(self) -> bool:
        return self.peak_bytes <= self.budget_bytes

    @property
    def over_budget_bytes(self) -> int:
        return max(self.peak_bytes - self.budget_bytes, 0)

    @property
    def recompute_passes(self) -> float:
        """Recomputation as a share of one forward pass."""
        return self.recompute_flops / self.forward_flops if self.forward_flops else 0.0


def policy_estimate(lab: Lab, policy: str | Mapping[str, Any]) -> PolicyEstimate | None:
    """The peak and recomputation the runner will measure for ``policy``, from the lab's
    reference: segment policies through the cost model fitted on the meter (the one that
    finds the optimum runs are graded against), selective ones from the reference's
    measurement of the same op kinds. None while the lab's reference is not computed yet.
    Raises PolicyError, as submitting would, for a policy that cannot run."""
    plan = parse_policy(policy if isinstance(policy, str) else policy_text(policy), lab.blocks)
    reference = lab.reference or {}
    if (
        reference.get("version") != REFERENCE_VERSION
        or reference.get("budget_bytes") != lab.budget_bytes
        or "block_costs" not in reference
    ):
        return None
    if plan.save_ops is None:
        costs = BlockCosts.from_dict(reference["block_costs"])
        peak, recompute = plan_cost(costs, plan.segments)
    else:
        # Kinds the model does not run change nothing (the reference measured one policy
        # per set of kinds it runs).
        kept = plan.save_ops & set(op_kinds_of(lab))
        point = next(
            (p for p in reference.get("selective", []) if set(p["policy"]["save"]) == kept),
            None,
        )
        if point is None:
            return None
        peak, recompute = point["peak_activation_bytes"], point["recompute_flops"]
    return PolicyEstimate(
        peak_bytes=peak,
        recompute_flops=recompute,
        budget_bytes=lab.budget_bytes,
        forward_flops=reference["forward_flops"],
    )


def lab_plan(placement: ResourceLink, user_id: int | None) -> dict[int, PlannedGrade]:
    """Every student's grade on the lab placement by its rules in force."""
    rules = lab_policy(placement)
    return {
        student: PlannedGrade(
            student,
            round_grade(computed.fraction * LAB_SCORE_MAXIMUM),
            LAB_SCORE_MAXIMUM,
            rules.grading_method,
            computed.counted,
            computed.counted_number,
        )
        for student, computed in lab_grades(placement, rules, user_id=user_id).items()
    }
