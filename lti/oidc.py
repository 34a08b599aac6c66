"""OIDC third-party login initiation (LTI core §5.1.1, 1EdTech Security Framework §5.1)
and the login state that binds the launch to the browser that started it.

The state record lives in the cache (Redis in production) for a few minutes and is used
once; while the cache cannot be reached, states and used nonces are kept in the database
instead (decision 29), so launches go on through a Redis outage. The browser proves it
started the login either with a cookie named after the state or, where the platform offers
LTI platform storage (``lti_storage_target``), with a secret kept in the platform's storage
through postMessage.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import timedelta
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ops.cache import is_down as cache_is_down

from .errors import LaunchError
from .models import KeptInDatabase, Registration

STATE_COOKIE_PREFIX = "lti_state_"
# The login initiation's parameters (LTI core §5.1.1), as a new window repeats them.
LOGIN_PARAMS = (
    "iss",
    "login_hint",
    "target_link_uri",
    "lti_message_hint",
    "lti_deployment_id",
    "client_id",
)


@dataclass(frozen=True)
class LoginState:
    state: str
    nonce: str
    registration_id: int
    target_link_uri: str
    storage_target: str
    storage_secret: str


@dataclass(frozen=True)
class LoginRedirect:
    auth_url: str
    login: LoginState
    auth_origin: str


def _state_key(state: str) -> str:
    return f"lti:state:{state}"


def _kept(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _keep_in_database(key: str, data: dict, seconds: int) -> bool:
    """Keeps the entry unless one is there already (False then)."""
    now = timezone.now()
    KeptInDatabase.objects.filter(expires_at__lte=now).delete()
    try:
        with transaction.atomic():
            KeptInDatabase.objects.create(
                key=_kept(key), data=data, expires_at=now + timedelta(seconds=seconds)
            )
    except IntegrityError:
        return False
    return True


def _put(key: str, data: dict, seconds: int) -> None:
    if not cache.add(key, data, seconds):  # a new random key: only an unreachable cache says no
        _keep_in_database(key, data, seconds)


def _find(key: str) -> tuple[dict, bool] | None:
    """The entry and whether it is kept in the database."""
    data = cache.get(key)
    if data is not None:
        return data, False
    record = KeptInDatabase.objects.filter(key=_kept(key), expires_at__gt=timezone.now()).first()
    return (record.data, True) if record else None


def _take(key: str, in_database: bool) -> bool:
    """Removes the entry; False when another request took it first."""
    if in_database:
        deleted, _ = KeptInDatabase.objects.filter(key=_kept(key)).delete()
        return deleted > 0
    return cache.delete(key)


def record_nonce(issuer: str, nonce: str) -> bool:
    """Records the nonce as used: True the first time, False when it was used before."""
    key = f"lti:nonce:{issuer}:{nonce}"
    seconds = settings.LTI_STATE_TTL_SECONDS * 2
    if cache.add(key, True, seconds):
        return True
    if not cache_is_down():
        return False
    return _keep_in_database(key, {}, seconds)


def is_tool_url(url: str, tool_base_url: str) -> bool:
    """Whether the URL points into this tool (same scheme, host and port, below its path)."""
    try:
        target, base = urlsplit(url), urlsplit(tool_base_url)
    except ValueError:  # not a URL at all, e.g. "http://[x"
        return False
    return (
        target.scheme == base.scheme
        and target.netloc == base.netloc
        and target.path.startswith(base.path or "/")
    )


def _registration_for_login(issuer: str, client_id: str) -> Registration:
    registrations = Registration.objects.filter(issuer=issuer, is_active=True)
    if client_id:
        registrations = registrations.filter(client_id=client_id)
    found = list(registrations[:2])
    if not found:
        raise LaunchError(
            _(
                "This platform (issuer and client id) is not registered with this tool. "
                "Ask your LMS administrator to register the tool."
            )
        )
    if len(found) > 1:
        raise LaunchError(_("The platform has several registrations here; it must send client_id."))
    return found[0]


def initiate_login(
    params: Mapping[str, str], *, tool_base_url: str, launch_url: str
) -> LoginRedirect:
    if any("\x00" in str(value) for value in params.values()):
        raise LaunchError(_("The login request contains a NUL character."))
    issuer = params.get("iss", "")
    login_hint = params.get("login_hint", "")
    target_link_uri = params.get("target_link_uri", "")
    missing = [
        name
        for name, value in (
            ("iss", issuer),
            ("login_hint", login_hint),
            ("target_link_uri", target_link_uri),
        )
        if not value
    ]
    if missing:
        raise LaunchError(_("The login request is missing %(names)s."), names=", ".join(missing))
    if not is_tool_url(target_link_uri, tool_base_url):
        raise LaunchError(_("The login request's target_link_uri does not point at this tool."))
    registration = _registration_for_login(issuer, params.get("client_id", ""))

    login = LoginState(
        state=secrets.token_urlsafe(24),
        nonce=secrets.token_urlsafe(24),
        registration_id=registration.pk,
        target_link_uri=target_link_uri,
        storage_target=params.get("lti_storage_target", ""),
        storage_secret=secrets.token_urlsafe(24),
    )
    _put(_state_key(login.state), asdict(login), settings.LTI_STATE_TTL_SECONDS)
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": registration.client_id,
        "redirect_uri": launch_url,
        "login_hint": login_hint,
        "state": login.state,
        "nonce": login.nonce,
    }
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    separator = "&" if urlsplit(registration.auth_login_url).query else "?"
    auth = urlsplit(registration.auth_login_url)
    return LoginRedirect(
        auth_url=f"{registration.auth_login_url}{separator}{urlencode(query)}",
        login=login,
        auth_origin=f"{auth.scheme}://{auth.netloc}",
    )


def peek_state(state: str) -> LoginState | None:
    found = _find(_state_key(state)) if state else None
    return LoginState(**found[0]) if found else None


def consume_state(state: str, *, cookie_value: str | None, storage_value: str | None) -> LoginState:
    """The login this launch answers, used once, if this browser started it."""
    if not state:
        raise LaunchError(_("The launch has no state parameter."))
    found = _find(_state_key(state))
    if found is None:
        raise LaunchError(
            _(
                "This launch is unknown, expired or was already used. "
                "Open the activity again from your course."
            )
        )
    login = LoginState(**found[0])
    by_cookie = cookie_value is not None and hmac.compare_digest(cookie_value, state)
    by_storage = bool(login.storage_target and storage_value) and hmac.compare_digest(
        storage_value or "", login.storage_secret
    )
    if not (by_cookie or by_storage):
        raise LaunchError(
            _(
                "This launch was not started in this browser (its state does not match). "
                "Open the activity again from your course; if it is embedded, try opening it "
                "in a new window."
            ),
            status=403,
        )
    if not _take(_state_key(state), in_database=found[1]):
        raise LaunchError(
            _("This launch was already used. Open the activity again from your course.")
        )
    return login
