"""What a process keeps between requests of rows that every request reads and that seldom
change, checked against a version kept in the database.

Any process that changes such rows (the admin's, a management command, a launch) writes a
new version with its change, and takes it at the commit, dropping what it kept; every
process reads the versions at most once every ``VERSION_CHECK_SECONDS`` rather than on every
request (one statement for every memo) and drops a memo's entries when its version moved. So
a change applies at once in the process that made it and within a second of its commit in
every other.

The versions live in the database, beside the rows they version, so that a change in a
transaction cannot commit without moving its version: a process that could not reach Redis
used to skip its bump, and every other process served the old rows (decision 84). Inside a
transaction the move commits with the change or rolls back with it; a save in autocommit
writes it in a statement of its own after the row's, which can fail after the row committed
(the caller then gets the error). The transaction that changes the rows reads them from
the database and keeps nothing (in this process, in the cache), whatever another thread of
the process checks meanwhile: what it reads is its own until the commit, and gone after a
rollback (decision 85). Inside a transaction the version's row is written before the changed
row, so that transactions changing such rows queue on the version's row in one order rather
than deadlock; outside one, after it, so that no process reads the new version before the
change it announces is committed. ``memo_seconds`` bounds how stale an entry can be after a
change no signal saw (an ``update()`` on a queryset, SQL by hand) or while the database is
unreachable. Decisions 65 (the registrations), 81 (the signed-in users), 84 and 85.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, ClassVar, TypeVar

from django.db import DatabaseError, transaction
from django.db.models.signals import ModelSignal, pre_delete, pre_save

from .models import SharedVersion

logger = logging.getLogger(__name__)

VERSION_CHECK_SECONDS = 1.0

T = TypeVar("T")


class ProcessMemo:
    """One kind of rows kept per process under the shared version named ``version_name``.
    Past ``max_entries`` it starts again: where keys come from requests, a client sending
    made-up ones must not make a process grow."""

    instances: ClassVar[list[ProcessMemo]] = []  # every memo, checked together

    def __init__(self, version_name: str, *, max_entries: int, memo_seconds: float = 60) -> None:
        self.version_name = version_name
        self.max_entries = max_entries
        self.memo_seconds = memo_seconds
        self.entries: dict[Hashable, tuple[float, Any]] = {}  # key: (expires, value)
        self.version: str | None = None  # the version the entries were read under
        self.check_after = 0.0  # when to read the versions again
        self._this_thread = threading.local()  # .changing: its transaction changed the rows
        ProcessMemo.instances.append(self)

    def remembered(
        self, key: Hashable, read: Callable[[], T], keep: Callable[[T], bool] = bool
    ) -> T:
        """The value kept under ``key``, else ``read()``'s, kept when ``keep`` says so (by
        default when it is not empty: a look-up that found nothing is not worth a place).
        In a transaction that changed the rows, ``read()``'s, kept nowhere."""
        if self.is_changing():
            return read()
        now = time.monotonic()
        if now >= self.check_after:
            _check_versions(now)
        found = self.entries.get(key)
        if found is not None and now < found[0]:
            return found[1]
        read_under = self.version
        value = read()
        if keep(value) and self.version == read_under:  # else a change came during the read
            if len(self.entries) >= self.max_entries:
                self.entries.clear()
            self.entries[key] = (now + self.memo_seconds, value)
        return value

    def last_known(self, key: Hashable) -> Any:
        """What was kept under ``key``, however old (for a page that must answer while the
        database is down), or None."""
        found = self.entries.get(key)
        return found[1] if found is not None else None

    def forget(self) -> None:
        """Forgets everything in this process (a test's rolled-back rows fire no signal)."""
        self.entries.clear()
        self.version = None
        self.check_after = 0.0
        self._this_thread.changing = False

    def is_changing(self) -> bool:
        """Whether this thread's transaction changed the rows and has not ended: what it reads
        of them is its own (its uncommitted rows), for no one else, and gone if it rolls back.
        A readers' cache (lti.backends) must not share it either."""
        if not getattr(self._this_thread, "changing", False):
            return False
        if transaction.get_connection().in_atomic_block:
            return True
        # It ended without its commit's callback: rolled back, or committed with the callback
        # lost (Django drops the later ones when one raises). Either way, check at once.
        self._this_thread.changing = False
        self.check_after = 0.0
        return False

    def row_changed(self, signal: ModelSignal) -> None:
        """A receiver's call for a row's ``pre_save`` or ``pre_delete`` and its ``post_save``
        or ``post_delete`` (the receiver leaves out what needs no move): the version moves
        once per change. Inside a transaction, from the first, before the row is written:
        two transactions changing rows then queue on the version's row, where taking it after
        the changed row let one hold a row the other needed while waiting for the version's,
        a deadlock. Outside a transaction (a save in autocommit), from the second, once the
        row is committed."""
        before_the_write = signal in (pre_save, pre_delete)
        if before_the_write == transaction.get_connection().in_atomic_block:
            self._changed()

    def _changed(self) -> None:
        """The rows changed in this thread's transaction. A new version is written in that
        transaction, so it moves for every process at the commit, with the change, or never
        if the change rolls back. Until the transaction ends, what this thread reads of the
        rows is read from the database and kept nowhere (``is_changing``); at the commit the
        process takes the new version and drops what it kept."""
        version = secrets.token_hex(8)  # never an earlier one, which a process may hold
        SharedVersion.objects.bulk_create(
            [SharedVersion(name=self.version_name, value=version)],
            update_conflicts=True,
            unique_fields=["name"],
            update_fields=["value"],
        )
        self._this_thread.changing = True
        transaction.on_commit(lambda: self._committed(version))

    def _committed(self, version: str) -> None:
        self._this_thread.changing = False
        self._settle(version, time.monotonic())

    def _settle(self, version: str | None, now: float) -> None:
        # A new random version always differs from the one held, so a change drops everything.
        if version != self.version:
            self.entries.clear()
            self.version = version
        self.check_after = now + VERSION_CHECK_SECONDS

    @classmethod
    def forget_all(cls) -> None:
        for memo in cls.instances:
            memo.forget()


def _check_versions(now: float) -> None:
    """Reads every memo's version in one statement. While the database is down no change can
    commit: outside a transaction the memos keep what they hold (a page may still answer from
    them) and look again in a second."""
    try:
        versions = _read_versions()
    except DatabaseError as error:
        if transaction.get_connection().in_atomic_block:
            raise  # the transaction is lost: no page answers from it
        logger.warning(
            "shared versions unreadable (%s); kept rows checked again in a second", error
        )
        for memo in ProcessMemo.instances:
            memo.check_after = now + VERSION_CHECK_SECONDS
        return
    for memo in ProcessMemo.instances:
        if not memo.is_changing():  # else the version read is this transaction's own
            memo._settle(versions.get(memo.version_name), now)


def _read_versions() -> dict[str, str]:
    """Every memo's version. A database that has none for a memo yet (new, or made again
    under the same name, whose ids start again) gets one drawn, so that entries a cache kept
    for another database under the same name are never read here (decision 85). Drawn
    outside a transaction only: an insert in a request's transaction would hold every other
    process's check until that transaction ended. Until then the memo has no version, and
    shares nothing through the cache."""
    versions = dict(SharedVersion.objects.values_list("name", "value"))
    missing = [m.version_name for m in ProcessMemo.instances if m.version_name not in versions]
    if missing and not transaction.get_connection().in_atomic_block:
        drawn = [SharedVersion(name=name, value=secrets.token_hex(8)) for name in missing]
        SharedVersion.objects.bulk_create(drawn, ignore_conflicts=True)  # else another's
        versions = dict(SharedVersion.objects.values_list("name", "value"))
    return versions
