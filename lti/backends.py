"""The signed-in user of every request, read from the cache instead of the database.

Every page of a launched session loads its user; for a quiz answer that lookup was as
costly as recording the answer. The entry is dropped whenever the user is saved or
deleted (a launch updating the name, an administrator deactivating the account), once at
once and again when the change commits, so that a request reading the old row in between
cannot keep it; entries expire after ``USER_CACHE_SECONDS`` in any case, which bounds what
a bulk update that sends no signal can leave behind. Without the cache (Redis down, which
the cache answers as a miss: ops.cache) the user comes from the database, as with Django's
ModelBackend.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

USER_CACHE_SECONDS = 300


def _cache_key(user_id: Any) -> str:
    # The database's name and host are part of the key: ids repeat across databases, and
    # two deployments may share one Redis.
    database = connections[DEFAULT_DB_ALIAS].settings_dict
    return f"auth-user:{database['HOST']}:{database['NAME']}:{user_id}"


class CachedUserBackend(ModelBackend):
    """Django's ModelBackend for launched sessions (permissions included), with the
    per-request user lookup served from the cache. It checks no passwords: the admin site's
    sign-in is the plain ModelBackend's, listed after this one, so a wrong password is
    hashed once, not once per backend."""

    def authenticate(self, request: Any, **credentials: Any) -> None:
        return None

    async def aauthenticate(self, request: Any, **credentials: Any) -> None:
        return None

    def get_user(self, user_id: Any) -> AbstractBaseUser | None:
        key = _cache_key(user_id)
        user = cache.get(key)
        if user is None:
            user_model = get_user_model()
            try:
                user = user_model._default_manager.get(pk=user_id)
            except user_model.DoesNotExist:
                return None
            cache.set(key, user, USER_CACHE_SECONDS)
        return user if self.user_can_authenticate(user) else None


@receiver([post_save, post_delete], sender=settings.AUTH_USER_MODEL)
def _forget_cached_user(instance: AbstractBaseUser, **kwargs: Any) -> None:
    key = _cache_key(instance.pk)
    cache.delete(key)
    transaction.on_commit(lambda: cache.delete(key))
