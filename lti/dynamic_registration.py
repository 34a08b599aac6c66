"""LTI Dynamic Registration 1.0 (1EdTech), tool side: read the platform's OpenID
configuration, post our client registration, store what the platform answers."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

import requests
from django.db import transaction

from . import claims as c
from . import http
from .models import Deployment, Registration

logger = logging.getLogger(__name__)

PLATFORM_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONFIGURATION = "https://purl.imsglobal.org/spec/lti-tool-configuration"
TOOL_NAME = "Checkpointing Lab"
TOOL_DESCRIPTION = (
    "Gradient-checkpointing quiz with explanations, and GPU labs, graded into the gradebook."
)


class RegistrationError(Exception):
    pass


def tool_urls(tool_base_url: str) -> dict[str, str]:
    base = tool_base_url.rstrip("/")
    return {
        "login": f"{base}/lti/login/",
        "launch": f"{base}/lti/launch/",
        "jwks": f"{base}/lti/jwks/",
        "register": f"{base}/lti/register/",
        "deep_linking": f"{base}/lti/launch/",
    }


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


def _json(response: requests.Response, what: str) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError as error:
        raise RegistrationError(f"The platform's {what} is not JSON.") from error
    if not isinstance(data, dict):
        raise RegistrationError(f"The platform's {what} is not a JSON object.")
    return data


def fetch_platform_configuration(url: str) -> dict[str, Any]:
    try:
        scheme = urlsplit(url).scheme
    except ValueError:
        scheme = ""
    if scheme not in {"http", "https"} or "\x00" in url:
        raise RegistrationError("openid_configuration must be an http(s) URL.")
    try:
        response = http.get(url, headers={"Accept": "application/json"})
    except requests.RequestException as error:
        raise RegistrationError(
            f"The platform's configuration could not be read: {error}"
        ) from error
    if not response.ok:
        raise RegistrationError(
            f"The platform's configuration answered HTTP {response.status_code}."
        )
    config = _json(response, "configuration")
    required = [
        "issuer",
        "authorization_endpoint",
        "token_endpoint",
        "jwks_uri",
        "registration_endpoint",
    ]
    missing = [name for name in required if not isinstance(config.get(name), str)]
    if missing:
        raise RegistrationError(f"The platform's configuration lacks {', '.join(missing)}.")
    # The configuration, and where we post our registration, must be the issuer's own site
    # (LTI DR §3.5.1); we never post to a third host named by a configuration.
    issuer_host = _host(config["issuer"])
    if issuer_host != _host(url):
        raise RegistrationError("The configuration's issuer is not the site that served it.")
    if _host(config["registration_endpoint"]) != issuer_host:
        raise RegistrationError("The registration endpoint is not on the issuer's site.")
    for name in required:
        if len(config[name]) > 500 or urlsplit(config[name]).scheme not in {"http", "https"}:
            raise RegistrationError(f"The platform's {name} is not a usable URL.")
    return config


def _host(url: str) -> str:
    try:
        return urlsplit(url).netloc
    except ValueError:
        return ""


@transaction.atomic
def _store(config: dict[str, Any], reply: dict[str, Any]) -> Registration:
    tool_config = reply.get(TOOL_CONFIGURATION) or {}
    platform = config.get(PLATFORM_CONFIGURATION) or {}
    scope = reply.get("scope")
    registration, _ = Registration.objects.update_or_create(
        issuer=config["issuer"],
        client_id=str(reply["client_id"]),
        defaults={
            "title": str(platform.get("product_family_code") or config["issuer"])[:255],
            "auth_login_url": config["authorization_endpoint"],
            "auth_token_url": config["token_endpoint"],
            "keyset_url": config["jwks_uri"],
            "auth_audience": str(config.get("authorization_server") or "")[:500],
            "product_family_code": str(platform.get("product_family_code") or "")[:100],
            "scopes": scope.split() if isinstance(scope, str) else [],
            "is_active": True,
        },
    )
    if tool_config.get("deployment_id"):
        Deployment.objects.get_or_create(
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
        raise RegistrationError(f"The registration could not be sent: {error}") from error
    if not response.ok:
        logger.warning(
            "dynamic registration refused status=%s body=%s",
            response.status_code,
            response.text[:500],
        )
        raise RegistrationError(
            f"The platform refused the registration (HTTP {response.status_code})."
        )
    reply = _json(response, "registration answer")
    client_id = reply.get("client_id")
    tool_config = reply.get(TOOL_CONFIGURATION, {})
    deployment_id = tool_config.get("deployment_id", "") if isinstance(tool_config, dict) else None
    if not isinstance(client_id, str) or not 0 < len(client_id) <= 255:
        raise RegistrationError("The platform's registration answer has no usable client_id.")
    if not isinstance(deployment_id, str | int) or len(str(deployment_id)) > 255:
        raise RegistrationError("The platform's registration answer has no usable deployment id.")
    if not isinstance(config.get(PLATFORM_CONFIGURATION, {}), dict):
        raise RegistrationError("The platform's LTI configuration is not an object.")
    return _store(config, reply)
