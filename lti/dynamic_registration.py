"""LTI Dynamic Registration 1.0 (1EdTech), tool side: read the platform's OpenID
configuration, post our client registration, store what the platform answers."""

from __future__ import annotations

import hashlib
import logging
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from ops.text import holds_unstorable_text

from . import claims as c
from . import http
from .models import Deployment, Registration

logger = logging.getLogger(__name__)

PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
FORM_SALT = "lti.register.form"
TOOL_NAME = "Checkpointing Lab"
TOOL_DESCRIPTION = (
    "Gradient-checkpointing quiz with explanations, and GPU labs, graded into the gradebook."
)


class RegistrationError(Exception):
    status = 400


class AlreadyRegistered(RegistrationError):
    status = 409

    def __init__(self, issuer: str, client_id: str) -> None:
        super().__init__(
            _(
                "%(issuer)s already registered this tool with client id %(client_id)s; "
                "nothing was changed. To register it again, an administrator of this tool "
                "first removes that registration (Django admin, LTI registrations)."
            )
            % {"issuer": issuer, "client_id": client_id}
        )


def registration_form_token(configuration_url: str, registration_token: str) -> str:
    """The registration page's form token: signed, dated, bound to the platform's
    configuration URL and registration token. It protects the form's POST instead of a CSRF
    cookie, which is third-party in the platform's dialog and often dropped."""
    return signing.dumps([configuration_url, _digest(registration_token)], salt=FORM_SALT)


def registration_form_token_ok(token: str, configuration_url: str, registration_token: str) -> bool:
    try:
        signed = signing.loads(
            token, salt=FORM_SALT, max_age=settings.LTI_REGISTRATION_FORM_SECONDS
        )
    except signing.BadSignature:  # SignatureExpired included
        return False
    return signed == [configuration_url, _digest(registration_token)]


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def tool_urls(tool_base_url: str) -> dict[str, str]:
    base = tool_base_url.rstrip("/")
    return {
        "login": f"{base}/lti/login/",
        "launch": f"{base}/lti/launch/",
        "jwks": f"{base}/lti/jwks/",
        "register": f"{base}/lti/register/",
        "deep_linking": f"{base}/lti/launch/",
    }


def registration_mode() -> str:
    """How dynamic registration opens here: "key" (its URL must carry LTI_REGISTRATION_KEY),
    "open" (a DEBUG run without a key, as `make run`) or "closed"."""
    if settings.LTI_REGISTRATION_KEY:
        return "key"
    return "open" if settings.DEBUG else "closed"


def client_registration(tool_base_url: str) -> dict[str, Any]:
    """Our client registration request (LTI DR §3.5.2)."""
    urls = tool_urls(tool_base_url)
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": urls["login"],
        "redirect_uris": [urls["launch"]],
        "client_name": TOOL_NAME,
        "jwks_uri": urls["jwks"],
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(c.TOOL_SCOPES),
        TOOL_CONFIGURATION: {
            "domain": urlsplit(tool_base_url).netloc,
            "description": TOOL_DESCRIPTION,
            "target_link_uri": urls["launch"],
            "claims": ["iss", "sub", "name", "given_name", "family_name", "email", "locale"],
            "messages": [
                {
                    "type": c.DEEP_LINKING_REQUEST,
                    "target_link_uri": urls["deep_linking"],
                    "label": TOOL_NAME,
                },
                {"type": c.RESOURCE_LINK_REQUEST, "target_link_uri": urls["launch"]},
            ],
        },
    }


def _refuse_unstorable(document: dict[str, Any], reason: str) -> None:
    """A NUL or an unpaired surrogate (JSON's "\\ud800") anywhere in what the platform sent:
    no database text can store either, so nothing is registered."""
    if holds_unstorable_text(document):
        raise RegistrationError(reason)


def configuration_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a platform's configuration address, or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a port out of range)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in {"http", "https"}
        or not parts.hostname
        or "\x00" in url
        or len(url) > 2000
    ):
        return str(_("openid_configuration must be an http(s) URL."))
    return None


def fetch_platform_configuration(url: str) -> dict[str, Any]:
    if (problem := configuration_url_problem(url)) is not None:
        raise RegistrationError(problem)
    try:
        response = http.get(url, headers={"Accept": "application/json"})
        response.raise_for_status()
        config = response.json()
    except (requests.RequestException, ValueError, RecursionError) as error:
        # One text for a closed port, a service that is not HTTP, an HTTP error and an
        # answer that is not JSON: the registering user learns nothing about the network.
        logger.warning("platform configuration unreachable url=%s error=%s", url, error)
        raise RegistrationError(str(http.UNREACHABLE)) from error
    if not isinstance(config, dict):
        raise RegistrationError(str(http.UNREACHABLE))
    _refuse_unstorable(
        config,
        _(
            "The platform's configuration contains a NUL character or text that is not valid "
            "Unicode, which cannot be stored; nothing was registered."
        ),
    )
    required = [
        "issuer",
        "authorization_endpoint",
        "token_endpoint",
        "jwks_uri",
        "registration_endpoint",
    ]
    missing = [name for name in required if not isinstance(config.get(name), str)]
    if missing:
        raise RegistrationError(
            _("The platform's configuration lacks %(names)s.") % {"names": ", ".join(missing)}
        )
    # The issuer must be the origin the configuration was fetched from, and we post our
    # registration only there (LTI DR §3.5.1): never to a third host a configuration names.
    issuer_origin = http.origin(config["issuer"])
    if not issuer_origin or issuer_origin != http.origin(url):
        raise RegistrationError(_("The configuration's issuer is not the site that served it."))
    if http.origin(config["registration_endpoint"]) != issuer_origin:
        raise RegistrationError(_("The registration endpoint is not on the issuer's site."))
    for name in required:
        if len(config[name]) > 500 or not http.platform_url_ok(config[name], config["issuer"]):
            raise RegistrationError(
                _("The platform's %(name)s is not a usable URL.") % {"name": name}
            )
    return config


@transaction.atomic
def _store(config: dict[str, Any], reply: dict[str, Any]) -> Registration:
    """A new registration and its deployment. One that exists is never changed: a
    registration's keyset and endpoints decide whose launches we trust, and whoever holds
    the registration key must not be able to repoint someone else's."""
    tool_config = reply.get(TOOL_CONFIGURATION) or {}
    platform = config.get(PLATFORM_CONFIGURATION) or {}
    scope = reply.get("scope")
    issuer, client_id = config["issuer"], str(reply["client_id"])
    if Registration.objects.filter(issuer=issuer, client_id=client_id).exists():
        raise AlreadyRegistered(issuer, client_id)
    try:
        with transaction.atomic():
            registration = Registration.objects.create(
                issuer=issuer,
                client_id=client_id,
                title=str(platform.get("product_family_code") or issuer)[:255],
                auth_login_url=config["authorization_endpoint"],
                auth_token_url=config["token_endpoint"],
                keyset_url=config["jwks_uri"],
                auth_audience=str(config.get("authorization_server") or "")[:500],
                product_family_code=str(platform.get("product_family_code") or "")[:100],
                scopes=scope.split() if isinstance(scope, str) else [],
                is_active=True,
            )
    except IntegrityError as error:  # the same registration, saved by a concurrent request
        raise AlreadyRegistered(issuer, client_id) from error
    if tool_config.get("deployment_id"):
        Deployment.objects.create(
            registration=registration, deployment_id=str(tool_config["deployment_id"])
        )
    return registration


def register_with_platform(
    *, openid_configuration_url: str, registration_token: str, tool_base_url: str
) -> Registration:
    config = fetch_platform_configuration(openid_configuration_url)
    headers = {"Accept": "application/json"}
    if registration_token:
        headers["Authorization"] = f"Bearer {registration_token}"
    try:
        response = http.post(
            config["registration_endpoint"],
            json=client_registration(tool_base_url),
            headers=headers,
        )
    except requests.RequestException as error:
        logger.warning("dynamic registration not sent error=%s", error)
        raise RegistrationError(str(http.UNREACHABLE)) from error
    if not response.ok:
        logger.warning(
            "dynamic registration refused status=%s body=%s",
            response.status_code,
            response.text[:500],
        )
        raise RegistrationError(
            _(
                "The platform refused the registration. Start it again from the LMS "
                "(its registration token may have expired)."
            )
        )
    try:
        reply = response.json()
    except (ValueError, RecursionError) as error:
        raise RegistrationError(_("The platform's registration answer is not JSON.")) from error
    if not isinstance(reply, dict):
        raise RegistrationError(_("The platform's registration answer is not a JSON object."))
    _refuse_unstorable(
        reply,
        _(
            "The platform's registration answer contains a NUL character or text that is not "
            "valid Unicode, which cannot be stored; nothing was registered."
        ),
    )
    client_id = reply.get("client_id")
    tool_config = reply.get(TOOL_CONFIGURATION, {})
    deployment_id = tool_config.get("deployment_id", "") if isinstance(tool_config, dict) else None
    if not isinstance(client_id, str) or not 0 < len(client_id) <= 255:
        raise RegistrationError(_("The platform's registration answer has no usable client_id."))
    if not isinstance(deployment_id, str | int) or len(str(deployment_id)) > 255:
        raise RegistrationError(
            _("The platform's registration answer has no usable deployment id.")
        )
    if not isinstance(config.get(PLATFORM_CONFIGURATION, {}), dict):
        raise RegistrationError(_("The platform's LTI configuration is not an object."))
    return _store(config, reply)
