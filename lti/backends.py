"""The signed-in user of every request, read from the cache instead of the database.

Every page of a launched session loads its user; for a quiz answer that lookup was as
costly as recording the answer. The entry is dropped whenever the user is saved or
deleted (a launch updating the name, an administrator deactivating the account) and
expires after ``USER_CACHE_SECONDS`` in any case, which bounds what a bulk update that
sends no signal can leave behind.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

USER_CACHE_SECONDS = 300


def _cache_key(user_id: Any) -> str:
    return f"auth-user:{user_id}"


class CachedUserBackend(ModelBackend):
    """Django's ModelBackend (passwords for the admin site, permissions), with the
    per-request user lookup served from the cache."""

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
    cache.delete(_cache_key(instance.pk))
