"""LTI Advantage service calls through pylti1p3's service classes: OAuth2 client-credentials
tokens (the library's signed JWT assertion, cached here until shortly before they expire),
Assignment and Grade Services 2.0 scores and line items (``AssignmentsGradesService``) and
Names and Role Provisioning Services 2.0 rosters (``NamesRolesProvisioningService``).

What the library leaves open is ours, through its extension points (decision 8): its
``ServiceConnector`` gets a requests session whose every call goes through lti.http (the
outbound policy, connect and read timeouts, no redirects, a size limit), tokens cached in
the cache by the platform's ``expires_in`` under a key that names the registration (several
may share an issuer), one fresh token and one more try on a 401, only the platform's own
http(s) service URLs called, and failures sorted for the caller: ``PlatformUnavailable``
(5xx, 429, timeouts, dropped connections: try again later, with the platform's Retry-After
when it gives one), ``PlatformRefused`` (a 4xx that retrying will not fix, with the
platform's reason) and ``ScoreOutdated`` (Moodle's 409: it already holds a newer score)."""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import math
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import requests
from django.core.cache import cache
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException, LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector, TServiceConnectorResponse
from pylti1p3.utils import add_param_to_url

from . import claims as c
from . import http
from .models import Registration
from .tool_conf import ToolRegistration

logger = logging.getLogger(__name__)
TOKEN_SAFETY_SECONDS = 60
DEFAULT_TOKEN_SECONDS = 3600
MAX_TOKEN_SECONDS = 3600
# Pages of one listing (line items, a roster): room for a roster of 10,000 at 10 a page.
MAX_PAGES = 1000
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


class PolicySession(requests.Session):
    """The requests session pylti1p3's connector calls (``get``, ``post``), every call of it
    made by lti.http under the outbound policy and its timeouts, its failures sorted."""

    def request(self, method: str | bytes, url: str | bytes, **kwargs: Any) -> Any:  # type: ignore[override]
        kwargs.pop("allow_redirects", None)  # never followed (lti.http)
        return _send(str(method).lower(), str(url), **kwargs)


class ToolServiceConnector(ServiceConnector):
    """pylti1p3's service connector over our registration, with what it leaves open: the
    session above, tokens cached by ``expires_in`` under a key that names the registration
    (the library's names the issuer only), a 401 answered with one fresh token and one more
    try, the platform's own http(s) URLs only, failures sorted (PlatformError) with ``what``
    was being done, and the Link header's next page read as LTI allows it."""

    def __init__(self, registration: Registration) -> None:
        super().__init__(ToolRegistration(registration), PolicySession())
        self.model = registration
        self.what = "The platform refused the call"
        # The call succeeds on any 2xx whatever its body (a score: only its status matters).
        self.any_body = False
        self._fresh = False

    def _scope_key(self, scopes: Any) -> str:
        model = self.model
        identity = "\n".join(
            [str(model.pk), model.auth_token_url, model.client_id, *sorted(scopes)]
        )
        return f"lti:token:{hashlib.sha256(identity.encode()).hexdigest()}"

    def _get_cached_access_token(self, scope_key: str) -> str | None:
        return None if self._fresh else cache.get(scope_key)

    def _cache_access_token(self, scope_key: str, access_token: str, expires_in: float) -> None:
        if not isinstance(access_token, str) or not access_token:
            raise PlatformUnavailable("The platform's token answer is not a valid token.")
        try:
            claimed = float(expires_in) if expires_in else DEFAULT_TOKEN_SECONDS
        except (TypeError, ValueError, OverflowError) as error:
            raise PlatformUnavailable(
                "The platform's token answer is not a valid token."
            ) from error
        if math.isnan(claimed):
            raise PlatformUnavailable("The platform's token answer is not a valid token.")
        # A lifetime of 1e20 or Infinity is no reason to fail: the cache takes no such timeout.
        lifetime = int(min(max(claimed, 1.0), MAX_TOKEN_SECONDS))
        cache.set(scope_key, access_token, max(lifetime - TOKEN_SAFETY_SECONDS, 1))

    def get_access_token(self, scopes: Sequence[str]) -> str:
        try:
            return super().get_access_token(scopes)
        except LtiServiceException as error:
            _raise_for(error.response, "The platform refused our token request")
            raise PlatformUnavailable(
                "The platform's token answer is not a valid token."
            ) from error
        except (KeyError, TypeError, ValueError) as error:
            raise PlatformUnavailable(
                "The platform's token answer is not a valid token."
            ) from error

    def make_service_request(
        self, scopes: Sequence[str], url: str, **kwargs: Any
    ) -> TServiceConnectorResponse:
        if not http.platform_url_ok(url, self.model.issuer):
            # Service URLs come from launches and the platform's answers (line item ids,
            # next pages): only the platform's own http(s) addresses are called.
            raise PlatformRefused(f"{self.what}: the platform gave a URL that is not http(s).", 0)
        kwargs["case_insensitive_headers"] = True
        for fresh in (False, True):
            self._fresh = fresh
            try:
                answer = super().make_service_request(scopes, url, **kwargs)
            except LtiServiceException as error:
                if error.response.status_code == 401 and not fresh:
                    continue
                _raise_for(error.response, self.what)
                raise  # a 2xx the library refused: not ours to sort
            except ValueError as error:  # a 2xx whose body is not JSON (redirects are refused)
                if self.any_body:
                    return {"headers": {}, "body": None, "next_page_url": None}
                raise PlatformUnavailable(f"{self.what}: the answer is not JSON.") from error
            finally:
                self._fresh = False
            answer["next_page_url"] = _next_page(answer["headers"].get("Link", ""))
            return answer
        raise AssertionError("unreachable")  # the second pass returns or raises


def access_token(registration: Registration, scopes: list[str], *, fresh: bool = False) -> str:
    """A bearer token for the scopes, from the cache unless `fresh` or about to expire."""
    connector = ToolServiceConnector(registration)
    connector._fresh = fresh
    return connector.get_access_token(scopes)


class Score(Grade):
    """A score the grade outbox has built whole (gradesync.services.score_payload), as the
    library's grade."""

    def __init__(self, score: dict[str, Any]) -> None:
        super().__init__()
        self._score = score

    def get_value(self) -> str:
        return json.dumps(self._score)


def post_score(registration: Registration, lineitem_url: str, score: dict[str, Any]) -> None:
    connector = ToolServiceConnector(registration)
    connector.what = "The platform refused the score"
    connector.any_body = True
    service = AssignmentsGradesService(connector, {"scope": [c.SCOPE_SCORE]})
    try:
        service.put_grade(Score(score), LineItem({"id": lineitem_url}))
    except PlatformRefused as error:
        if error.status == 409:
            raise ScoreOutdated(error.message) from error
        raise


def scores_url(lineitem_url: str) -> str:
    return AssignmentsGradesService._add_url_path_ending(lineitem_url, "scores")


class _LineItems(AssignmentsGradesService):
    """The library's AGS service, listing only the line items of one resource link with
    one tag (the query LTI AGS defines), all pages of them."""

    def __init__(self, connector: ToolServiceConnector, data: Any, query: dict[str, str]):
        super().__init__(connector, data)
        self._query = query

    def get_lineitems(self) -> Any:
        url = self._service_data["lineitems"]
        for name, value in self._query.items():
            url = add_param_to_url(url, name, value)
        connector = self._service_connector

        def fetch(page_url: str) -> TServiceConnectorResponse:
            return connector.make_service_request(
                self._service_data["scope"], page_url, accept=LINEITEMS_MEDIA_TYPE
            )

        for body in _pages(fetch, url, "line items"):
            if not isinstance(body, list):
                raise PlatformUnavailable("The platform's line items are not a list.")
            yield from body


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
    connector = ToolServiceConnector(registration)
    connector.what = "The platform refused to list line items"
    service = _LineItems(
        connector,
        {
            "scope": [c.SCOPE_LINEITEM if can_create else c.SCOPE_LINEITEM_READONLY],
            "lineitems": lineitems_url,
        },
        {"resource_link_id": resource_link_id, "tag": tag},
    )
    mine: Callable[[Any], bool] = lambda item: (  # noqa: E731
        isinstance(item, dict)
        and item.get("resourceLinkId") == resource_link_id
        and isinstance(item.get("id"), str)
    )
    found = service.find_lineitem_satisfying(mine)
    if found is not None:
        return _on_the_platforms_host(str(found.get_id()), lineitems_url)
    if not can_create:
        raise PlatformRefused(
            "The platform has no line item for this link and lets us create none.", 404
        )
    connector.what = "The platform refused to create a line item"
    new = LineItem().set_score_maximum(float(score_maximum)).set_label(label)
    new.set_resource_link_id(resource_link_id).set_tag(tag)
    try:
        created = service.create_lineitem(new).get_id()
    except LtiException as error:  # an answer that is not a line item
        raise PlatformUnavailable("The platform's new line item is not JSON.") from error
    if not isinstance(created, str) or not created:
        raise PlatformUnavailable("The platform's new line item has no id.")
    return _on_the_platforms_host(created, lineitems_url)


def _on_the_platforms_host(lineitem_url: str, lineitems_url: str) -> str:
    """A line item's address from the platform's answer, where the scores and the token will
    go: on the host of its line items (the address from the signed launch), or refused."""
    if http.origin(lineitem_url) != http.origin(lineitems_url):
        raise PlatformUnavailable("The platform's line item is on another host.")
    return lineitem_url


LINK_VALUE = re.compile(r"<([^>]*)>([^,]*)")
REL_PARAM = re.compile(r'rel\s*=\s*"?([^";]+)"?', re.IGNORECASE)


def _next_page(link_header: str) -> str | None:
    """The `rel="next"` URL of the Link header, exactly as written (URLs are case-sensitive)."""
    for url, params in LINK_VALUE.findall(link_header):
        for rel in REL_PARAM.findall(params):
            if "next" in rel.lower().split():
                return url.strip()
    return None


def _pages(fetch: Callable[[str], TServiceConnectorResponse], url: str, what: str) -> Iterator[Any]:
    """The body of each page of a listing from ``url`` on, following Link rel="next" (the
    library's own paging never stops). A page named twice, or more than MAX_PAGES of them,
    is a platform at fault, to try again later: PlatformUnavailable."""
    seen: set[str] = set()
    next_url: str | None = url
    while next_url:
        if next_url in seen or len(seen) >= MAX_PAGES:
            raise PlatformUnavailable(f"The platform's pages of {what} do not end.")
        if http.origin(next_url) != http.origin(url):
            # The token is the platform's, for its own API: never carried to another host.
            raise PlatformUnavailable(f"The platform's pages of {what} go to another host.")
        seen.add(next_url)
        page = fetch(next_url)
        yield page["body"]
        next_url = page["next_page_url"]


def roster_pages(registration: Registration, memberships_url: str) -> Iterator[list[dict]]:
    """NRPS members, page by page, following Link rel="next"."""
    connector = ToolServiceConnector(registration)
    connector.what = "The platform refused the roster"
    service = NamesRolesProvisioningService(connector, {"context_memberships_url": memberships_url})
    for body in _pages(service.get_nrps_data, memberships_url, "the roster"):
        members = body.get("members") if isinstance(body, dict) else None
        if not isinstance(members, list):
            # Read as an empty roster it would make every member of the course leave.
            raise PlatformUnavailable("The platform's roster has no list of members.")
        yield [member for member in members if isinstance(member, dict)]
