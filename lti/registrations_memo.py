"""What a process keeps of the registrations between requests: the origins that may frame
the tool, and the rows a login and a launch look their registration up by.

Every request once read these from the database: a launch and its login each waited on a
statement for rows that change when an administrator registers a platform or turns one off
(docs/benchmarks.md). Kept per process, they are checked against a version in the shared
cache, which any process (a management command included) bumps when it saves or deletes a
registration or a deployment, once the change is committed, and which a process reads at
most once every VERSION_CHECK_SECONDS rather than on every request (a cache read per page
was as costly as the rest of the page's cache work). So a change applies at once in the
process that made it and within a second of its commit in every other; MEMO_SECONDS bounds
how stale a process can be while the cache is unreachable, after a change no signal saw (an
``update()`` on a queryset, SQL by hand), or in the process whose change was rolled back.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .models import Deployment, Registration

VERSION_CHECK_SECONDS = 1.0
MEMO_SECONDS = 60
REGISTRATIONS_VERSION_KEY = "lti:registrations:version"
# Past this many entries the memo starts again: the keys come from requests (an issuer, a
# client id), so an address sending made-up ones must not make a process grow.
MAX_ENTRIES = 256

T = TypeVar("T")

_entries: dict[Hashable, tuple[float, Any]] = {}  # key: (expires, value)
_version: list[Any] = [None]  # the shared version the entries were read under
_check_after: list[float] = [0.0]  # when to read the version again


def _current() -> None:
    """Drops every entry if the shared version moved since they were read (once a second)."""
    now = time.monotonic()
    if now < _check_after[0]:
        return
    version = cache.get(REGISTRATIONS_VERSION_KEY)
    if version != _version[0]:
        _entries.clear()
        _version[0] = version
    _check_after[0] = now + VERSION_CHECK_SECONDS


def remembered(key: Hashable, read: Callable[[], T], keep: Callable[[T], bool] = bool) -> T:
    """The value kept under ``key``, else ``read()``'s, kept when ``keep`` says so (by default
    when it is not empty: a look-up that found nothing is not worth a place)."""
    _current()
    found = _entries.get(key)
    now = time.monotonic()
    if found is not None and now < found[0]:
        return found[1]
    value = read()
    if keep(value):
        if len(_entries) >= MAX_ENTRIES:
            _entries.clear()
        _entries[key] = (now + MEMO_SECONDS, value)
    return value


def last_known(key: Hashable) -> Any:
    """What was kept under ``key``, however old (for a page that must answer while the
    database is down), or None."""
    found = _entries.get(key)
    return found[1] if found is not None else None


def forget() -> None:
    """Forgets everything in this process (a test's rolled-back rows fire no signal)."""
    _entries.clear()
    _version[0] = None
    _check_after[0] = 0.0


@receiver([post_save, post_delete], sender=Registration)
@receiver([post_save, post_delete], sender=Deployment)
def _registrations_changed(**kwargs: Any) -> None:
    forget()  # this process at once: it reads its own transaction's rows
    # The other processes once the change is committed: a version bumped before the commit
    # could let one of them read the old rows again under the new version, and keep them.
    transaction.on_commit(_bump_version)


def _bump_version() -> None:
    forget()
    cache.set(REGISTRATIONS_VERSION_KEY, secrets.token_hex(8), None)
