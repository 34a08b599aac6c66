"""Dynamic registration: closed without the registration key, its form protected by a
signed token instead of a cookie, framed only by the registering platform, never changing
an existing registration, and checking where the configuration came from."""

from __future__ import annotations

import re
import socket
import threading
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client

from lti.models import Deployment, Registration
from tests.http_servers import serve_in_thread

pytestmark = pytest.mark.django_db

KEY = "a-long-random-registration-key"
UNREACHABLE = "The platform could not be reached."


def hidden(html: str, name: str) -> str:
    return unescape(re.search(rf'name="{name}" value="([^"]*)"', html).group(1))


def csp(response, name: str) -> str | None:
    for part in response.get("Content-Security-Policy", "").split(";"):
        found, _, value = part.strip().partition(" ")
        if found == name:
            return value
    return None


def params(server, **extra) -> dict:
    return {
        "openid_configuration": server.url("/.well-known/openid-configuration"),
        "registration_token": "reg-token-xyz",
        **extra,
    }


def register(client: Client, server, key: str = KEY, **extra):
    """The administrator's path: open the page with the key, confirm the form."""
    page = client.get("/lti/register/", params(server, key=key, **extra))
    assert page.status_code == 200, page.content.decode()[:800]
    return client.post(
        "/lti/register/",
        params(server, key=key, form_token=hidden(page.content.decode(), "form_token"), **extra),
    )


@pytest.mark.parametrize(
    ("configured", "debug", "given", "opens"),
    [
        (KEY, False, None, False),  # no key in the URL
        (KEY, False, "wrong-key", False),
        (KEY, False, KEY[:-1], False),
        (KEY, False, KEY + "x", False),
        (KEY, True, None, False),  # DEBUG does not open it when a key is configured
        (KEY, False, KEY, True),
        ("", False, None, False),  # production without a key: closed entirely
        ("", False, "anything", False),
        ("", True, None, True),  # the local run (make run)
    ],
)
def test_registration_is_open_only_with_the_key(
    client, settings, moodle, configured, debug, given, opens
):
    settings.LTI_REGISTRATION_KEY = configured
    settings.DEBUG = debug
    query = params(moodle, **({"key": given} if given is not None else {}))
    page = client.get("/lti/register/", query)
    # A POST straight away (no page first) is refused whatever the key.
    posted = client.post("/lti/register/", query)
    assert posted.status_code == 403
    if opens:
        assert page.status_code == 200
        assert csp(page, "frame-ancestors") == moodle.base  # the registering platform only
        assert register(client, moodle, key=given or "").status_code == 200
        assert Registration.objects.filter(client_id="client-A").exists()
    else:
        html = page.content.decode()
        assert page.status_code == 403
        assert "Registration is closed" in html
        assert "LTI_REGISTRATION_KEY" in html if not configured else "?key=" in html
        assert "lti_tool_config" in html
        assert moodle.base not in csp(page, "frame-ancestors")  # not before the key check
        assert moodle.requests == []  # the platform was never contacted
        assert not Registration.objects.exists()


@pytest.mark.parametrize(
    "tamper",
    [
        {"form_token": ""},
        {"form_token": "forged"},
        {"openid_configuration": "http://127.0.0.1:9/.well-known/openid-configuration"},
        {"registration_token": "another-token"},
    ],
)
def test_the_form_needs_its_signed_token_bound_to_the_configuration(settings, moodle, tamper):
    settings.LTI_REGISTRATION_KEY = KEY
    client = Client(enforce_csrf_checks=True)
    page = client.get("/lti/register/", params(moodle, key=KEY))
    form = params(moodle, key=KEY, form_token=hidden(page.content.decode(), "form_token"))
    response = client.post("/lti/register/", {**form, **tamper})
    assert response.status_code == 403
    assert "registration form has expired" in response.content.decode()
    assert not Registration.objects.exists()


def test_the_form_works_without_any_cookie_and_expires(settings, moodle):
    settings.LTI_REGISTRATION_KEY = KEY
    page = Client().get("/lti/register/", params(moodle, key=KEY))
    form = params(moodle, key=KEY, form_token=hidden(page.content.decode(), "form_token"))
    # Another client with no cookie at all (the dialog's third-party cookie was dropped).
    fresh = Client(enforce_csrf_checks=True)
    settings.LTI_REGISTRATION_FORM_SECONDS = -1
    assert fresh.post("/lti/register/", form).status_code == 403
    settings.LTI_REGISTRATION_FORM_SECONDS = 1800
    done = fresh.post("/lti/register/", form)
    assert done.status_code == 200, done.content.decode()[:800]
    assert csp(done, "frame-ancestors") == moodle.base
    assert "lti/registered" in done.content.decode()
    assert "<script>" not in done.content.decode()


def test_a_repeat_registration_changes_nothing(client, settings, moodle):
    settings.LTI_REGISTRATION_KEY = KEY
    assert register(client, moodle).status_code == 200
    original = Registration.objects.values().get()
    # The same issuer and client id again, now naming an attacker's keyset and endpoints.
    moodle.openid_configuration.update(
        jwks_uri=moodle.url("/attacker/certs"),
        token_endpoint=moodle.url("/attacker/token"),
        authorization_endpoint=moodle.url("/attacker/auth"),
    )
    moodle.registration_reply["https://purl.imsglobal.org/spec/lti-tool-configuration"] = {
        "deployment_id": "8"
    }
    again = register(client, moodle)
    assert again.status_code == 409
    assert "already registered" in again.content.decode()
    assert Registration.objects.values().get() == original
    assert list(Deployment.objects.values_list("deployment_id", flat=True)) == ["7"]


class _Redirecting(BaseHTTPRequestHandler):
    target = ""

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(302)
        self.send_header("Location", self.target)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def redirector(moodle):
    """A server on another port that redirects to the platform's real configuration."""
    handler = type("Handler", (_Redirecting,), {"target": params(moodle)["openid_configuration"]})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    serve_in_thread(httpd)
    yield f"http://127.0.0.1:{httpd.server_address[1]}/.well-known/openid-configuration"
    httpd.shutdown()
    httpd.server_close()


def test_a_redirect_is_not_followed(client, settings, moodle, redirector):
    settings.LTI_REGISTRATION_KEY = KEY
    response = register(client, moodle, openid_configuration=redirector)
    assert response.status_code == 400
    assert UNREACHABLE in response.content.decode()
    assert ("GET", "/.well-known/openid-configuration") not in moodle.requests
    assert not Registration.objects.exists()


@pytest.mark.parametrize(
    "issuer",
    [
        "https://elsewhere.example",
        "http://localhost:{port}",  # same machine, another origin
        "https://127.0.0.1:{port}",  # another scheme
        "http://127.0.0.1:1",  # another port
    ],
)
def test_the_issuer_must_be_the_origin_the_configuration_came_from(
    client, settings, moodle, issuer
):
    settings.LTI_REGISTRATION_KEY = KEY
    moodle.openid_configuration["issuer"] = issuer.format(port=moodle.httpd.server_address[1])
    response = register(client, moodle)
    assert response.status_code == 400
    assert "issuer is not the site that served it" in response.content.decode()
    assert moodle.registrations_received == []
    assert not Registration.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/.well-known/openid-configuration",
        "http://localhost:{port}/.well-known/openid-configuration",
        "http://[::1]:{port}/.well-known/openid-configuration",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/.well-known/openid-configuration",
        "http://0.0.0.0:{port}/.well-known/openid-configuration",
        "http://[::ffff:127.0.0.1]:{port}/.well-known/openid-configuration",
        "http://2130706433:{port}/.well-known/openid-configuration",  # 127.0.0.1 as a number
    ],
)
@pytest.mark.usefixtures("outbound_policy")
def test_private_addresses_are_refused(client, settings, moodle, url):
    settings.LTI_REGISTRATION_KEY = KEY
    target = url.format(port=moodle.httpd.server_address[1])
    settings.LTI_HTTP_CONNECT_TIMEOUT = 0.5
    response = register(client, moodle, openid_configuration=target)
    assert response.status_code == 400
    assert UNREACHABLE in response.content.decode()
    assert moodle.requests == []
    assert not Registration.objects.exists()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _NotHttp:
    """A TCP service that answers with something that is not HTTP (as SSH or Redis would)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n-ERR unknown command\r\n")


def test_failures_read_the_same_whatever_is_behind_the_port(client, settings, moodle):
    """No port scanner: a closed port, a service that is not HTTP, an HTTP error and an
    answer that is not JSON all give one text."""
    settings.LTI_REGISTRATION_KEY = KEY
    not_http = _NotHttp()
    moodle.openid_configuration = None  # the platform's configuration answers "null"
    targets = [
        f"http://127.0.0.1:{_closed_port()}/.well-known/openid-configuration",
        f"http://127.0.0.1:{not_http.port}/.well-known/openid-configuration",
        moodle.url("/no-such-page"),  # HTTP 404
        moodle.url("/.well-known/openid-configuration"),  # JSON, not an object
    ]
    texts = set()
    for target in targets:
        response = register(client, moodle, openid_configuration=target)
        assert response.status_code == 400
        main = response.content.decode().split("<main", 1)[1]
        texts.add(re.sub(r"\s+", " ", main))
    not_http.sock.close()
    assert len(texts) == 1
    assert UNREACHABLE in texts.pop()


@pytest.mark.parametrize("url", ["http://[x", "http://[::1", "https://host:99999999/x"])
def test_a_configuration_address_that_cannot_be_parsed_is_a_400(client, settings, url):
    """The page named the platform's origin as the one that may frame it: an address Python
    cannot split (an unclosed IPv6 bracket) was a ValueError there, a 500. Now the page says
    what is wrong before anything else."""
    settings.LTI_REGISTRATION_KEY = KEY
    query = {"key": KEY, "openid_configuration": url, "registration_token": "t"}
    for response in (
        client.get("/lti/register/", query),
        client.post("/lti/register/", {**query, "form_token": "forged"}),
    ):
        assert response.status_code == 400, response.content.decode()[:300]
        assert "openid_configuration must be an http(s) URL" in response.content.decode()
    assert not Registration.objects.exists()
