"""Leased jobs: work whose database row is the truth and whose Celery message is only a
reminder to look at the row.

Grade deliveries (gradesync) and lab runs (labs) are both kept this way, through these
functions, so that they behave alike:

- `send` reminds a worker by the task's name and never raises: with the broker down the
  failure is logged and the row stays due, for the beat's requeue to send again.
  `LeasedJob.send_on_commit` sends once the caller's transaction commits (never a reminder
  for a row that was rolled back, nor one a worker could read before it exists).
- `LeasedJob.claim` takes a due row for one worker with a lease: a row whose lease runs
  out (its worker died) is due again, and a row another transaction has locked is skipped.
- `RetryPolicy` says when a failed try is tried again (exponential backoff with jitter, or
  the other side's Retry-After) and when to give up (after N tries or after some time).
- `LeasedJob.requeue` is the beat's safety net: it sends every due and stuck row, and one
  failed send does not stop the others.

This module imports no product app (ops is below them all); tasks are named, not imported,
so a service never imports its own tasks module.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import TypeVar

from celery import current_app
from django.db import models, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

logger = logging.getLogger(__name__)

Row = TypeVar("Row", bound=models.Model)


def send(task_name: str, *args: object, countdown: float = 0, eta: datetime | None = None) -> bool:
    """Ask a worker to run ``task_name`` on ``args`` (now, after ``countdown`` seconds or at
    ``eta``). Never raises: False when the broker could not take the message (logged; the
    row stays due and the beat's requeue sends it again)."""
    when = {"eta": eta} if eta is not None else {"countdown": max(countdown, 0)}
    try:
        current_app.send_task(task_name, args=args, **when)
    except Exception as error:  # the broker is down or refused: the row is still the truth
        logger.warning("job not sent task=%s args=%s error=%r", task_name, args, error)
        return False
    return True


@dataclass(frozen=True)
class RetryPolicy:
    """When a try that failed on the machine's or the other side's account is tried again."""

    base_seconds: float
    max_seconds: float
    max_tries: int | None = None
    give_up_after_seconds: float | None = None
    # ±25 %: jobs that failed together (an LMS outage, a lost worker) do not retry together.
    jitter: float = 0.25

    def delay(self, tries: int, retry_after: float | None = None) -> float:
        """Seconds before try ``tries + 1``: the other side's Retry-After when it gave one,
        else the base doubled per try, with jitter; never more than ``max_seconds``. A
        Retry-After under a second (0, a date passed) asks for no wait: the backoff applies,
        or a platform that keeps saying so would be tried again at once, over and over."""
        if retry_after is not None and retry_after >= 1:
            return min(retry_after, self.max_seconds)
        doubled = self.base_seconds * 2 ** min(max(tries - 1, 0), 20)
        spread = random.uniform(1 - self.jitter, 1 + self.jitter)
        return min(min(doubled, self.max_seconds) * spread, self.max_seconds)

    def gives_up(
        self, tries: int, *, first_due: datetime | None = None, now: datetime | None = None
    ) -> bool:
        """True once ``tries`` tries were made, or the job (due first at ``first_due``) is
        older than the give-up time."""
        if self.max_tries is not None and tries >= self.max_tries:
            return True
        if self.give_up_after_seconds is None or first_due is None:
            return False
        age = ((now or timezone.now()) - first_due).total_seconds()
        return age > self.give_up_after_seconds


def lease_is_free(lease_field: str, now: datetime) -> Q:
    """Rows no worker holds: never leased, or the lease ran out."""
    return Q(**{f"{lease_field}__isnull": True}) | Q(**{f"{lease_field}__lt": now})


@dataclass(frozen=True)
class LeasedJob:
    """One kind of job: the Celery task (by name) that works on a row of ``model``, the
    row's lease and due-time fields, and optionally a field noting when the last reminder
    went out (a job that may wait long in its queue is requeued by that, not by its due
    time, so the beat does not flood the queue with copies)."""

    task_name: str
    model: type[models.Model]
    lease_field: str
    due_field: str = "next_attempt_at"
    sent_field: str | None = None

    def send(self, row_id: object, *, countdown: float = 0, eta: datetime | None = None) -> bool:
        """`send` for one row, noting on the row whether the broker took it: a row whose
        reminder was lost is due for the next beat."""
        sent = send(self.task_name, row_id, countdown=countdown, eta=eta)
        if self.sent_field is not None:
            noted = timezone.now() if sent else None
            self.model._default_manager.filter(pk=row_id).update(**{self.sent_field: noted})
        return sent

    def send_on_commit(
        self, row_id: object, *, countdown: float = 0, eta: datetime | None = None
    ) -> None:
        """`send` once the current transaction commits (at once outside one)."""
        transaction.on_commit(partial(self.send, row_id, countdown=countdown, eta=eta))

    def claim(
        self,
        due: QuerySet[Row],
        *,
        lease_seconds: float,
        take: Callable[[Row, datetime], Iterable[str] | None] | None = None,
    ) -> Row | None:
        """Take the first row of ``due`` whose due time has come and that no lease holds,
        for ``lease_seconds``. A row another transaction has locked is skipped (None).
        ``take`` may refuse the row (it returns None, and may save the row itself, as when
        giving up) or prepare it (it returns the names of the fields it changed, saved with
        the lease)."""
        now = timezone.now()
        with transaction.atomic():
            row = (
                due.select_for_update(skip_locked=True, of=("self",))
                .filter(**{f"{self.due_field}__lte": now})
                .filter(lease_is_free(self.lease_field, now))
                .first()
            )
            if row is None:
                return None
            changed = [] if take is None else take(row, now)
            if changed is None:
                return None
            setattr(row, self.lease_field, now + timedelta(seconds=lease_seconds))
            row.save(update_fields=[self.lease_field, *changed])
        return row

    def requeue(self, ids: Iterable[object]) -> int:
        """The beat's safety net: send a reminder for each id (rows the service found due
        and stuck). A failure is logged and the loop goes on: one row the broker or the
        database refuses must not keep the others waiting. Returns how many were sent."""
        count = 0
        for row_id in ids:
            try:
                count += self.send(row_id)
            except Exception:  # noting the row failed: the next beat finds it again
                logger.exception("job requeue failed task=%s id=%s", self.task_name, row_id)
        return count
