"""Outbound HTTP to platforms, under one policy for every call (registration configuration,
JWKS, token endpoint, AGS, NRPS):

- http(s) URLs only, and redirects are never followed (a 3xx is a failure);
- connect and read timeouts, and a limit on the size of the answer;
- no loopback, link-local, private, reserved or multicast address unless
  LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES is on (the local run and the tests, whose platforms are
  on 127.0.0.1). The host is resolved once, when a connection is opened, and the connection
  goes to the address that was checked (no second lookup that DNS rebinding could answer
  differently); the Host header, TLS SNI and certificate check keep the host name;
- with ``LTI_HTTP_PROXY`` (an institution's egress proxy) every call goes through it, the
  platform's host checked the same way before the proxy is asked (the proxy itself, the
  operator's, may be on a private address).

Each thread keeps its connections to a platform alive between calls (a worker posts many
scores). Failures are ``requests`` exceptions; a refusal by this policy is
``PlatformAddressRefused``, which retrying does not fix."""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3
from django.conf import settings
from django.utils.translation import gettext_lazy
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

USER_AGENT = "gcquiz-lti-tool/1.0"
DEFAULT_PORTS = {"http": 80, "https": 443}
UNREACHABLE = gettext_lazy("The platform could not be reached.")
_local = threading.local()
logger = logging.getLogger(__name__)


class PlatformAddressRefused(requests.RequestException):
    """The URL, its address, a redirect or the answer's size is outside the policy."""


class _Refused(Exception):
    # Raised inside urllib3, which wraps every OSError (RequestException is one) into a
    # connection error; this one passes through and becomes PlatformAddressRefused.
    pass


def timeout() -> tuple[float, float]:
    return (settings.LTI_HTTP_CONNECT_TIMEOUT, settings.LTI_HTTP_READ_TIMEOUT)


def address_allowed(address: str) -> bool:
    """Whether the policy lets us connect to the IP address."""
    if settings.LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES:
        return True
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (
        ip.is_loopback
        or ip.is_link_local
        or ip.is_private
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
    )


def checked_address(host: str, port: int) -> str:
    """Resolve the host once; every address it has must be allowed; the first is used."""
    try:
        found = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as error:
        raise _Refused(f"{host} does not resolve") from error
    addresses = [info[4][0] for info in found]
    refused = [address for address in addresses if not address_allowed(address)]
    if not addresses or refused:
        raise _Refused(f"{host} resolves to a refused address {refused}")
    return addresses[0]


class _PinnedMixin:
    _dns_host: str
    port: int

    def _new_conn(self) -> socket.socket:
        name = self._dns_host
        self._dns_host = checked_address(name, self.port)
        try:
            return super()._new_conn()  # type: ignore[misc]
        finally:
            self._dns_host = name  # Host header, SNI and the certificate use the name


class _PinnedHTTPConnection(_PinnedMixin, HTTPConnection):
    pass


class _PinnedHTTPSConnection(_PinnedMixin, HTTPSConnection):
    pass


class _PinnedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _PinnedHTTPConnection


class _PinnedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _PinnedHTTPSConnection


class _PinnedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": _PinnedHTTPPool,
            "https": _PinnedHTTPSPool,
        }

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("proxies"):
            # Through the egress proxy, which resolves the platform's host itself: the host
            # is checked here, before the proxy is asked (the proxy's own rules should refuse
            # internal addresses too, since it looks the name up again).
            parts = urlsplit(request.url or "")
            checked_address(parts.hostname or "", parts.port or DEFAULT_PORTS[parts.scheme])
        return super().send(request, *args, **kwargs)


def _session() -> requests.Session:
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = requests.Session()
        # No proxy from the environment: the address checked must be the one we talk to, or
        # with LTI_HTTP_PROXY the platform's host is checked before the proxy is asked.
        session.trust_env = False
        session.headers["User-Agent"] = USER_AGENT
        adapter = _PinnedAdapter()
        session.mount("http://", adapter)
        session.mount("https://", adapter)
    return session


def _check_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError as error:
        raise PlatformAddressRefused(f"not a URL: {url[:200]!r}") from error
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise PlatformAddressRefused(f"not an http(s) URL: {url[:200]!r}")
    if any(ord(char) < 33 for char in url):
        raise PlatformAddressRefused(f"control characters in {url[:200]!r}")


def _read_limited(response: requests.Response, deadline: float) -> None:
    limit = settings.LTI_HTTP_MAX_RESPONSE_BYTES
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise PlatformAddressRefused(f"the answer is larger than {limit} bytes")
    body = bytearray()
    while True:
        if time.monotonic() > deadline:
            raise requests.Timeout("the answer took longer than the read timeout")
        try:
            # What has arrived, not a whole piece: waiting for 64 KiB let an answer sent a
            # byte at a time, each within the socket's timeout, outlast the deadline.
            chunk = response.raw.read1(64 * 1024, decode_content=True)
        except urllib3.exceptions.ReadTimeoutError as error:
            raise requests.ReadTimeout(str(error)) from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise requests.ConnectionError(str(error)) from error
        if not chunk:
            break
        body += chunk
        if len(body) > limit:
            raise PlatformAddressRefused(f"the answer is larger than {limit} bytes")
    response._content = bytes(body)  # what requests does when it reads the body itself


def request(method: str, url: str, **kwargs: Any) -> requests.Response:
    """One call under the policy; raises a ``requests.RequestException`` on any failure."""
    _check_url(url)
    kwargs.setdefault("timeout", timeout())
    kwargs["allow_redirects"] = False
    kwargs["stream"] = True
    if settings.LTI_HTTP_PROXY:
        kwargs["proxies"] = {"http": settings.LTI_HTTP_PROXY, "https": settings.LTI_HTTP_PROXY}
    try:
        response = _session().request(method, url, **kwargs)
    except _Refused as error:
        raise PlatformAddressRefused(str(error)) from error
    except requests.ConnectionError:
        # A kept-alive connection the platform closed, or a real failure: drop the pool so
        # the caller's retry (or the next call) starts on fresh connections.
        _local.session = None
        raise
    try:
        if response.is_redirect or 300 <= response.status_code < 400:
            raise PlatformAddressRefused(
                f"{url} answered with a redirect (HTTP {response.status_code}), not followed"
            )
        read_timeout = kwargs["timeout"][1] if isinstance(kwargs["timeout"], tuple) else None
        _read_limited(response, time.monotonic() + (read_timeout or 60))
    except requests.RequestException:
        response.close()
        raise
    return response


def get(url: str, **kwargs: Any) -> requests.Response:
    return request("GET", url, **kwargs)


def post(url: str, **kwargs: Any) -> requests.Response:
    return request("POST", url, **kwargs)


def origin(url: str) -> str:
    """scheme://host:port, with the default port spelled out, so equal origins compare equal."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return ""
    if not parts.hostname or port is None:
        return ""
    return f"{parts.scheme}://{parts.hostname.lower()}:{port}"


def platform_url_ok(url: object, issuer: str) -> bool:
    """Whether a URL a platform gave us may be rendered or followed: http(s) with a host,
    and https when DEBUG is off and the platform's issuer is https."""
    if not isinstance(url, str) or len(url) > 2000 or any(ord(char) < 33 for char in url):
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    https_required = not settings.DEBUG and issuer.lower().startswith("https://")
    return parts.scheme == "https" or not https_required
