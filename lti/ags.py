"""LTI Advantage service calls: OAuth2 client-credentials tokens (signed JWT assertion,
cached until shortly before they expire), Assignment and Grade Services 2.0 scores and
line items, and Names and Role Provisioning Services 2.0 rosters.

Every call has connect and read timeouts. Failures are sorted for the caller:
``PlatformUnavailable`` (5xx, 429, timeouts, dropped connections: try again later, with
the platform's Retry-After when it gives one), ``PlatformRefused`` (a 4xx that retrying will
not fix, with the platform's reason) and ``ScoreOutdated`` (Moodle's 409: it already holds a
newer score)."""

from __future__ import annotations

import email.utils
import hashlib
import logging
import re
import secrets
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import jwt
import requests
from django.core.cache import cache

from . import claims as c
from . import http
from .keys import signing_key
from .models import Registration

logger = logging.getLogger(__name__)
TOKEN_SAFETY_SECONDS = 60
SCORE_MEDIA_TYPE = "application/vnd.ims.lis.v1.score+json"
LINEITEM_MEDIA_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS_MEDIA_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
MEMBERSHIPS_MEDIA_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"


class PlatformError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PlatformUnavailable(PlatformError):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PlatformRefused(PlatformError):
    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ScoreOutdated(PlatformError):
    pass


def _retry_after(response: requests.Response) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if unreadable."""
    value = response.headers.get("Retry-After", "").strip()
    if re.fullmatch(r"[0-9]{1,9}", value):
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


def _reason(response: requests.Response) -> str:
    text = response.text.strip().replace("\n", " ")
    return f"HTTP {response.status_code}: {text[:300]}" if text else f"HTTP {response.status_code}"


def _send(method: str, url: str, **kwargs: Any) -> requests.Response:
    try:
        return getattr(http, method)(url, **kwargs)
    except http.PlatformAddressRefused as error:
        # Outside the outbound policy (an address we may not call, a redirect, an answer too
        # large): retrying will not change that.
        logger.warning("platform call refused by policy url=%s error=%s", url, error)
        raise PlatformRefused(str(http.UNREACHABLE), 0) from error
    except requests.Timeout as error:
        raise PlatformUnavailable(f"The platform did not answer in time ({url}).") from error
    except requests.RequestException as error:
        logger.warning("platform unreachable url=%s error=%s", url, error)
        raise PlatformUnavailable(str(http.UNREACHABLE)) from error


def _raise_for(response: requests.Response, what: str) -> None:
    status = response.status_code
    if status < 400:
        return
    if status == 429 or status >= 500:
        raise PlatformUnavailable(f"{what}: {_reason(response)}", _retry_after(response))
    raise PlatformRefused(f"{what}: {_reason(response)}", status)


def _token_cache_key(registration: Registration, scopes: list[str]) -> str:
    identity = "\n".join(
        [str(registration.pk), registration.auth_token_url, registration.client_id, *sorted(scopes)]
    )
    return f"lti:token:{hashlib.sha256(identity.encode()).hexdigest()}"


def client_assertion(registration: Registration) -> str:
    now = int(time.time())
    key = signing_key()
    claims = {
        "iss": registration.client_id,
        "sub": registration.client_id,
        "aud": registration.auth_audience or registration.auth_token_url,
        "iat": now,
        "exp": now + 300,
        "jti": secrets.token_urlsafe(16),
    }
    # Moodle refuses an assertion without `kid` ("kid must be provided in JWT header").
    return jwt.encode(claims, key.private_key_pem, algorithm="RS256", headers={"kid": key.kid})


def access_token(registration: Registration, scopes: list[str], *, fresh: bool = False) -> str:
    """A bearer token for the scopes, from the cache unless `fresh` or about to expire."""
    key = _token_cache_key(registration, scopes)
    if not fresh:
        cached = cache.get(key)
        if cached:
            return cached
    response = _send(
        "post",
        registration.auth_token_url,
        data={
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": client_assertion(registration),
            "scope": " ".join(scopes),
        },
    )
    _raise_for(response, "The platform refused our token request")
    try:
        body = response.json()
        token = str(body["access_token"])
        lifetime = int(body.get("expires_in", 3600))
    except (ValueError, KeyError, TypeError) as error:
        raise PlatformUnavailable("The platform's token answer is not a valid token.") from error
    cache.set(key, token, max(lifetime - TOKEN_SAFETY_SECONDS, 1))
    return token


def _authorized(
    method: str, registration: Registration, scopes: list[str], url: str, what: str, **kwargs: Any
) -> requests.Response:
    """Call with a bearer token; a 401 gets one fresh token and one more try."""
    if not http.platform_url_ok(url, registration.issuer):
        # Service URLs come from launches and the platform's answers (line item ids, next
        # pages): only the platform's own http(s) addresses are called.
        raise PlatformRefused(f"{what}: the platform gave a URL that is not http(s).", 0)
    headers = dict(kwargs.pop("headers", {}))
    for fresh in (False, True):
        headers["Authorization"] = f"Bearer {access_token(registration, scopes, fresh=fresh)}"
        response = _send(method, url, headers=headers, **kwargs)
        if response.status_code != 401:
            break
    _raise_for(response, what)
    return response


def scores_url(lineitem_url: str) -> str:
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def post_score(registration: Registration, lineitem_url: str, score: dict[str, Any]) -> None:
    try:
        _authorized(
            "post",
            registration,
            [c.SCOPE_SCORE],
            scores_url(lineitem_url),
            "The platform refused the score",
            json=score,
            headers={"Content-Type": SCORE_MEDIA_TYPE},
        )
    except PlatformRefused as error:
        if error.status == 409:
            raise ScoreOutdated(error.message) from error
        raise


def find_or_create_lineitem(
    registration: Registration,
    lineitems_url: str,
    *,
    resource_link_id: str,
    tag: str,
    label: str,
    score_maximum: float,
    can_create: bool,
) -> str:
    """The line item of the resource link with the tag, created when there is none."""
    scopes = [c.SCOPE_LINEITEM if can_create else c.SCOPE_LINEITEM_READONLY]
    response = _authorized(
        "get",
        registration,
        scopes,
        lineitems_url,
        "The platform refused to list line items",
        params={"resource_link_id": resource_link_id, "tag": tag},
        headers={"Accept": LINEITEMS_MEDIA_TYPE},
    )
    try:
        items = response.json()
    except ValueError as error:
        raise PlatformUnavailable("The platform's line items are not JSON.") from error
    for item in items if isinstance(items, list) else []:
        if (
            isinstance(item, dict)
            and item.get("resourceLinkId") == resource_link_id
            and isinstance(item.get("id"), str)
        ):
            return item["id"]
    if not can_create:
        raise PlatformRefused(
            "The platform has no line item for this link and lets us create none.", 404
        )
    created = _authorized(
        "post",
        registration,
        scopes,
        lineitems_url,
        "The platform refused to create a line item",
        json={
            "scoreMaximum": score_maximum,
            "label": label,
            "resourceLinkId": resource_link_id,
            "tag": tag,
        },
        headers={"Content-Type": LINEITEM_MEDIA_TYPE},
    ).json()
    return str(created["id"])


LINK_VALUE = re.compile(r"<([^>]*)>([^,]*)")
REL_PARAM = re.compile(r'rel\s*=\s*"?([^";]+)"?', re.IGNORECASE)


def _next_page(response: requests.Response) -> str | None:
    """The `rel="next"` URL of the Link header, exactly as written (URLs are case-sensitive)."""
    for url, params in LINK_VALUE.findall(response.headers.get("Link", "")):
        for rel in REL_PARAM.findall(params):
            if "next" in rel.lower().split():
                return url.strip()
    return None


def roster_pages(registration: Registration, memberships_url: str) -> Iterator[list[dict]]:
    """NRPS members, page by page, following Link rel="next"."""
    url: str | None = memberships_url
    seen = set()
    while url and url not in seen:
        seen.add(url)
        response = _authorized(
            "get",
            registration,
            [c.SCOPE_NRPS],
            url,
            "The platform refused the roster",
            headers={"Accept": MEMBERSHIPS_MEDIA_TYPE},
        )
        try:
            members = response.json().get("members", [])
        except (ValueError, AttributeError) as error:
            raise PlatformUnavailable("The platform's roster is not JSON.") from error
        yield [member for member in members if isinstance(member, dict)]
        url = _next_page(response)
