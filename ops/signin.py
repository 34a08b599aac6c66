"""What a sign-in writes, kept to what it is for.

Most sign-ins carry no password: an LTI launch, the new-window handoff, the demo. For them
django-axes (which counts failed *passwords*, for the admin sign-in) has no attempts to
clean or reset, and its access log would be a second record of every launch (the
membership already keeps who launched); each cost three statements a launch. And Django
saves ``last_login`` at every sign-in (a statement on every launch; it once dropped the
user from the cache as well, so the landing page read it again, which decision 82 ended);
for these sign-ins it is kept to the hour. A sign-in with a password (the admin site) keeps
axes and an exact ``last_login``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from django.contrib.auth import get_user_model
from django.contrib.auth.models import update_last_login
from django.contrib.auth.signals import user_logged_in
from django.utils import timezone

LAST_LOGIN_PRECISION = timedelta(hours=1)


class PasswordSignInHandler(AxesDatabaseHandler):
    """django-axes' database handler for sign-ins with a password only."""

    def user_logged_in(self, sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
        if user.has_usable_password():
            super().user_logged_in(sender, request, user, **kwargs)

    def user_logged_out(self, sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
        if user is None or user.has_usable_password():
            super().user_logged_out(sender, request, user, **kwargs)


def _update_last_login(sender: Any, user: Any, **kwargs: Any) -> None:
    last = user.last_login
    if user.has_usable_password() or last is None or timezone.now() - last >= LAST_LOGIN_PRECISION:
        update_last_login(sender, user, **kwargs)


def connect() -> None:
    """Django's ``last_login`` receiver replaced by the one above (auth's app connects its
    own first: ops comes after it in INSTALLED_APPS)."""
    user_logged_in.disconnect(dispatch_uid="update_last_login")
    if hasattr(get_user_model(), "last_login"):
        user_logged_in.connect(_update_last_login, dispatch_uid="update_last_login")
