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
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.translation import gettext_lazy as _
from pylti1p3.contrib.django import DjangoOIDCLogin
from pylti1p3.contrib.django.cookie import DjangoCookieService
from pylti1p3.contrib.django.request import DjangoRequest
from pylti1p3.contrib.django.session import DjangoSessionService
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.request import Request

from ops.cache import is_down as cache_is_down
from ops.cache import take

from . import deep_link_relay
from .errors import LaunchError
from .models import KeptInDatabase
from .tool_conf import ToolConf, ToolRegistration

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
    # The deep-linking return channel the login repeated (lti.deep_link_relay), which its
    # launch keeps or closes; stored only when there is one.
    return_channel: str = ""


@dataclass(frozen=True)
class LoginRedirect:
    auth_url: str
    login: LoginState
    auth_origin: str
    cookies: StateCookieService  # sets the state cookie on the response


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
    record = _in_database(key)
    return (record.data, True) if record else None


def _in_database(key: str) -> KeptInDatabase | None:
    return KeptInDatabase.objects.filter(key=_kept(key), expires_at__gt=timezone.now()).first()


def _take_now(key: str) -> dict | None:
    """The entry, removed in the same step; None when it is not there or another request
    took it first."""
    data = take(key)
    if data is not None:
        return data
    record = _in_database(key)  # kept there while the cache was unreachable
    return record.data if record and _take(key, in_database=True) else None


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


def _registration_for_login(issuer: str, client_id: str) -> ToolRegistration:
    found = ToolConf().registrations_for_login(issuer, client_id)
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


class LoginStorage(LaunchDataStorage):
    """pylti1p3's launch-data storage for login states: the cache, or the database while
    the cache cannot be reached (decision 29). Keys are random states, so no session id."""

    def get_session_cookie_name(self) -> None:
        return None

    def _prepare_key(self, key: str) -> str:
        return key

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> Any:
        found = _find(self._prepare_key(key))
        return found[0] if found else None

    def set_value(self, key: str, value: Any, exp: int | None = None) -> None:
        _put(self._prepare_key(key), value, exp or settings.LTI_STATE_TTL_SECONDS)

    def check_value(self, key: str) -> bool:
        return _find(self._prepare_key(key)) is not None


class LoginSessionService(DjangoSessionService):
    """The login's state, nonce and what the launch must match, kept as one record under
    the state: pylti1p3 keeps a nonce apart, valid for any launch, where ours belongs to the
    login that made it and is used once (lti.launch)."""

    def __init__(self, request: Request) -> None:
        super().__init__(request)
        self.set_data_storage(LoginStorage())
        self._launch_data_lifetime = settings.LTI_STATE_TTL_SECONDS
        self._nonce = ""
        self.saved: dict = {}

    def save_nonce(self, nonce: str) -> None:
        self._nonce = nonce

    def save_state_params(self, state: str, params: dict[str, object]) -> None:
        self.saved = {**params, "state": state, "nonce": self._nonce}
        self._set_value(_state_key(state), self.saved)


def cookie_options() -> dict:
    secure = settings.SESSION_COOKIE_SECURE
    return {"secure": secure, "httponly": True, "samesite": "None" if secure else "Lax"}


class StateCookieService(DjangoCookieService):
    """pylti1p3's cookie service: the state cookie, named after the state, under /lti/ only,
    for as long as the state lives."""

    def _get_key(self, key: str) -> str:
        return STATE_COOKIE_PREFIX + key

    def update_response(self, response: HttpResponse) -> None:
        for name, cookie in self._cookie_data_to_set.items():
            response.set_cookie(
                name,
                cookie["value"],
                max_age=settings.LTI_STATE_TTL_SECONDS,
                path="/lti/",
                **cookie_options(),
            )


class ToolOIDCLogin(DjangoOIDCLogin):
    """pylti1p3's third-party login initiation, with our checks of the request (NUL, the
    required parameters, a target_link_uri into this tool) and the login's record."""

    def __init__(self, request: HttpRequest, *, tool_base_url: str) -> None:
        django_request = DjangoRequest(request)
        super().__init__(
            request,
            ToolConf(),
            session_service=LoginSessionService(django_request),
            cookie_service=StateCookieService(django_request),
        )
        self._tool_base_url = tool_base_url
        self.registration: ToolRegistration | None = None

    def _get_uuid(self) -> str:
        return secrets.token_urlsafe(24)

    def _generate_nonce(self) -> str:
        return secrets.token_urlsafe(24)

    def validate_oidc_login(self) -> ToolRegistration:
        raw = self._request.request
        params = raw.POST if raw.method == "POST" else raw.GET
        if any("\x00" in value for values in params.lists() for value in values[1]):
            raise LaunchError(_("The login request contains a NUL character."))
        issuer = self._get_request_param("iss") or ""
        target_link_uri = self._get_request_param("target_link_uri") or ""
        missing = [
            name
            for name, value in (
                ("iss", issuer),
                ("login_hint", self._get_request_param("login_hint")),
                ("target_link_uri", target_link_uri),
            )
            if not value
        ]
        if missing:
            raise LaunchError(
                _("The login request is missing %(names)s."), names=", ".join(missing)
            )
        if not is_tool_url(target_link_uri, self._tool_base_url):
            raise LaunchError(_("The login request's target_link_uri does not point at this tool."))
        registration = _registration_for_login(issuer, self._get_request_param("client_id") or "")
        params = {
            "registration_id": registration.model.pk,
            "target_link_uri": target_link_uri,
            "storage_target": self._get_request_param("lti_storage_target") or "",
            "storage_secret": secrets.token_urlsafe(24),
        }
        return_channel = self._get_request_param(deep_link_relay.CHANNEL_FIELD)
        if return_channel:
            params["return_channel"] = return_channel
        self.pass_params_to_launch(params)
        self.registration = registration
        return registration

    def started(self) -> tuple[LoginState, StateCookieService]:
        """The login just started, and the state cookie its response sets."""
        return LoginState(**self._session_service.saved), self._cookie_service


def initiate_login(request: HttpRequest, *, tool_base_url: str, launch_url: str) -> LoginRedirect:
    """The platform's login initiation (pylti1p3's OIDCLogin): the URL of the platform's
    authorization with our state and nonce, the login's record, and the state cookie to set."""
    oidc_login = ToolOIDCLogin(request, tool_base_url=tool_base_url)
    auth_url = oidc_login.get_redirect_object(launch_url).get_redirect_url()
    login, cookies = oidc_login.started()
    auth = urlsplit(auth_url)
    return LoginRedirect(
        auth_url=auth_url,
        login=login,
        auth_origin=f"{auth.scheme}://{auth.netloc}",
        cookies=cookies,
    )


def peek_state(state: str) -> LoginState | None:
    found = _find(_state_key(state)) if state else None
    return LoginState(**found[0]) if found else None


def consume_state(state: str, *, cookie_value: str | None, storage_value: str | None) -> LoginState:
    """The login this launch answers, used once, if this browser started it."""
    if not state:
        raise LaunchError(_("The launch has no state parameter."))
    key = _state_key(state)
    if cookie_value is not None and constant_time_compare(cookie_value, state):
        # The state's cookie proves the browser without the record: taken in one step.
        data = _take_now(key)
        if data is None:
            raise _unknown_state()
        return LoginState(**data)
    found = _find(key)
    if found is None:
        raise _unknown_state()
    login = LoginState(**found[0])
    by_storage = bool(login.storage_target and storage_value) and constant_time_compare(
        storage_value or "", login.storage_secret
    )
    if not by_storage:
        raise LaunchError(
            _(
                "This launch was not started in this browser (its state does not match). "
                "Open the activity again from your course; if it is embedded, try opening it "
                "in a new window."
            ),
            status=403,
        )
    if not _take(key, in_database=found[1]):
        raise LaunchError(
            _("This launch was already used. Open the activity again from your course.")
        )
    return login


def _unknown_state() -> LaunchError:
    return LaunchError(
        _(
            "This launch is unknown, expired or was already used. "
            "Open the activity again from your course."
        )
    )
