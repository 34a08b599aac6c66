"""Validation of an LTI 1.3 launch (the id_token the platform posts to us), by pylti1p3's
``MessageLaunch`` with the steps this tool checks more strictly overridden (decision 8).

Every check of LTI core §5.1.3 and the 1EdTech Security Framework §5.1.3, each with a
plain-words reason: format and algorithm, issuer and client id (aud, azp), signature
with the platform's key, exp/iat with a small clock skew, the nonce of our login used
once, version, message type, deployment, required claims, and target_link_uri.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, TypeGuard

import jwt
from django.conf import settings
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from pylti1p3.contrib.django import DjangoMessageLaunch
from pylti1p3.contrib.django.request import DjangoRequest
from pylti1p3.exception import LtiException

from ops.text import holds_unstorable_text

from . import claims as c
from .errors import LaunchError
from .http import platform_url_ok
from .models import Deployment, Registration
from .oidc import (
    LoginSessionService,
    LoginState,
    StateCookieService,
    consume_state,
    is_tool_url,
    record_nonce,
)
from .platform_keys import platform_key
from .tool_conf import ToolConf

logger = logging.getLogger(__name__)

ALLOWED_ALGORITHMS = ["RS256"]


@dataclass(frozen=True)
class LaunchMessage:
    registration: Registration
    deployment: Deployment
    claims: dict[str, Any]
    login: LoginState  # the login it answers, its state used

    @property
    def message_type(self) -> str:
        return self.claims[c.MESSAGE_TYPE]

    @property
    def is_deep_linking(self) -> bool:
        return self.message_type == c.DEEP_LINKING_REQUEST

    @property
    def sub(self) -> str:
        return self.claims["sub"]

    @property
    def roles(self) -> list[str]:
        return list(self.claims.get(c.ROLES) or [])

    def claim(self, name: str) -> dict[str, Any]:
        value = self.claims.get(name)
        return value if isinstance(value, dict) else {}

    @property
    def locale(self) -> str:
        return str(self.claim(c.LAUNCH_PRESENTATION).get("locale") or "")


def _audiences(payload: dict[str, Any]) -> list[str]:
    aud = payload.get("aud")
    if isinstance(aud, str):
        return [aud]
    if isinstance(aud, list) and aud and all(isinstance(item, str) for item in aud):
        return aud
    raise LaunchError(_("The launch has no valid audience (aud)."))


def _issuer_and_client(payload: dict[str, Any]) -> tuple[str, str]:
    """The issuer and the client id the launch is for: its one audience, or among several
    the authorized party (azp), which pylti1p3 does not check."""
    issuer = payload.get("iss")
    if not isinstance(issuer, str) or not issuer:
        raise LaunchError(_("The launch has no issuer (iss)."))
    audiences = _audiences(payload)
    if len(audiences) > 1:
        azp = payload.get("azp")
        if not azp or azp not in audiences:
            raise LaunchError(
                _("The launch names several audiences but no authorized party (azp) among them.")
            )
        return issuer, azp
    client_id = audiences[0]
    if payload.get("azp") not in (None, client_id):
        raise LaunchError(_("The launch's authorized party (azp) is not its audience."))
    return issuer, client_id


def _verify_signature(
    id_token: str, key: jwt.PyJWK, algorithm: str, registration: Registration
) -> dict:
    try:
        return jwt.decode(
            id_token,
            key=key,
            algorithms=[algorithm],
            audience=registration.client_id,
            issuer=registration.issuer,
            leeway=settings.LTI_CLOCK_SKEW_SECONDS,
            options={"require": ["exp", "iat", "iss", "aud", "nonce"]},
        )
    except jwt.ExpiredSignatureError as error:
        raise LaunchError(_("The launch has expired (exp is in the past).")) from error
    except jwt.ImmatureSignatureError as error:
        raise LaunchError(
            _("The launch was issued in the future (iat); check the clocks.")
        ) from error
    except jwt.InvalidSignatureError as error:
        raise LaunchError(_("The launch's signature does not verify.")) from error
    except jwt.MissingRequiredClaimError as error:
        raise LaunchError(
            _("The launch is missing the %(claim)r claim."), claim=error.claim
        ) from error
    except jwt.InvalidAudienceError as error:
        raise LaunchError(_("The launch is not addressed to this tool (aud).")) from error
    except jwt.InvalidIssuerError as error:
        raise LaunchError(_("The launch's issuer (iss) is not its registration's.")) from error
    except jwt.InvalidTokenError as error:
        # PyJWT's reason is English: the operator's log has it, the person a translated one.
        logger.info("launch token refused by PyJWT: %s", error)
        raise LaunchError(_("The launch token is invalid.")) from error


def _check_nonce(payload: dict[str, Any], login: LoginState) -> None:
    nonce = payload["nonce"]
    if nonce != login.nonce:
        raise LaunchError(_("The launch's nonce is not the one of this login."))
    if not record_nonce(payload["iss"], nonce):
        raise LaunchError(_("This launch was already used (nonce replayed)."))


# LTI core: ids such as sub, context.id and resource_link.id are at most 255 ASCII characters.
MAX_ID_LENGTH = 255


def is_platform_id(value: object) -> TypeGuard[str]:
    """Whether a platform's id (a user's ``sub``, a context's or a link's id) can be kept: as
    sent, never stripped, since the platform compares it as sent (a roster lists the
    ``sub`` a launch gave)."""
    return isinstance(value, str) and bool(value.strip()) and len(value) <= MAX_ID_LENGTH


# The URLs a launch gives that we render (as a form's action, a link) or call (AGS, NRPS).
PLATFORM_URL_CLAIMS = (
    (c.DL_SETTINGS, "deep_link_return_url"),
    (c.AGS_ENDPOINT, "lineitem"),
    (c.AGS_ENDPOINT, "lineitems"),
    (c.NRPS, "context_memberships_url"),
    (c.LAUNCH_PRESENTATION, "return_url"),
)


def _check_platform_urls(payload: dict[str, Any]) -> None:
    """Every platform URL in the launch is http(s), https from an https platform without
    DEBUG: a `javascript:` or `data:` URL would run script in the tool's origin."""
    issuer = str(payload.get("iss") or "")
    for claim, name in PLATFORM_URL_CLAIMS:
        value = payload.get(claim)
        if not isinstance(value, dict) or not isinstance(value.get(name), str) or not value[name]:
            continue  # absent, or not a string: ignored, as the other optional claims
        if not platform_url_ok(value[name], issuer):
            raise LaunchError(
                _(
                    "The launch's %(name)s is not an http(s) address of the platform, so "
                    "the launch was refused."
                ),
                name=name,
            )


def _check_message(payload: dict[str, Any], login: LoginState, tool_base_url: str) -> None:
    if payload.get(c.VERSION) != c.LTI_VERSION:
        raise LaunchError(_("The launch's LTI version is not %(version)s."), version=c.LTI_VERSION)
    message_type = payload.get(c.MESSAGE_TYPE)
    if message_type not in (c.RESOURCE_LINK_REQUEST, c.DEEP_LINKING_REQUEST):
        raise LaunchError(
            _(
                "The launch's message type is missing or not one this tool handles "
                "(%(resource_link)s, %(deep_linking)s)."
            ),
            resource_link=c.RESOURCE_LINK_REQUEST,
            deep_linking=c.DEEP_LINKING_REQUEST,
        )
    sub = payload.get("sub")
    if not is_platform_id(sub):
        raise LaunchError(_("The launch does not identify the user (sub)."))
    context = payload.get(c.CONTEXT)
    if context is not None and not (
        isinstance(context, dict) and is_platform_id(context.get("id"))
    ):
        raise LaunchError(_("The launch's context claim has no valid id."))
    if not isinstance(payload.get(c.ROLES), list):
        raise LaunchError(_("The launch has no roles claim."))
    if message_type == c.RESOURCE_LINK_REQUEST:
        link = payload.get(c.RESOURCE_LINK)
        if not isinstance(link, dict) or not is_platform_id(link.get("id")):
            raise LaunchError(_("The launch has no resource link id."))
    else:
        dl = payload.get(c.DL_SETTINGS)
        if not isinstance(dl, dict) or not isinstance(dl.get("deep_link_return_url"), str):
            raise LaunchError(_("The deep-linking request has no deep_link_return_url."))
    _check_platform_urls(payload)
    target = payload.get(c.TARGET_LINK_URI)
    if not isinstance(target, str) or not is_tool_url(target, tool_base_url):
        raise LaunchError(_("The launch's target_link_uri does not point at this tool."))
    if target != login.target_link_uri:
        raise LaunchError(_("The launch's target_link_uri differs from the login's."))


def claimed_locale(id_token: str) -> str:
    """The locale the launch says it is presented in, read without verifying it: only to
    choose the language its refusal is shown in."""
    try:
        unverified = jwt.decode(id_token, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        return ""
    presentation = unverified.get(c.LAUNCH_PRESENTATION) if isinstance(unverified, dict) else None
    return str(presentation.get("locale") or "") if isinstance(presentation, dict) else ""


# What pylti1p3's message validators refuse (their English text) in this tool's words, so a
# refusal reads in the launch's language. Most cannot happen after _check_message; those
# that can are the deep-linking settings' types and targets.
LIBRARY_REASONS = {
    "Must have a user (sub)": _("The launch does not identify the user (sub)."),
    "Incorrect version, expected 1.3.0": _("The launch's LTI version is not 1.3.0."),
    "Missing Roles Claim": _("The launch has no roles claim."),
    "Missing Resource Link Id": _("The launch has no resource link id."),
    "Missing Deep Linking Settings": _("The deep-linking request has no deep-linking settings."),
    "Missing Deep Linking Return URL": _("The deep-linking request has no deep_link_return_url."),
    "Must support resource link placement types": _(
        "The deep-linking request does not accept LTI resource links (accept_types), the only "
        "content this tool places."
    ),
    "Must support a presentation type": _(
        "The deep-linking request accepts no presentation target "
        "(accept_presentation_document_targets)."
    ),
    "Invalid message type": _("The launch has no message type."),
    "Unrecognized message type": _("The launch's message type is not one this tool handles."),
}


def _library_refusal(error: LtiException) -> LaunchError:
    reason = LIBRARY_REASONS.get(str(error))
    if reason is None:
        logger.warning("pylti1p3 refused a launch for a reason not translated here: %s", error)
        return LaunchError(_("The launch is not a valid LTI message."))
    return LaunchError(reason)


class ToolMessageLaunch(DjangoMessageLaunch):
    """pylti1p3's message launch, each step hardened where the library is weaker than this
    tool's checks: the state is the login's record, used once, and proven by its cookie or
    by LTI platform storage (the library keeps a state's cookie only, and lets a launch be
    posted twice); the audience names the registration through ``azp``; the platform's key
    comes from its cached key set with one rate-limited refetch for an unknown ``kid``, over
    the outbound policy (lti.platform_keys); exp, iat, iss and aud are verified with a small
    clock skew; the nonce is the login's and is used once (the library accepts any nonce it
    issued, again and again); the message's claims are checked before the library's
    validators; a deactivated deployment is refused. Every refusal is a ``LaunchError`` with a
    translated reason."""

    def __init__(self, request: HttpRequest, *, tool_base_url: str) -> None:
        django_request = DjangoRequest(request, post_only=True)
        super().__init__(
            django_request,
            ToolConf(),
            session_service=LoginSessionService(django_request),
            cookie_service=StateCookieService(django_request),
        )
        self._tool_base_url = tool_base_url
        self.login: LoginState | None = None
        self.registration_model: Registration | None = None
        self.deployment_model: Deployment | None = None

    def validate(self) -> ToolMessageLaunch:
        self._validated = True
        try:
            (
                self.validate_state()
                .validate_jwt_format()
                .validate_registration()
                .validate_jwt_signature()
                .validate_nonce()
                .validate_message()
                .validate_deployment()
                .save_launch_data()
            )
        except LtiException as error:
            self._validated = False
            raise _library_refusal(error) from error
        except Exception:
            self._validated = False
            raise
        return self

    def validate_state(self) -> ToolMessageLaunch:
        state = self._get_request_param("state") or ""
        self.login = consume_state(
            state,
            cookie_value=self._cookie_service.get_cookie(state),
            storage_value=self._get_request_param("lti_storage_value"),
        )
        return self

    def validate_jwt_format(self) -> ToolMessageLaunch:
        id_token = self._get_request_param("id_token") or ""
        if not id_token:
            raise LaunchError(_("The launch has no id_token."))
        try:
            super().validate_jwt_format()
        except LtiException as error:
            raise LaunchError(_("The id_token is not a signed JWT.")) from error
        header, body = self._jwt.get("header"), self._jwt.get("body")
        if not isinstance(header, dict) or not isinstance(body, dict):
            raise LaunchError(_("The id_token is not a signed JWT."))
        if holds_unstorable_text(body) or "\x00" in id_token:
            raise LaunchError(
                _("The launch contains a NUL character or text that is not valid Unicode.")
            )
        if header.get("alg") not in ALLOWED_ALGORITHMS:
            raise LaunchError(
                _("The launch is signed with %(algorithm)r; only RS256 is accepted."),
                algorithm=header.get("alg"),
            )
        if not header.get("kid"):
            raise LaunchError(_("The launch's JWT header names no key (kid)."))
        return self

    def validate_registration(self) -> ToolMessageLaunch:
        assert self.login is not None
        body = self._jwt["body"]
        issuer, client_id = _issuer_and_client(body)
        # The deployment is read with its registration, in one statement: nothing of it is
        # used before the signature and the message are checked (validate_deployment).
        deployment_id = body.get(c.DEPLOYMENT_ID)
        registration, self.deployment_model = self._tool_config.find_registration_and_deployment(
            issuer, client_id, deployment_id if isinstance(deployment_id, str) else ""
        )
        if registration is None:
            raise LaunchError(
                _(
                    "This issuer and client id are not registered with this tool "
                    "(iss=%(issuer)r, client_id=%(client_id)r)."
                ),
                issuer=issuer,
                client_id=client_id,
            )
        if registration.model.pk != self.login.registration_id:
            raise LaunchError(
                _("The launch does not come from the platform that started the login.")
            )
        self._registration = registration
        self.registration_model = registration.model
        return self

    def get_client_id(self) -> str:
        assert self.registration_model is not None
        return self.registration_model.client_id

    def get_public_key(self) -> tuple[Any, str]:
        assert self.registration_model is not None
        return platform_key(self.registration_model.keyset_url, self._jwt["header"]["kid"]), "RS256"

    def validate_jwt_signature(self) -> ToolMessageLaunch:
        assert self.registration_model is not None
        key, algorithm = self.get_public_key()
        self._jwt["body"] = _verify_signature(
            self._get_id_token(), key, algorithm, self.registration_model
        )
        return self

    def validate_nonce(self) -> ToolMessageLaunch:
        assert self.login is not None
        _check_nonce(self._jwt["body"], self.login)
        return self

    def validate_message(self) -> ToolMessageLaunch:
        assert self.login is not None
        _check_message(self._jwt["body"], self.login, self._tool_base_url)
        super().validate_message()  # the library's validators of each message type
        return self

    def validate_deployment(self) -> ToolMessageLaunch:
        assert self.registration_model is not None
        body = self._jwt["body"]
        deployment_id = body.get(c.DEPLOYMENT_ID)
        if not isinstance(deployment_id, str) or not deployment_id:
            raise LaunchError(_("The launch has no deployment_id."))
        found = self.deployment_model  # read with the registration, by the same token
        if found is None or found.deployment_id != deployment_id:
            raise LaunchError(
                _("The deployment %(deployment)r is not registered with this tool."),
                deployment=deployment_id,
            )
        if not found.is_active:
            raise LaunchError(
                _("The deployment %(deployment)r has been deactivated."),
                status=403,
                deployment=deployment_id,
            )
        return self

    def save_launch_data(self) -> ToolMessageLaunch:
        """Nothing kept: record_launch writes what the tool keeps of the launch, and the
        state was used once, so the library's "state valid for this id_token" would only let
        the same launch be posted again."""
        return self

    def message(self) -> LaunchMessage:
        self.validate()
        assert self.registration_model is not None
        assert self.deployment_model is not None
        assert self.login is not None
        return LaunchMessage(
            registration=self.registration_model,
            deployment=self.deployment_model,
            claims=dict(self._jwt["body"]),
            login=self.login,
        )


def validate_launch(request: HttpRequest, *, tool_base_url: str) -> LaunchMessage:
    """The launch the platform posted, validated (pylti1p3's MessageLaunch, hardened)."""
    return ToolMessageLaunch(request, tool_base_url=tool_base_url).message()
