"""Creating, checking and revoking API tokens. A token reads `gcq_<prefix>_<secret>`; only
the SHA-256 of the secret is stored, so a database leak does not leak tokens."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from lti.access import lms_still_active
from lti.models import Context, Membership, Role

from .models import ApiToken

PREFIX = "gcq"


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_token(
    *, actor: AbstractBaseUser, name: str, context: Context | None, can_write: bool
) -> tuple[ApiToken, str]:
    """The token and its plain value, which is shown once and never stored."""
    prefix = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        name=name,
        prefix=prefix,
        key_hash=_hash(secret),
        context=context,
        can_write=can_write,
        created_by=actor,
    )
    return token, f"{PREFIX}_{prefix}_{secret}"


def check_token(value: str) -> ApiToken | None:
    parts = value.split("_", 2)
    if len(parts) != 3 or parts[0] != PREFIX:
        return None
    token = ApiToken.objects.select_related("context", "created_by").filter(prefix=parts[1]).first()
    if token is None or not token.is_active:
        return None
    if not constant_time_compare(token.key_hash, _hash(parts[2])):
        return None
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


def creator_lost_access(token: ApiToken) -> str | None:
    """Why the token's creator no longer holds the access the token was made with, by the
    latest account, membership and role data the tool holds; None while they still do."""
    creator = token.created_by
    if not creator.is_active:
        return "The token's creator is no longer active."
    if token.context_id is None:
        if not creator.is_superuser:
            return "The token's creator is no longer an administrator."
        return None
    still_staff = (
        Membership.objects.filter(lms_still_active("context"))
        .filter(user=creator, context_id=token.context_id, role=Role.STAFF, is_active=True)
        .exists()
    )
    return None if still_staff else "The token's creator no longer teaches its course."


def revoke_token(token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token
