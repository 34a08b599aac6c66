"""Deep Linking 2.0: the signed LtiDeepLinkingResponse that places content items in a
course (the course side builds the items: activities.deep_linking)."""

from __future__ import annotations

import secrets
import time
from typing import Any

import jwt

from . import claims as c
from .keys import signing_key
from .models import Registration

RESPONSE_LIFETIME_SECONDS = 600


def response_jwt(
    *,
    registration: Registration,
    deployment_id: str,
    content_items: list[dict[str, Any]],
    data: str | None,
) -> str:
    now = int(time.time())
    payload: dict[str, Any] = {
        "iss": registration.client_id,
        "aud": registration.issuer,
        "iat": now,
        "exp": now + RESPONSE_LIFETIME_SECONDS,
        "nonce": secrets.token_urlsafe(16),
        c.DEPLOYMENT_ID: deployment_id,
        c.MESSAGE_TYPE: c.DEEP_LINKING_RESPONSE,
        c.VERSION: c.LTI_VERSION,
        c.DL_CONTENT_ITEMS: content_items,
    }
    if data is not None:
        payload[c.DL_DATA] = data
    key = signing_key()
    return jwt.encode(payload, key.private_key_pem, algorithm="RS256", headers={"kid": key.kid})
