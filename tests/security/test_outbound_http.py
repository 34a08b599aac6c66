"""One outbound policy for every call to a platform: http(s) only, no redirects, a size
limit, no loopback/link-local/private addresses unless allowed, and the connection made to
the address that was checked (no second DNS lookup)."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
import requests

from lti import ags, http
from lti import claims as c
from lti.errors import LaunchError
from lti.models import Registration
from lti.platform_keys import forget_keyset, platform_key
from tests.http_servers import serve_in_thread

pytestmark = pytest.mark.django_db


class Recorder:
    """A platform on loopback that logs every request (with its Host header)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                recorder.requests.append((self.command, self.path, self.headers.get("Host", "")))
                if self.path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", "/jwks")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif self.path == "/big-chunked":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b" " * 4096
                    for _ in range(16):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    body = json.dumps({"keys": [], "pad": "x" * 100}).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            do_POST = do_GET  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        serve_in_thread(self.httpd)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def recorder():
    server = Recorder()
    yield server
    server.stop()


def registration_at(url: str) -> Registration:
    return Registration.objects.create(
        issuer=url,
        client_id="client-123",
        auth_login_url=url + "/auth",
        auth_token_url=url + "/token",
        keyset_url=url + "/jwks",
    )


def _jwks(url: str) -> None:
    forget_keyset(url)
    platform_key(url, "kid-1")


def _token(url: str) -> None:
    ags.access_token(registration_at(url), [c.SCOPE_SCORE], fresh=True)


def _score(url: str) -> None:
    ags.post_score(registration_at(url), url + "/lineitems/1", {"scoreGiven": 1})


def _lineitems(url: str) -> None:
    ags.find_or_create_lineitem(
        registration_at(url),
        url + "/lineitems",
        resource_link_id="rl-1",
        tag="quiz",
        label="Quiz",
        score_maximum=8,
        can_create=True,
    )


def _roster(url: str) -> None:
    list(ags.roster_pages(registration_at(url), url + "/memberships"))


CALLS = [_jwks, _token, _score, _lineitems, _roster]
FAILURES = (LaunchError, ags.PlatformError)


@pytest.mark.parametrize("call", CALLS, ids=lambda call: call.__name__)
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
@pytest.mark.usefixtures("outbound_policy")
def test_every_platform_call_refuses_loopback(recorder, call, host):
    with pytest.raises(FAILURES) as raised:
        call(recorder.url("", host=host))
    assert "could not be reached" in str(raised.value)
    assert recorder.requests == []


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.1.2.3",
        "::1",
        "169.254.169.254",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "::ffff:127.0.0.1",
        "fe80::1",
        "fc00::1",
    ],
)
@pytest.mark.usefixtures("outbound_policy")
def test_address_rule(address):
    assert http.address_allowed(address) is False


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
@pytest.mark.usefixtures("outbound_policy")
def test_public_addresses_are_allowed(address):
    assert http.address_allowed(address) is True


def test_the_local_run_setting_allows_loopback(settings):
    settings.LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES = True
    assert http.address_allowed("127.0.0.1") is True


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_INFO",
        "ftp://lms.example.edu/",
        "javascript:1",
    ],
)
def test_only_http_urls_are_called(url):
    with pytest.raises(http.PlatformAddressRefused):
        http.get(url)


def test_redirects_are_not_followed(recorder):
    with pytest.raises(FAILURES):
        _jwks(recorder.url("/redirect"))
    assert [path for _, path, _ in recorder.requests] == ["/redirect"]


@pytest.mark.parametrize("path", ["/big-chunked", "/jwks"])
def test_answers_over_the_size_limit_are_refused(settings, recorder, path):
    settings.LTI_HTTP_MAX_RESPONSE_BYTES = 64
    with pytest.raises(http.PlatformAddressRefused):
        http.get(recorder.url(path))


@pytest.mark.usefixtures("outbound_policy")
def test_the_connection_goes_to_the_checked_address(settings, recorder, monkeypatch):
    """DNS rebinding: the name resolves to a public address once, then to 127.0.0.1. The
    connection must go to the address that was checked, never resolving the name again."""
    real = socket.getaddrinfo
    answers = []

    def rebinding(host, port, *args, **kwargs):
        if host != "platform.test":
            return real(host, port, *args, **kwargs)
        address = "93.184.216.34" if not answers else "127.0.0.1"
        answers.append(address)
        return real(address, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    settings.LTI_HTTP_CONNECT_TIMEOUT = 0.3
    with pytest.raises(ags.PlatformError):  # the public address is not reachable from here
        _score(recorder.url("", host="platform.test"))
    assert recorder.requests == []
    assert answers == ["93.184.216.34"] * len(answers)


@pytest.mark.usefixtures("settings")
def test_the_pinned_connection_keeps_the_host_name(recorder, monkeypatch):
    real = socket.getaddrinfo
    lookups = []

    def resolver(host, port, *args, **kwargs):
        if host == "platform.test":
            lookups.append(host)
            host = "127.0.0.1"
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    response = http.get(recorder.url("/jwks", host="platform.test"))
    assert response.json()["keys"] == []
    assert recorder.requests == [("GET", "/jwks", f"platform.test:{recorder.port}")]
    assert lookups == ["platform.test"]


class ForwardProxy:
    """An HTTP forward proxy on loopback, as an institution's egress proxy: it takes requests
    in absolute form, resolves the host with its own resolver (here a table, so that a name
    the tool sees as public can lead to the test's platform on loopback), forwards them and
    logs each request line."""

    def __init__(self, hosts: dict[str, str]) -> None:
        import http.client

        self.requests: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                proxy.requests.append(f"{self.command} {self.path}")
                target = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                upstream = http.client.HTTPConnection(
                    hosts.get(target.hostname, target.hostname), target.port, timeout=5
                )
                headers = {name: value for name, value in self.headers.items()}
                upstream.request(self.command, target.path or "/", body=body, headers=headers)
                answer = upstream.getresponse()
                content = answer.read()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
                upstream.close()

            do_POST = do_GET  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        serve_in_thread(self.httpd)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def egress_proxy(settings):
    proxy = ForwardProxy({"platform.test": "127.0.0.1"})
    settings.LTI_HTTP_PROXY = proxy.url
    yield proxy
    proxy.stop()


@pytest.mark.usefixtures("outbound_policy")
def test_with_an_egress_proxy_platform_calls_go_through_it(recorder, egress_proxy, monkeypatch):
    """The proxy is the operator's (on a private address, allowed); the platform's host is
    still checked by the tool, and reached through the proxy."""
    real = socket.getaddrinfo

    def public(host, port, *args, **kwargs):  # the tool's resolver sees a public platform
        return real("93.184.216.34" if host == "platform.test" else host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", public)
    url = recorder.url("/jwks", host="platform.test")
    assert http.get(url).json()["keys"] == []
    http.post(url, json={"scoreGiven": 1})
    assert egress_proxy.requests == [f"GET {url}", f"POST {url}"]
    host = f"platform.test:{recorder.port}"
    assert recorder.requests == [("GET", "/jwks", host), ("POST", "/jwks", host)]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
@pytest.mark.usefixtures("outbound_policy")
def test_through_an_egress_proxy_a_refused_address_is_refused_before_the_proxy_is_asked(
    recorder, egress_proxy, host
):
    with pytest.raises(http.PlatformAddressRefused):
        http.get(recorder.url("/jwks", host=host))
    assert egress_proxy.requests == []
    assert recorder.requests == []


def test_an_answer_trickled_byte_by_byte_ends_at_the_read_timeout(settings):
    """Each byte came within the read timeout, so the socket never timed out, and the answer
    was read in 64 KiB pieces, each waited for whole: a platform sending a byte every 0.4 s
    held the worker for as long as it liked. The deadline holds for the whole body."""
    settings.LTI_HTTP_READ_TIMEOUT = 1.0
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        connection, _ = listener.accept()
        connection.recv(65536)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n"
        try:
            connection.sendall(head)
            for _ in range(30):
                time.sleep(0.4)
                connection.sendall(b" ")
        except OSError:
            pass  # the client hung up, as it should
        connection.close()

    threading.Thread(target=serve, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(requests.Timeout):
        http.get(f"http://127.0.0.1:{listener.getsockname()[1]}/jwks")
    assert time.monotonic() - started < 4
    listener.close()
