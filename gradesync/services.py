"""Delivering grades to the LMS through AGS, exactly once per change and in order.

`record_grade_change` writes an outbox row in the caller's transaction and, once that
commits, asks a worker to deliver it. `deliver` claims the row with a lease (a worker killed
mid-delivery loses nothing: the lease runs out and the row is due again), posts the score with
the grade's own change time as its timestamp (a repeated post is harmless, an older one never
overwrites a newer), and records the outcome: synced, retry later (backoff with jitter, or the
platform's Retry-After), or failed with the platform's reason. `requeue_due` (Celery beat)
re-enqueues whatever is due, whatever the broker lost.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from activities import registry
from activities.grading import round_grade
from activities.models import Grade
from activities.selectors import placement_score_maximum
from lti import ags
from lti import claims as c
from lti.models import LtiUser, ResourceLink
from lti.selectors import link_with_course
from ops import jobs, rows

from .models import GradeSync, SyncState

logger = logging.getLogger(__name__)

CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"


def unsyncable_reason(placement: ResourceLink) -> str | None:
    """Why grades of this placement cannot go to the LMS, or None when they can."""
    if placement.context.deployment_id is None:
        return _("This is a demo course: grades stay in this tool.")
    if not (placement.lineitem_url or placement.ags_lineitems_url):
        return _("The LMS did not offer grade services (AGS) for this link.")
    if c.SCOPE_SCORE not in placement.ags_scopes:
        return _("The LMS did not allow this tool to post scores.")
    return None


# Deliveries are leased jobs (ops.jobs): the row is the truth, the message a reminder.
DELIVERY = jobs.LeasedJob("gradesync.deliver_grade", GradeSync, lease_field="lease_until")


def _retry_policy() -> jobs.RetryPolicy:
    return jobs.RetryPolicy(
        base_seconds=settings.GRADESYNC_BACKOFF_BASE_SECONDS,
        max_seconds=settings.GRADESYNC_BACKOFF_MAX_SECONDS,
        give_up_after_seconds=settings.GRADESYNC_GIVE_UP_AFTER_SECONDS,
    )


def record_grade_change(grade: Grade, *, comment: str = "") -> GradeSync | None:
    """Queue the grade for the gradebook; call inside the transaction that changed it."""
    placement = link_with_course(grade.placement_id)
    if unsyncable_reason(placement) is not None:
        return None
    sync = rows.insert_row(
        GradeSync(
            grade=grade,
            user_id=grade.user_id,
            placement=placement,
            score_given=grade.score_given,
            score_maximum=grade.score_maximum,
            changed_at=grade.updated_at,
            comment=comment,
            next_attempt_at=timezone.now(),
        )
    )
    DELIVERY.send_on_commit(sync.pk)
    return sync


def _first_in_its_chain(sync: GradeSync, _now: datetime) -> list[str] | None:
    earlier = GradeSync.objects.filter(
        user_id=sync.user_id, placement_id=sync.placement_id, state=SyncState.PENDING
    ).filter(Q(created_at__lt=sync.created_at) | Q(created_at=sync.created_at, pk__lt=sync.pk))
    # Delivered after the earlier change, which sends this one when it is done.
    return None if earlier.exists() else []


def _claim(sync_id: int) -> GradeSync | None:
    """Take the row for delivery if it is due, unclaimed and first in its chain."""
    return DELIVERY.claim(
        GradeSync.objects.filter(pk=sync_id, state=SyncState.PENDING),
        lease_seconds=settings.GRADESYNC_LEASE_SECONDS,
        take=_first_in_its_chain,
    )


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def score_payload(sync: GradeSync, user_id: str, *, canvas: bool) -> dict:
    maximum = round_grade(sync.score_maximum)
    given = min(max(sync.score_given, Decimal(0)), maximum)  # Moodle keeps a score above max
    payload = {
        "userId": user_id,
        # The grade by the one rounding rule, exactly as pages and exports show it: a Decimal
        # of two places becomes the float whose shortest repr is those digits (84.38).
        "scoreGiven": float(round_grade(given)),
        "scoreMaximum": float(maximum),
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "timestamp": _timestamp(sync.changed_at),
    }
    if sync.comment:
        payload["comment"] = sync.comment
    if canvas:
        payload[CANVAS_SUBMISSION] = {
            "new_submission": True,
            "submitted_at": _timestamp(sync.changed_at),
        }
    return payload


def _lineitem_url(placement: ResourceLink) -> str:
    if placement.lineitem_url:
        return placement.lineitem_url
    registration = placement.context.registration
    kind = registry.kind_of(placement)
    url = ags.find_or_create_lineitem(
        registration,
        placement.ags_lineitems_url,
        resource_link_id=placement.resource_link_id,
        tag=kind.line_item_tag,
        label=placement.title or registry.title(placement, settings.LANGUAGE_CODE),
        score_maximum=float(placement_score_maximum(placement)),
        can_create=c.SCOPE_LINEITEM in placement.ags_scopes,
    )
    ResourceLink.objects.filter(pk=placement.pk).update(lineitem_url=url)
    return url


def _finish(sync: GradeSync, lease: datetime | None, **fields: object) -> bool:
    """Record the outcome if this worker still holds the row's lease; a worker that lost it
    (it ran past the lease and another took over) must not overwrite the newer outcome."""
    fields["lease_until"] = None
    updated = GradeSync.objects.filter(pk=sync.pk, lease_until=lease).update(**fields)
    for name, value in fields.items():
        setattr(sync, name, value)
    return bool(updated)


def _enqueue_next_in_chain(sync: GradeSync) -> None:
    following = (
        GradeSync.objects.filter(
            user_id=sync.user_id, placement_id=sync.placement_id, state=SyncState.PENDING
        )
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)
        .first()
    )
    if following:
        DELIVERY.send(following)


def deliver(sync_id: int) -> str:
    """Try to deliver one outbox row; returns what happened, for logs and tests."""
    sync = _claim(sync_id)
    if sync is None:
        return "skipped"
    lease = sync.lease_until
    placement = ResourceLink.objects.select_related(
        "context__deployment__registration",
        "placement",
        *(name for kind in registry.kinds() for name in kind.select_related),
    ).get(pk=sync.placement_id)
    registration = placement.context.registration
    sub = LtiUser.objects.filter(user_id=sync.user_id).values_list("sub", flat=True).first()
    tries = sync.tries + 1
    retry_in: float | None = None
    try:
        if sub is None:
            raise ags.PlatformRefused(_("This student never launched from the LMS."), 0)
        canvas = "canvas" in (registration.product_family_code or registration.issuer).lower()
        ags.post_score(
            registration, _lineitem_url(placement), score_payload(sync, sub, canvas=canvas)
        )
    except ags.ScoreOutdated as error:
        fields = {
            "state": SyncState.SYNCED,
            "synced_at": timezone.now(),
            "last_status": 409,
            "last_error": error.message,
            "outcome": _("The LMS already holds a newer score."),
        }
    except ags.PlatformRefused as error:
        logger.warning("grade sync refused id=%s error=%s", sync.pk, error.message)
        fields = {
            "state": SyncState.FAILED,
            "last_status": error.status or None,
            "last_error": error.message,
            "outcome": _("The LMS refused the grade."),
        }
    except Exception as error:  # unavailable, or an answer we could not read: try again later
        if isinstance(error, ags.PlatformUnavailable):
            message, retry_after = error.message, error.retry_after
        else:
            logger.exception("grade sync unexpected error id=%s", sync.pk)
            message, retry_after = f"{type(error).__name__}: {error}"[:1000], None
        policy = _retry_policy()
        if policy.gives_up(tries, first_due=sync.created_at):
            logger.warning("grade sync gave up id=%s error=%s", sync.pk, message)
            fields = {
                "state": SyncState.FAILED,
                "last_error": message,
                "outcome": _("Gave up after %(tries)s tries.") % {"tries": tries},
            }
        else:
            retry_in = policy.delay(tries, retry_after)
            fields = {
                "last_error": message,
                "next_attempt_at": timezone.now() + timedelta(seconds=retry_in),
            }
    else:
        fields = {
            "state": SyncState.SYNCED,
            "synced_at": timezone.now(),
            "last_status": 200,
            "last_error": "",
            "outcome": _("Delivered."),
        }
    if not _finish(sync, lease, tries=tries, **fields):
        return "lease lost"
    if retry_in is not None:
        DELIVERY.send(sync.pk, countdown=retry_in)
        return "retry"
    _enqueue_next_in_chain(sync)  # a final outcome, either way: the next change may go
    return str(sync.state)


def requeue_due(limit: int = 1000) -> int:
    """Enqueue rows that are due and stuck: not delivered within one requeue period of
    being due, and not held by a worker (the periodic safety net)."""
    now = timezone.now()
    stuck_since = now - timedelta(seconds=settings.GRADESYNC_REQUEUE_SECONDS)
    due = (
        GradeSync.objects.filter(state=SyncState.PENDING, next_attempt_at__lte=stuck_since)
        .filter(jobs.lease_is_free("lease_until", now))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    return DELIVERY.requeue(list(due))


@transaction.atomic
def retry_now(sync: GradeSync) -> bool:
    """An instructor's or administrator's retry of a failed or waiting delivery. Refused
    (False) for a delivered row, one a worker holds now, or one a newer change supersedes."""
    row = GradeSync.objects.select_for_update().get(pk=sync.pk)
    now = timezone.now()
    newer = GradeSync.objects.filter(user_id=row.user_id, placement_id=row.placement_id).filter(
        Q(created_at__gt=row.created_at) | Q(created_at=row.created_at, pk__gt=row.pk)
    )
    if (
        row.state == SyncState.SYNCED
        or (row.lease_until is not None and row.lease_until > now)
        or newer.exists()
    ):
        return False
    GradeSync.objects.filter(pk=row.pk).update(
        state=SyncState.PENDING, next_attempt_at=now, lease_until=None
    )
    DELIVERY.send_on_commit(row.pk)
    return True
