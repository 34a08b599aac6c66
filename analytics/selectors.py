"""The dashboards' figures, each from a fixed number of SQL aggregates whatever the class
size: frequency tables come back from GROUP BY and statistics.py does the rest."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.db.models import Avg, Count, F, QuerySet, Sum
from django.db.models.functions import TruncDate

from activities.texts import localized
from assessments.models import Attempt, AttemptState, Option, Question, Response
from assessments.selectors import current_version, placed_quiz
from gradesync.models import SyncState
from gradesync.selectors import newest_syncs
from labs.models import LabRun, RunStatus
from labs.selectors import placed_lab
from lti.models import Membership, ResourceLink, Role

from .statistics import (
    THIRD,
    ItemStatistics,
    QuizStatistics,
    effective_weights,
    group_share,
    item_statistics,
    quiz_statistics,
    total_variance,
)

COUNTING_RULES = ("all", "first", "last", "highest")
NOT_ATTEMPTED_SHOWN = 50
# Group shares are sums of fractions: equal shares may differ by a rounding residue.
SHARE_EPSILON = 1e-9


@dataclass(frozen=True)
class AttemptFilter:
    """Which finished attempts count: every one, or each student's first (number 1), last
    or highest (as assessments.services.refresh_grade keeps them), finished within
    [finished_after, finished_before)."""

    counting: str = "all"
    finished_after: datetime | None = None
    finished_before: datetime | None = None


def _without_staff(work: QuerySet[Any], placement: ResourceLink) -> QuerySet[Any]:
    """The placement's ``work`` (attempts, runs) without the course staff's own: an
    instructor trying the activity is not a student, as Moodle's statistics leave out
    previews."""
    staff = Membership.objects.filter(context_id=placement.context_id, role=Role.STAFF)
    return work.filter(placement=placement).exclude(user__in=staff.values("user_id"))


def students_attempts(placement: ResourceLink) -> QuerySet[Attempt]:
    return _without_staff(Attempt.objects.all(), placement)


def students_runs(placement: ResourceLink) -> QuerySet[LabRun]:
    return _without_staff(LabRun.objects.all(), placement)


def counted_attempts(placement: ResourceLink, rules: AttemptFilter) -> QuerySet[Attempt]:
    attempts = students_attempts(placement).filter(state=AttemptState.FINISHED)
    if rules.counting == "first":
        attempts = attempts.filter(number=1)
    elif rules.counting == "last":
        attempts = attempts.filter(is_last_finished=True)
    elif rules.counting == "highest":
        attempts = attempts.filter(is_highest=True)
    if rules.finished_after:
        attempts = attempts.filter(finished_at__gte=rules.finished_after)
    if rules.finished_before:
        attempts = attempts.filter(finished_at__lt=rules.finished_before)
    return attempts


@dataclass(frozen=True)
class OptionRow:
    key: str
    text: str
    is_correct: bool
    chosen: int
    share: float | None  # 0 to 1, as the API gives it; pages show percentages
    share_top_third: float | None
    share_bottom_third: float | None
    never_chosen: bool
    attracts_strong_students: bool  # wrong, and chosen more by the top third than the bottom
    beats_key: bool  # wrong, and chosen more often than the right option

    @property
    def flagged(self) -> bool:
        return self.attracts_strong_students or self.beats_key


@dataclass(frozen=True)
class QuestionRow:
    key: str
    position: int
    text: str
    answered: int
    mean_seconds: float | None
    statistics: ItemStatistics
    options: list[OptionRow]

    @property
    def flagged(self) -> bool:
        """A wrong option beats the key or draws the strong students: the question (or its
        key) needs a look."""
        return any(option.flagged for option in self.options)


@dataclass(frozen=True)
class SyncSummary:
    synced: int = 0
    pending: int = 0
    failed: int = 0
    failure_reasons: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class QuizDashboard:
    placement: ResourceLink
    rules: AttemptFilter
    statistics: QuizStatistics
    histogram: list[tuple[int, int]]
    questions: list[QuestionRow]
    timeline: list[tuple[date, int, int]]
    languages: list[tuple[str, int]]
    not_attempted_count: int
    not_attempted: list[str]
    sync: SyncSummary


def _attempt_tables(counted: QuerySet[Attempt]) -> tuple[dict[int, int], dict[str, int]]:
    totals: dict[int, int] = defaultdict(int)
    languages: dict[str, int] = defaultdict(int)
    for row in counted.values("score", "language").annotate(n=Count("pk")).order_by():
        totals[row["score"]] += row["n"]
        languages[row["language"]] += row["n"]
    return dict(totals), dict(languages)


def _response_table(counted: QuerySet[Attempt]) -> list[dict[str, Any]]:
    """One row per (question, option, right or wrong, attempt total): counts and time.
    Grouped by ids (no join to the question and option tables over every response), then
    named by their stable keys, which hold across quiz versions."""
    rows = list(
        Response.objects.filter(attempt__in=counted)
        .values("question_id", "option_id", "is_correct", "attempt__score")
        .annotate(n=Count("pk"), seconds=Sum("seconds_spent"), timed=Count("seconds_spent"))
        .order_by()
    )
    # The questions the answers were given to, whichever quiz placed them: a placement
    # re-pointed at another quiz keeps its attempts on the one placed before.
    question_keys = dict(
        Question.objects.filter(pk__in={row["question_id"] for row in rows}).values_list(
            "pk", "key"
        )
    )
    option_keys = dict(
        Option.objects.filter(pk__in={row["option_id"] for row in rows}).values_list("pk", "key")
    )
    for row in rows:
        row["question__key"] = question_keys[row["question_id"]]
        row["option__key"] = option_keys[row["option_id"]]
    return rows


def _timeline(placement: ResourceLink, rules: AttemptFilter) -> list[tuple[date, int, int]]:
    attempts = students_attempts(placement)
    if rules.finished_after:
        attempts = attempts.filter(started_at__gte=rules.finished_after)
    if rules.finished_before:
        attempts = attempts.filter(started_at__lt=rules.finished_before)
    started = dict(
        attempts.annotate(day=TruncDate("started_at"))
        .values("day")
        .annotate(n=Count("pk"))
        .order_by()
        .values_list("day", "n")
    )
    finished = dict(
        attempts.filter(finished_at__isnull=False)
        .annotate(day=TruncDate("finished_at"))
        .values("day")
        .annotate(n=Count("pk"))
        .order_by()
        .values_list("day", "n")
    )
    return [
        (day, started.get(day, 0), finished.get(day, 0)) for day in sorted({*started, *finished})
    ]


def _not_attempted(placement: ResourceLink) -> tuple[int, list[str]]:
    """Students on the course's roster (NRPS or launches) without an attempt here."""
    members = Membership.objects.filter(
        context_id=placement.context_id, role=Role.LEARNER, is_active=True
    ).exclude(user__in=Attempt.objects.filter(placement=placement).values("user"))
    count = members.count()
    names = [
        name or f"{first} {last}".strip() or username
        for name, first, last, username in members.order_by(
            "user__lti_user__name", "user__last_name", "user__username"
        ).values_list(
            "user__lti_user__name", "user__first_name", "user__last_name", "user__username"
        )[:NOT_ATTEMPTED_SHOWN]
    ]
    return count, names


def sync_summary(placement: ResourceLink) -> SyncSummary:
    """The state of each student's newest grade delivery, and why the failed ones failed."""
    latest = newest_syncs(placement)
    states = dict(
        latest.values("state").annotate(n=Count("pk")).order_by().values_list("state", "n")
    )
    reasons = list(
        latest.filter(state=SyncState.FAILED)
        .values("last_error")
        .annotate(n=Count("pk"))
        .order_by("-n")
        .values_list("last_error", "n")[:10]
    )
    return SyncSummary(
        synced=states.get(SyncState.SYNCED, 0),
        pending=states.get(SyncState.PENDING, 0),
        failed=states.get(SyncState.FAILED, 0),
        failure_reasons=reasons,
    )


def quiz_dashboard(
    placement: ResourceLink, rules: AttemptFilter, language: str = "en"
) -> QuizDashboard:
    counted = counted_attempts(placement, rules)
    totals, languages = _attempt_tables(counted)
    table = _response_table(counted)
    version = current_version(placed_quiz(placement))
    questions = list(version.questions.prefetch_related("options").order_by("position"))
    maximum = len(questions)

    by_question: dict[str, dict[tuple[int, int], int]] = defaultdict(lambda: defaultdict(int))
    by_option: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    seconds: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in table:
        key, total = row["question__key"], row["attempt__score"]
        by_question[key][(1 if row["is_correct"] else 0, total)] += row["n"]
        by_option[(key, row["option__key"])][total] += row["n"]
        seconds[key][0] += row["seconds"] or 0
        seconds[key][1] += row["timed"]

    count = sum(totals.values())
    variance_t = total_variance(totals)
    partial = [
        item_statistics(
            totals,
            by_question[q.key],
            options=len(q.options.all()),
            questions=maximum,
            effective_weight=None,
        )
        for q in questions
    ]
    weights = effective_weights([s.covariance_with_total for s in partial])
    rows = []
    for question, stats, weight in zip(questions, partial, weights, strict=True):
        stats = ItemStatistics(**{**stats.__dict__, "effective_weight": weight})
        spent, timed = seconds[question.key]
        options = []
        key_chosen = sum(
            sum(by_option.get((question.key, option.key), {}).values())
            for option in question.options.all()
            if option.is_correct
        )
        for option in question.options.all():
            chosen_by_total = by_option.get((question.key, option.key), {})
            chosen = sum(chosen_by_total.values())
            top = group_share(totals, chosen_by_total, THIRD, upper=True) if count else None
            bottom = group_share(totals, chosen_by_total, THIRD, upper=False) if count else None
            wrong = not option.is_correct
            options.append(
                OptionRow(
                    key=option.key,
                    text=localized(option.text, language),
                    is_correct=option.is_correct,
                    chosen=chosen,
                    share=chosen / count if count else None,
                    share_top_third=top,
                    share_bottom_third=bottom,
                    never_chosen=count > 0 and chosen == 0,
                    attracts_strong_students=(
                        wrong
                        and top is not None
                        and bottom is not None
                        and top - bottom > SHARE_EPSILON
                    ),
                    beats_key=wrong and chosen > key_chosen,
                )
            )
        rows.append(
            QuestionRow(
                key=question.key,
                position=question.position,
                text=localized(question.text, language),
                answered=sum(by_question[question.key].values()),
                mean_seconds=spent / timed if timed else None,
                statistics=stats,
                options=options,
            )
        )
    item_variances = [
        None if s.standard_deviation is None else (s.standard_deviation / 100) ** 2 for s in partial
    ]
    statistics = quiz_statistics(totals, item_variances if variance_t else [], maximum)
    not_attempted_count, not_attempted = _not_attempted(placement)
    return QuizDashboard(
        placement=placement,
        rules=rules,
        statistics=statistics,
        # Up to the highest score made: an attempt of an earlier, longer version still counts.
        histogram=[(score, totals.get(score, 0)) for score in range(max(maximum, *totals, 0) + 1)],
        questions=rows,
        timeline=_timeline(placement, rules),
        languages=sorted(languages.items(), key=lambda item: -item[1]),
        not_attempted_count=not_attempted_count,
        not_attempted=not_attempted,
        sync=sync_summary(placement),
    )


# --- Labs ------------------------------------------------------------------------------

LAB_POINTS_SHOWN = 2000


@dataclass(frozen=True)
class LabPoint:
    student: str
    peak_bytes: int
    recompute_flops: int
    score: float
    within_budget: bool


@dataclass(frozen=True)
class LabDashboard:
    placement: ResourceLink
    budget_bytes: int
    runs: int
    measured: int
    within_budget: int
    statuses: list[tuple[str, int]]
    failures: list[tuple[str, str, int]]
    points: list[LabPoint]
    frontier: list[dict[str, int]]
    baseline_peak_bytes: int | None
    queued: int
    running: int
    mean_wait_seconds: float | None
    run_seconds_by_device: list[tuple[str, float]]
    sync: SyncSummary

    @property
    def share_within_budget(self) -> float | None:
        return self.within_budget / self.measured if self.measured else None

    @property
    def status_rows(self) -> list[tuple[str, str, int]]:
        """(status, its name in the reader's language, runs)."""
        return [(status, _status_label(status), count) for status, count in self.statuses]

    @property
    def failure_rows(self) -> list[tuple[str, str, int]]:
        return [(_status_label(status), error, count) for status, error, count in self.failures]


def _status_label(status: str) -> str:
    try:
        return str(RunStatus(status).label)
    except ValueError:
        return status


def lab_dashboard(placement: ResourceLink) -> LabDashboard:
    runs = students_runs(placement)
    statuses = dict(
        runs.values("status").annotate(n=Count("pk")).order_by().values_list("status", "n")
    )
    failures = list(
        runs.filter(status__in=[RunStatus.REJECTED, RunStatus.INFRASTRUCTURE_FAILED])
        .values("status", "error")
        .annotate(n=Count("pk"))
        .order_by("-n")
        .values_list("status", "error", "n")[:20]
    )
    measured = runs.filter(status=RunStatus.SUCCEEDED)
    rows = list(
        measured.order_by("-submitted_at").values(
            "user__lti_user__name",
            "user__first_name",
            "user__last_name",
            "user__username",
            "score",
            "result__peak_activation_bytes",
            "result__recompute_flops",
            "result__within_budget",
        )[:LAB_POINTS_SHOWN]
    )
    points = [
        LabPoint(
            student=row["user__lti_user__name"]
            or f"{row['user__first_name']} {row['user__last_name']}".strip()
            or row["user__username"],
            peak_bytes=int(row["result__peak_activation_bytes"]),
            recompute_flops=int(row["result__recompute_flops"]),
            score=float(row["score"] or 0),
            within_budget=bool(row["result__within_budget"]),
        )
        for row in rows
    ]
    reference = measured.order_by("-pk").values_list("result", flat=True).first() or {}
    started = runs.filter(started_at__isnull=False)
    mean_wait = started.aggregate(wait=Avg(F("started_at") - F("submitted_at")))["wait"]
    busy = (
        started.filter(finished_at__isnull=False)
        .values("device")
        .annotate(busy=Sum(F("finished_at") - F("started_at")))
        .order_by()
        .values_list("device", "busy")
    )
    return LabDashboard(
        placement=placement,
        budget_bytes=placed_lab(placement).budget_bytes,
        runs=sum(statuses.values()),
        measured=statuses.get(RunStatus.SUCCEEDED, 0),
        within_budget=measured.filter(result__within_budget=True).count(),
        statuses=sorted(statuses.items()),
        failures=failures,
        points=points,
        frontier=(reference.get("reference") or {}).get("frontier", []),
        baseline_peak_bytes=reference.get("baseline_peak_activation_bytes"),
        queued=statuses.get(RunStatus.QUEUED, 0),
        running=statuses.get(RunStatus.RUNNING, 0),
        mean_wait_seconds=None if mean_wait is None else mean_wait.total_seconds(),
        run_seconds_by_device=sorted(
            (device or "—", seconds.total_seconds()) for device, seconds in busy
        ),
        sync=sync_summary(placement),
    )
