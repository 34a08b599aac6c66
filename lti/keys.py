"""Our signing keys: generated server-side, published in the JWKS, rotated in stages.

Rotation never breaks a launch or a token request: a new key is published (``next``)
before it signs, and the old one stays published (``retiring``) until platforms can no
longer hold anything signed with it.

1. ``publish``: a new key appears in the JWKS; the active key keeps signing.
2. ``activate``: (after platforms' JWKS caches expired) the new key signs; the old one
   stays in the JWKS.
3. ``retire``: (after tokens signed with it expired) the old key leaves the JWKS.
"""

from __future__ import annotations

import json
import secrets

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.db import IntegrityError, transaction
from jwt.algorithms import RSAAlgorithm

from .models import ToolKey, ToolKeyState

PUBLISHED_STATES = (ToolKeyState.NEXT, ToolKeyState.ACTIVE, ToolKeyState.RETIRING)


class KeyRotationError(Exception):
    pass


def _new_key(state: str) -> ToolKey:
    private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    kid = secrets.token_urlsafe(16)
    public_jwk = json.loads(RSAAlgorithm.to_jwk(private_key.public_key()))
    public_jwk.pop("key_ops", None)  # RFC 7517 §4.3: not together with "use"
    public_jwk.update({"kid": kid, "alg": "RS256", "use": "sig"})
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return ToolKey.objects.create(kid=kid, private_key_pem=pem, public_jwk=public_jwk, state=state)


def signing_key() -> ToolKey:
    """The key that signs now; the first one is made on first use."""
    key = ToolKey.objects.filter(state=ToolKeyState.ACTIVE).first()
    if key is not None:
        return key
    try:
        with transaction.atomic():
            return _new_key(ToolKeyState.ACTIVE)
    except IntegrityError:  # another process made the first key at the same moment
        return ToolKey.objects.get(state=ToolKeyState.ACTIVE)


def exercise_signatures() -> None:
    """Signs a throwaway token with the tool's active key and verifies it (a web worker's
    warm-up): OpenSSL looks its algorithms up on their first use in a process, which was
    about a millisecond of a worker's first launch. Makes no key where there is none."""
    key = ToolKey.objects.filter(state=ToolKeyState.ACTIVE).first()
    if key is None:
        return
    token = jwt.encode({"warm-up": True}, key.private_key_pem, algorithm="RS256")
    jwt.decode(token, jwt.PyJWK(key.public_jwk, algorithm="RS256"), algorithms=["RS256"])


def published_jwks() -> dict:
    signing_key()
    keys = ToolKey.objects.filter(state__in=PUBLISHED_STATES).order_by("created_at")
    return {"keys": [key.public_jwk for key in keys]}


@transaction.atomic
def publish_next_key() -> ToolKey:
    signing_key()
    if ToolKey.objects.filter(state=ToolKeyState.NEXT).exists():
        raise KeyRotationError("A next key is already published; activate it first.")
    return _new_key(ToolKeyState.NEXT)


@transaction.atomic
def activate_next_key() -> ToolKey:
    next_key = ToolKey.objects.select_for_update().filter(state=ToolKeyState.NEXT).first()
    if next_key is None:
        raise KeyRotationError("No next key is published; run the publish step first.")
    ToolKey.objects.filter(state=ToolKeyState.ACTIVE).update(state=ToolKeyState.RETIRING)
    next_key.state = ToolKeyState.ACTIVE
    next_key.save(update_fields=["state", "state_changed_at"])
    return next_key


@transaction.atomic
def retire_old_keys() -> int:
    return ToolKey.objects.filter(state=ToolKeyState.RETIRING).update(state=ToolKeyState.RETIRED)
