"""What a process keeps between requests of rows that every request reads and that seldom
change, checked against a version in the shared cache.

Any process that changes such rows (the admin's, a management command, a launch) bumps the
version once its change is committed, and forgets its own entries at once; every process
reads the version at most once every ``VERSION_CHECK_SECONDS`` rather than on every request
(a cache read is as costly as the rest of a page's cache work) and drops everything when it
moved. So a change applies at once in the process that made it and within a second of its
commit in every other. ``memo_seconds`` bounds how stale an entry can be while the cache is
unreachable, after a change no signal saw (an ``update()`` on a queryset, SQL by hand), or in
the process whose change was rolled back. Decisions 65 (the registrations) and 81 (the
signed-in users).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Hashable
from typing import Any, ClassVar, TypeVar

from django.core.cache import cache
from django.db import transaction

VERSION_CHECK_SECONDS = 1.0

T = TypeVar("T")


class ProcessMemo:
    """One kind of rows kept per process under the shared version at ``version_key``. Past
    ``max_entries`` it starts again: where keys come from requests, a client sending made-up
    ones must not make a process grow."""

    instances: ClassVar[list[ProcessMemo]] = []

    def __init__(self, version_key: str, *, max_entries: int, memo_seconds: float = 60) -> None:
        self.version_key = version_key
        self.max_entries = max_entries
        self.memo_seconds = memo_seconds
        self.entries: dict[Hashable, tuple[float, Any]] = {}  # key: (expires, value)
        self.version: Any = None  # the shared version the entries were read under
        self.check_after = 0.0  # when to read the version again
        ProcessMemo.instances.append(self)

    def remembered(
        self, key: Hashable, read: Callable[[], T], keep: Callable[[T], bool] = bool
    ) -> T:
        """The value kept under ``key``, else ``read()``'s, kept when ``keep`` says so (by
        default when it is not empty: a look-up that found nothing is not worth a place)."""
        now = time.monotonic()
        self._drop_if_moved(now)
        found = self.entries.get(key)
        if found is not None and now < found[0]:
            return found[1]
        value = read()
        if keep(value):
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

    def changed(self, before_the_bump: Callable[[], None] | None = None) -> None:
        """The rows changed in this process's transaction: forgotten here at once (it reads
        its own transaction's rows), and in the other processes once the change is committed.
        A version bumped before the commit could let one of them read the old rows again
        under the new version, and keep them. ``before_the_bump`` runs at the commit first
        (another cache the rows are read through, dropped before any process may read them
        again under the new version)."""
        self.forget()

        def bump() -> None:
            if before_the_bump is not None:
                before_the_bump()
            self.forget()
            cache.set(self.version_key, secrets.token_hex(8), None)

        transaction.on_commit(bump)

    def _drop_if_moved(self, now: float) -> None:
        if now < self.check_after:
            return
        version = cache.get(self.version_key)
        if version != self.version:
            self.entries.clear()
            self.version = version
        self.check_after = now + VERSION_CHECK_SECONDS

    @classmethod
    def forget_all(cls) -> None:
        for memo in cls.instances:
            memo.forget()
