"""The signed-in user of every request, kept by the process and read through the cache instead
of the database.

Every page of a launched session loads its user; for a quiz answer that lookup was as
costly as recording the answer (decision 25), and once in the cache, its round trip was
still a tenth of a page (decision 81). A process keeps the users it read
(``ops.process_memo``), checked against a version in the database at most once a second;
behind it, the cache keeps them for every process, each under the version it was read under
(decision 83). Saving or deleting a user (a launch updating the name, an administrator
deactivating the account; not a sign-in's ``last_login``, which no check reads from a kept
user) moves the version with the change's commit: until then the changing transaction reads
users from the database and keeps none (decision 85), and from the commit the change applies
at once in the process that made it and within a second in every other, whichever of them
can reach Redis (decision 84): no process reads a user under a version older than its last
check, so a row read before the commit and stored in the cache after it is read by no one
once they have seen the move. Entries expire in any case (``USER_CACHE_SECONDS`` in the
cache, a minute in a process), which bounds what a bulk update that sends no signal can
leave behind: up to the cache's five minutes and a process's minute after them. Without the
cache (Redis down, which the cache answers as a miss: ops.cache) the user comes from the
database, as with Django's ModelBackend.
"""

from __future__ import annotations

import copy
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models.signals import ModelSignal, post_delete, post_save, pre_delete, pre_save
from django.dispatch import receiver

from ops.process_memo import ProcessMemo

USER_CACHE_SECONDS = 300
USERS_VERSION = "auth-users"  # its name among the shared versions (ops.process_memo)
LAST_LOGIN_ONLY = frozenset({"last_login"})

# The users of a process's recent requests, 1024 at most (about 2.1 KB each).
kept_users = ProcessMemo(USERS_VERSION, max_entries=1024)


def _cache_key(user_id: Any, version: Any) -> str:
    # The database's name and host are part of the cache's key: ids repeat across databases,
    # and two deployments may share one Redis. So is the users' version a process read under: a
    # row read just before a change committed and stored just after it lands under the
    # version the change moved away from (decision 83). A row read inside the changing
    # transaction, or while the process has no version, is not stored (decision 85).
    database = connections[DEFAULT_DB_ALIAS].settings_dict
    return f"auth-user:{database['HOST']}:{database['NAME']}:{version}:{user_id}"


def _read_user(user_id: Any) -> AbstractBaseUser | None:
    if kept_users.is_changing() or kept_users.version is None:
        # This transaction's own row, or one that no version tells from another database's
        # user of the same id: shared with no one.
        return _user_from_database(user_id)
    key = _cache_key(user_id, kept_users.version)  # the version this process just checked
    user = cache.get(key)
    if user is None:
        user = _user_from_database(user_id)
        if user is not None:
            cache.set(key, user, USER_CACHE_SECONDS)
    return user


def _user_from_database(user_id: Any) -> AbstractBaseUser | None:
    user_model = get_user_model()
    try:
        return user_model._default_manager.get(pk=user_id)
    except user_model.DoesNotExist:
        return None


class CachedUserBackend(ModelBackend):
    """Django's ModelBackend for launched sessions (permissions included), with the
    per-request user lookup served from the process and the cache. It checks no passwords:
    the admin site's sign-in is the plain ModelBackend's, listed after this one, so a wrong
    password is hashed once, not once per backend."""

    def authenticate(self, request: Any, **credentials: Any) -> None:
        return None

    async def aauthenticate(self, request: Any, **credentials: Any) -> None:
        return None

    def get_user(self, user_id: Any) -> AbstractBaseUser | None:
        kept = kept_users.remembered(user_id, lambda: _read_user(user_id))
        if kept is None:
            return None
        user = copy.copy(kept)  # the request's own: a page may set attributes on its user
        return user if self.user_can_authenticate(user) else None


@receiver([pre_save, post_save, pre_delete, post_delete], sender=settings.AUTH_USER_MODEL)
def _users_changed(
    signal: ModelSignal,
    instance: AbstractBaseUser,
    update_fields: frozenset[str] | None = None,
    **kwargs: Any,
) -> None:
    if kwargs["created"] if signal is post_save else _inserting(signal, instance):
        return  # nothing was kept of a user who did not exist (new ids on PostgreSQL)
    if update_fields == LAST_LOGIN_ONLY:
        return  # a sign-in's time: no request's check reads it from a kept user
    kept_users.row_changed(signal)


def _inserting(signal: ModelSignal, instance: AbstractBaseUser) -> bool:
    """Whether a ``pre_`` signal is a new user's insert: an instance without a primary key
    (one built with the key of a stored user, as ``loaddata`` does, updates it)."""
    return signal is pre_save and instance._state.adding and instance.pk is None
