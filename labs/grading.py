"""How lab runs become a grade: pure functions over figures and the schedule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from activities.grading import ComputedGrade
from activities.models import GradingMethod

from .models import LatePolicy

LAB_SCORE_MAXIMUM = Decimal(100)


@dataclass(frozen=True)
class GradedRun:
    submitted_at: datetime
    score: Decimal
    is_late: bool
    number: int = 0


def effective_score(run: GradedRun, late_policy: str, late_penalty_percent: int) -> Decimal:
    """The run's score after the late policy (a fraction from 0 to 1)."""
    if not run.is_late or late_policy == LatePolicy.ACCEPT:
        return run.score
    if late_policy == LatePolicy.PENALTY:
        return run.score * (Decimal(100) - Decimal(late_penalty_percent)) / Decimal(100)
    return Decimal(0)


def lab_grade_fraction(
    runs: Sequence[GradedRun], grading_method: str, late_policy: str, late_penalty_percent: int
) -> Decimal | None:
    """The best or the last measured run, after lateness; None without any measured run."""
    computed = lab_grade(runs, grading_method, late_policy, late_penalty_percent)
    return None if computed is None else computed.fraction


def lab_grade(
    runs: Sequence[GradedRun], grading_method: str, late_policy: str, late_penalty_percent: int
) -> ComputedGrade | None:
    """The grade from the measured runs that count, with the run it came from (the earliest
    of equal best runs)."""
    if not runs:
        return None
    ordered = sorted(runs, key=lambda run: run.submitted_at)
    scores = [effective_score(run, late_policy, late_penalty_percent) for run in ordered]
    last = grading_method == GradingMethod.LAST
    index = len(scores) - 1 if last else scores.index(max(scores))
    return ComputedGrade(scores[index], len(ordered), ordered[index].number or None)
