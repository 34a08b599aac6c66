"""Labs: loading them, submitting runs, executing them on the GPU queue, and grading."""

from __future__ import annotations

import json
import logging
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from activities.models import ChangeCause, Grade, Regrade
from activities.services import (
    change_activity_defaults,
    recompute_placement,
    set_placement_grade,
)
from lti.models import ResourceLink
from ops import jobs

from . import execution
from .activity import LAB
from .content import LabContent
from .errors import (
    DemoQueueFull,
    InvalidPolicy,
    InvalidSchedule,
    LabNotOpen,
    RunPending,
    policy_refusal,
)
from .grading import LAB_SCORE_MAXIMUM
from .models import Lab, LabRun, LabSchedule, LatePolicy, RunStatus, storable_moment
from .runner.policies import PolicyError, parse_policy, policy_text
from .runner.spec import REFERENCE_VERSION
from .selectors import (
    LabRules,
    SubmissionWindow,
    lab_grades,
    lab_policy,
    placed_lab,
    runs_left,
    submission_window,
)

logger = logging.getLogger(__name__)


def load_lab(content: LabContent) -> tuple[Lab, bool]:
    """Create or update the lab from its authored content; returns (lab, changed)."""
    fields = {
        "title": content.title,
        "instructions": content.instructions,
        "model_kind": content.model.kind,
        "blocks": content.model.blocks,
        "width": content.model.width,
        "batch": content.model.batch,
        "sequence": content.model.sequence,
        "heads": content.model.heads,
        "dropout": content.model.dropout,
        "seed": content.model.seed,
        "budget_bytes": content.budget_bytes,
        "max_runs": content.max_runs,
        "grading_method": content.grading_method,
        "content_hash": content.content_hash,
    }
    lab = Lab.objects.filter(slug=content.slug).first()
    if lab is None:
        return Lab.objects.create(slug=content.slug, **fields), True
    if lab.content_hash == content.content_hash:
        return lab, False
    # Another model or budget: the reference is computed again before the next run. Another
    # default run limit or grading method regrades the placements following it, as a change
    # in the admin does.
    change_activity_defaults(LAB, lab, actor=None, reference=None, **fields)
    return lab, True


class ReferenceUnavailable(Exception):
    """The lab's reference could not be computed: ``outcome`` says whether the runner
    refused the lab's model (a run of it is refused too) or the machine failed (retried
    like a run)."""

    def __init__(self, outcome: execution.Outcome) -> None:
        super().__init__(f"the lab's reference could not be computed: {outcome.message}")
        self.outcome = outcome


def ensure_reference(lab: Lab) -> dict:
    """The optimum the lab's runs are graded against, computed once (on the first run
    that needs it, or by ``load_labs --references``) and kept with the lab."""
    current = lab.reference
    if (
        current
        and current.get("version") == REFERENCE_VERSION
        and current.get("budget_bytes") == lab.budget_bytes
    ):
        return current
    outcome = execution.execute(
        lab.model_spec(),
        None,
        lab.budget_bytes,
        device=settings.LAB_DEVICE,
        repeats=0,
        timeout_seconds=settings.LAB_RUN_TIMEOUT_SECONDS,
        memory_cap_bytes=settings.LAB_MEMORY_CAP_BYTES,
    )
    if outcome.kind != execution.OutcomeKind.MEASURED or not outcome.result:
        raise ReferenceUnavailable(outcome)
    Lab.objects.filter(pk=lab.pk).update(reference=outcome.result)
    lab.reference = outcome.result
    return outcome.result


def ensure_schedule(placement: ResourceLink) -> LabSchedule:
    schedule, _created = LabSchedule.objects.get_or_create(placement=placement)
    return schedule


@dataclass(frozen=True)
class ScheduleChange:
    schedule: LabSchedule
    regrade: Regrade | None  # the class's grades recomputed, when the grading rules changed


@transaction.atomic
def update_schedule(
    placement: ResourceLink, *, actor: User | None = None, **fields: object
) -> ScheduleChange:
    """An instructor sets when the lab opens, is due and closes, and how runs count. A change
    of how runs count (the method, the run limit, the due time, the late policy) recomputes
    every grade of the class in the same transaction."""
    schedule = LabSchedule.objects.select_for_update().get(pk=ensure_schedule(placement).pk)
    previous = {name: getattr(schedule, name) for name in fields}
    for name, value in fields.items():
        setattr(schedule, name, value)
    opens, due, closes = schedule.opens_at, schedule.due_at, schedule.closes_at
    if opens and due and due < opens:
        raise InvalidSchedule(_("The due time must come after the opening time."))
    if closes and (due and closes < due or opens and closes < opens):
        raise InvalidSchedule(_("The closing time must come after the opening and due times."))
    if not 0 <= schedule.late_penalty_percent <= 100:
        raise InvalidSchedule(_("The late penalty is a percentage from 0 to 100."))
    if due is None or due > timezone.now():
        schedule.finalized_at = None  # a moved due time is settled again when it comes
    grading = ("due_at", "max_runs", "grading_method", "late_policy", "late_penalty_percent")
    rules_changed = any(
        getattr(schedule, name) != before for name, before in previous.items() if name in grading
    )
    schedule.save()
    regrade = None
    if rules_changed:  # the class is graded by one set of rules
        regrade = recompute_placement(placement=placement, actor=actor, cause=ChangeCause.SETTINGS)
    return ScheduleChange(schedule, regrade)


def _moment(value: object) -> datetime | None:
    """An ISO 8601 time from a custom parameter; naive ones are taken as UTC."""
    if not isinstance(value, str) or not value or len(value) > 40:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment if storable_moment(moment) else None


def schedule_from_custom(placement: ResourceLink, custom: dict) -> LabSchedule:
    """The schedule deep linking placed (custom parameters of the first launch); values
    that do not parse or do not fit together leave the lab's defaults."""
    penalty = str(custom.get("late_penalty_percent", ""))[:4]
    fields: dict[str, Any] = {
        name: _moment(custom.get(name)) for name in ("opens_at", "due_at", "closes_at")
    }
    if custom.get("late_policy") in LatePolicy.values:
        fields["late_policy"] = custom["late_policy"]
    if re.fullmatch(r"[0-9]{1,3}", penalty) and int(penalty) <= 100:
        fields["late_penalty_percent"] = int(penalty)
    try:
        return update_schedule(placement, **fields).schedule
    except InvalidSchedule:
        return ensure_schedule(placement)


# Runs are leased jobs (ops.jobs). A run may wait long in the `gpu` queue, so the beat
# requeues one by when its reminder was sent (enqueued_at), not by its due time.
RUN = jobs.LeasedJob(
    "labs.execute_run", LabRun, lease_field="lease_until", sent_field="enqueued_at"
)


def _retry_policy() -> jobs.RetryPolicy:
    return jobs.RetryPolicy(
        base_seconds=settings.LAB_RETRY_BACKOFF_SECONDS,
        max_seconds=settings.LAB_RETRY_BACKOFF_MAX_SECONDS,
        max_tries=settings.LAB_MAX_EXECUTION_ATTEMPTS,
    )


def _refuse_a_full_demo_queue() -> None:
    """Anyone may enter the demo, so its runs share the GPU queue only up to a cap. Demo
    submissions of one lab are serialised on its schedule's row, which the caller holds."""
    waiting = LabRun.objects.filter(
        placement__context__is_demo=True, status__in=(RunStatus.QUEUED, RunStatus.RUNNING)
    ).count()
    if waiting >= settings.DEMO_LAB_QUEUE_CAP:
        raise DemoQueueFull(
            _("The demo's lab queue is full (%(count)d runs waiting). Try again in a few minutes.")
            % {"count": waiting}
        )


def submit_run(
    *, placement: ResourceLink, user: User, policy: object, now: datetime | None = None
) -> LabRun:
    """Validate the student's policy and queue it for the GPU queue. Refused with a message,
    before anything runs, when the policy is invalid, the lab is not open, the student has
    used every run or already has one waiting."""
    now = now or timezone.now()
    lab = placed_lab(placement)
    try:
        if isinstance(policy, str):
            parse_policy(policy, lab.blocks)  # strictly: a field given twice is refused
            policy = json.loads(policy)
        # The runner receives exactly this text, so this is the text that must pass.
        parse_policy(policy_text(policy), lab.blocks)
    except PolicyError as error:
        raise InvalidPolicy(policy_refusal(error)) from None
    with transaction.atomic():
        if placement.context.is_demo:
            # Demo submissions of the lab are serialised on its schedule's row, so that two
            # of them cannot both pass the queue's cap.
            LabSchedule.objects.select_for_update().get(pk=ensure_schedule(placement).pk)
        rules = lab_policy(placement)
        window = submission_window(rules, now)
        if window == SubmissionWindow.NOT_OPEN:
            raise LabNotOpen(_("This lab is not open yet."))
        if window == SubmissionWindow.CLOSED:
            past_closing = rules.closes_at and now >= rules.closes_at
            raise LabNotOpen(
                _("This lab is closed.")
                if past_closing
                else _("This lab was due; it accepts no late runs.")
            )
        # One student's submissions are serialised on their earlier runs' rows.
        mine = list(LabRun.objects.select_for_update().filter(placement=placement, user=user))
        if any(run.status in (RunStatus.QUEUED, RunStatus.RUNNING) for run in mine):
            raise RunPending(_("Your previous run has not finished yet; wait for its result."))
        if runs_left(rules, mine) == 0:
            raise LabNotOpen(
                _("You have used all %(count)d runs of this lab.") % {"count": rules.max_runs}
            )
        if placement.context.is_demo:
            _refuse_a_full_demo_queue()
        number = max((run.number for run in mine), default=0) + 1
        try:
            with transaction.atomic():
                run = LabRun.objects.create(
                    placement=placement,
                    user=user,
                    number=number,
                    policy=policy,
                    submitted_at=now,
                    next_attempt_at=now,
                )
        except IntegrityError:
            raise RunPending(_("Another run was submitted at the same time.")) from None
        RUN.send_on_commit(run.pk)
    logger.info("lab run %s queued (placement %s, run %d)", run.public_id, placement.pk, number)
    return run


def _start_or_give_up(run: LabRun, now: datetime) -> list[str] | None:
    if _retry_policy().gives_up(run.execution_attempts):
        # Every try died with its worker (no outcome came back): stop retrying.
        run.status = RunStatus.INFRASTRUCTURE_FAILED
        run.error = run.error or "the run's worker was lost on every try"
        run.finished_at = now
        run.lease_token = run.lease_until = None
        run.save()
        return None
    run.status = RunStatus.RUNNING
    run.lease_token = uuid.uuid4()
    run.execution_attempts += 1
    run.started_at = now
    return ["status", "lease_token", "execution_attempts", "started_at"]


def _claim(run_id: int) -> LabRun | None:
    """Take the run if it is waiting and due, or if the lease of a worker that took it has
    run out (that worker died). Returns None when another worker has it or it is done."""
    return RUN.claim(
        LabRun.objects.select_related("placement__lab_placement__lab").filter(
            pk=run_id, status__in=(RunStatus.QUEUED, RunStatus.RUNNING)
        ),
        lease_seconds=settings.LAB_LEASE_SECONDS,
        take=_start_or_give_up,
    )


def execute_run(run_id: int) -> LabRun | None:
    """Run the policy (in a child process) and record the outcome; the task's body.

    Safe to call any number of times for the same run: only a due run is claimed, and only
    the worker holding the current lease records what it measured."""
    run = _claim(run_id)
    if run is None:
        _retry_if_only_locked(run_id)
        return None
    logger.info("lab run %s claimed (try %d)", run.public_id, run.execution_attempts)
    lab = placed_lab(run.placement)
    try:
        reference = ensure_reference(lab)
    except ReferenceUnavailable as error:
        return record_outcome(run, error.outcome)
    # Computing the lab's reference (its first run only) took some of the lease: renew it.
    LabRun.objects.filter(pk=run.pk, lease_token=run.lease_token).update(
        lease_until=timezone.now() + timedelta(seconds=settings.LAB_LEASE_SECONDS)
    )
    outcome = execution.execute(
        lab.model_spec(),
        policy_text(run.policy),
        lab.budget_bytes,
        device=settings.LAB_DEVICE,
        repeats=settings.LAB_TIMING_REPEATS,
        timeout_seconds=settings.LAB_RUN_TIMEOUT_SECONDS,
        memory_cap_bytes=settings.LAB_MEMORY_CAP_BYTES,
        reference=reference,
    )
    return record_outcome(run, outcome)


@transaction.atomic
def record_outcome(run: LabRun, outcome: execution.Outcome) -> LabRun | None:
    current = (
        LabRun.objects.select_for_update()
        .filter(pk=run.pk, status=RunStatus.RUNNING, lease_token=run.lease_token)
        .first()
    )
    if current is None:
        return None  # the lease ran out and another worker took the run over
    now = timezone.now()
    current.lease_token = None
    current.lease_until = None
    current.refusal = outcome.refusal
    if outcome.kind == execution.OutcomeKind.MEASURED:
        result = outcome.result or {}
        current.status = RunStatus.SUCCEEDED
        current.result = result
        current.device = str(result.get("device", ""))[:32]
        current.score = Decimal(str(result.get("score", 0))).quantize(Decimal("0.0001"))
        current.error = ""
        current.finished_at = now
    elif outcome.kind == execution.OutcomeKind.REJECTED:
        current.status = RunStatus.REJECTED
        current.error = outcome.message
        current.finished_at = now
    elif not (policy := _retry_policy()).gives_up(current.execution_attempts):
        # The machine's failure, not the student's: back in the queue after a pause.
        current.status = RunStatus.QUEUED
        current.error = outcome.message
        backoff = policy.delay(current.execution_attempts)
        current.next_attempt_at = now + timedelta(seconds=backoff)
    else:
        current.status = RunStatus.INFRASTRUCTURE_FAILED
        current.error = outcome.message
        current.finished_at = now
    current.save()
    logger.info("lab run %s: %s %s", current.public_id, current.status, current.error[:200])
    if current.status == RunStatus.SUCCEEDED:
        refresh_lab_grade(user=current.user, placement=current.placement)
    elif current.status == RunStatus.QUEUED:
        RUN.send_on_commit(current.pk, eta=current.next_attempt_at)
    return current


LOCKED_RETRY_SECONDS = 5


def _retry_if_only_locked(run_id: int) -> None:
    """The claim skips a row another transaction holds. If that was a passing lock (the
    student's next submission checks their runs under a lock) and not a worker that took the
    run, try again shortly instead of waiting for the periodic requeue."""
    now = timezone.now()
    due = LabRun.objects.filter(
        pk=run_id, status=RunStatus.QUEUED, next_attempt_at__lte=now
    ).exists()
    if due:
        RUN.send(run_id, countdown=LOCKED_RETRY_SECONDS)


@transaction.atomic
def refresh_lab_grade(
    *, user: User, placement: ResourceLink, rules: LabRules | None = None
) -> Grade | None:
    """The student's lab grade from their measured runs, by the schedule's grading method,
    run limit and late policy; queued for the gradebook when it changes."""
    # Serialise refreshes of one student's grade (a run finishing while the due time is
    # settled or moved) before reading the rules and the runs, so the later refresh sees
    # the later runs and the due time in force.
    Grade.objects.select_for_update().filter(user=user, placement=placement).first()
    rules = rules or lab_policy(placement)
    computed = lab_grades(placement, rules, user_id=user.pk).get(user.pk)
    if computed is None:
        return None
    return set_placement_grade(
        user=user,
        placement_id=placement.pk,
        fraction=computed.fraction,
        score_maximum=LAB_SCORE_MAXIMUM,
        grading_method=rules.grading_method,
        counted=computed.counted,
        counted_number=computed.counted_number,
    )


def remeasure_runs(runs: QuerySet[LabRun]) -> int:
    """Measure and grade measured runs again (after the scoring changed): each goes back to
    the queue; its figures, score and the student's grade change when it is measured."""
    now = timezone.now()
    count = 0
    for run in runs.filter(status=RunStatus.SUCCEEDED):
        LabRun.objects.filter(pk=run.pk, status=RunStatus.SUCCEEDED).update(
            status=RunStatus.QUEUED, next_attempt_at=now, execution_attempts=0
        )
        RUN.send_on_commit(run.pk)
        count += 1
    return count


def stale_runs() -> QuerySet[LabRun]:
    """Measured runs graded by an earlier scoring (docs/labs.md, "Runs graded before")."""
    return LabRun.objects.filter(status=RunStatus.SUCCEEDED).filter(
        Q(result__scoring_version__isnull=True) | ~Q(result__scoring_version=REFERENCE_VERSION)
    )


def requeue_stuck_runs(now: datetime | None = None) -> int:
    """Runs whose worker died (lease ran out) or whose message was lost go back on the
    queue; the claim makes a duplicate message harmless."""
    now = now or timezone.now()
    lost_after = now - timedelta(seconds=settings.LAB_REQUEUE_AFTER_SECONDS)
    stuck = LabRun.objects.filter(
        Q(status=RunStatus.RUNNING, lease_until__lt=now)
        | Q(status=RunStatus.QUEUED, next_attempt_at__lte=now)
        & (Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=lost_after))
    ).values_list("pk", flat=True)
    return RUN.requeue(list(stuck))


def settle_due_labs(now: datetime | None = None) -> int:
    """At each placement's due time, settle every student's grade from the runs submitted
    so far (the best or the last, as the schedule says). Runs still in the queue then are
    graded as they finish, as are late ones, by the late policy."""
    now = now or timezone.now()
    settled = 0
    for schedule in LabSchedule.objects.filter(
        due_at__lte=now, finalized_at__isnull=True
    ).select_related("placement"):
        placement = schedule.placement
        recompute_placement(placement=placement, actor=None, cause=ChangeCause.DUE_TIME)
        LabSchedule.objects.filter(pk=schedule.pk).update(finalized_at=now)
        settled += 1
    return settled
