"""An LMS for the tests: the independent `lti1p3platform` library plays the platform
(OIDC auth endpoint, signed launches, deep-linking verification), and a real HTTP server
on loopback serves what a platform serves over HTTP (its JWKS, its OpenID configuration,
its dynamic-registration endpoint)."""

from __future__ import annotations

import html
import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.test import Client
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration as PlatformRegistration
from lti1p3platform.request import Request

from lti.models import Deployment, Registration

from .http_servers import serve_in_thread

TOOL = "http://testserver"
LAUNCH_URL = f"{TOOL}/lti/launch/"
LOGIN_URL = f"{TOOL}/lti/login/"
ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#"


def new_rsa_pem() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@dataclass
class PlatformServer:
    """What the platform serves over HTTP, on 127.0.0.1, with a log of what it was asked."""

    jwks: dict = field(default_factory=lambda: {"keys": []})
    openid_configuration: dict | bytes = field(default_factory=dict)
    registration_token: str = ""
    registration_reply: dict = field(default_factory=dict)
    requests: list = field(default_factory=list)
    registrations_received: list = field(default_factory=list)
    # The deep-linking responses posted to /deep-link-return (their JWT).
    deep_links_received: list = field(default_factory=list)
    # The auth endpoint, for browser tests: query params -> {"id_token", "state"} and the
    # URL to post them to.
    authorize: Any = None
    launch_url: str = ""

    def __post_init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any) -> None:
                # bytes: a body sent as it is (JSON no encoder writes, or no JSON at all)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _html(self, html: str) -> None:
                data = html.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                server.requests.append(("GET", self.path))
                path, _, query = self.path.partition("?")
                params = {key: values[0] for key, values in parse_qs(query).items()}
                if path == "/course-page":
                    self._html(COURSE_PAGE.replace("TOOL_LOGIN_URL", params["tool"]))
                elif path == "/registration-dialog":
                    self._html(REGISTRATION_DIALOG.replace("TOOL_URL", html.escape(params["tool"])))
                elif path == "/auth" and server.authorize:
                    signed = server.authorize(params)
                    self._html(
                        AUTO_POST.replace("LAUNCH_URL", server.launch_url)
                        .replace("ID_TOKEN", signed["id_token"])
                        .replace("STATE", signed["state"])
                    )
                elif self.path == "/jwks":
                    self._send(200, server.jwks)
                elif self.path == "/.well-known/openid-configuration":
                    self._send(200, server.openid_configuration)
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                server.requests.append(("POST", self.path))
                length = int(self.headers.get("Content-Length") or 0)
                if self.path == "/deep-link-return":
                    form = parse_qs(self.rfile.read(length).decode())
                    server.deep_links_received.append(form.get("JWT", [""])[0])
                    self._html(DEEP_LINK_RETURN)
                    return
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/register":
                    self._send(404, {"error": "not found"})
                elif self.headers.get("Authorization") != f"Bearer {server.registration_token}":
                    self._send(401, {"error": "invalid registration token"})
                else:
                    server.registrations_received.append(body)
                    self._send(200, {**body, **server.registration_reply})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = serve_in_thread(self.httpd)

    @property
    def base(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# The LMS course page: the LTI platform-storage side of the postMessage protocol
# (lti.put_data / lti.get_data, logging what it was asked), listening before the tool's
# iframe exists, as a platform's page does; then the tool in an iframe.
COURSE_PAGE = """<!doctype html><html lang="en"><head><title>Course</title></head><body>
<h1>Deep Learning Systems</h1>
<script>
  window.storageLog = [];
  var stored = {};
  window.addEventListener("message", function (event) {
    var data = event.data || {};
    if (data.subject === "lti.put_data") {
      stored[event.origin + "|" + data.key] = data.value;
      window.storageLog.push(["put", event.origin, data.key]);
      event.source.postMessage({subject: "lti.put_data.response", message_id: data.message_id,
                                key: data.key, value: data.value}, event.origin);
    } else if (data.subject === "lti.get_data") {
      window.storageLog.push(["get", event.origin, data.key]);
      event.source.postMessage({subject: "lti.get_data.response", message_id: data.message_id,
                                key: data.key, value: stored[event.origin + "|" + data.key]},
                               event.origin);
    }
  });
</script>
<p id="content-returned" hidden>The activity was added to the course.</p>
<script>
  window.contentReturned = function () {
    document.getElementById("content-returned").hidden = false;
  };
</script>
<iframe name="tool" title="Checkpointing Lab" src="TOOL_LOGIN_URL" width="900" height="800"
  allow="clipboard-write"></iframe>
</body></html>"""

# The platform's dynamic-registration dialog: the tool's registration page in an iframe,
# and the close message it must post when it is done (LTI DR §3.6).
REGISTRATION_DIALOG = """<!doctype html><html lang="en"><head><title>Register a tool</title></head>
<body><h1>Register a tool</h1>
<script>
  window.closedBy = null;
  window.addEventListener("message", function (event) {
    var data = event.data || {};
    if (data.subject === "org.imsglobal.lti.close") { window.closedBy = event.origin; }
  });
</script>
<iframe title="Tool registration" src="TOOL_URL" width="800" height="500"></iframe>
</body></html>"""

# The platform's deep-linking return page, as Moodle's contentitem_return.php: it tells the
# page that framed it (the course page's dialog) that the content came back; loaded in a
# window of its own, it has no parent to tell.
DEEP_LINK_RETURN = """<!doctype html><html lang="en"><head><title>Content added</title></head>
<body><p>Content received.</p>
<script>if (window.parent !== window) { window.parent.contentReturned(); }</script></body></html>"""

AUTO_POST = """<!doctype html><html lang="en"><head><title>Launching</title></head><body>
<form method="post" action="LAUNCH_URL"><input type="hidden" name="id_token" value="ID_TOKEN">
<input type="hidden" name="state" value="STATE"><button>Continue</button></form>
<script>document.forms[0].submit();</script></body></html>"""


class _PlatformConfig(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs: Any) -> None:
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs: Any) -> PlatformRegistration:
        return self._registration


class _Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> str:
        return url


class _AuthRequest(Request):
    """The browser's request to the platform's auth endpoint (the tool's redirect)."""

    def build_metadata(self, request: dict) -> dict:
        return {
            "method": "GET",
            "form_data": {},
            "get_data": request,
            "headers": {},
            "content_type": None,
            "path": "/auth",
            "json": None,
        }


class _Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data: dict, **kwargs: Any) -> dict:
        return launch_data


class Platform:
    """One LMS registration of the tool, e.g. a Moodle site with deployment "1"."""

    def __init__(
        self,
        server: PlatformServer,
        *,
        issuer: str | None = None,
        client_id: str = "client-123",
        deployment_id: str = "1",
        tool: str = TOOL,
    ) -> None:
        self.server = server
        self.launch_url = f"{tool}/lti/launch/"
        self.login_url = f"{tool}/lti/login/"
        self.issuer = issuer or server.base
        self.client_id = client_id
        self.deployment_id = deployment_id
        self.private_pem, self.public_pem = new_rsa_pem()
        self.registration = (
            PlatformRegistration()
            .set_iss(self.issuer)
            .set_client_id(client_id)
            .set_deployment_id(deployment_id)
            .set_oidc_login_url(self.login_url)
            .set_launch_url(self.launch_url)
            .set_deeplink_launch_url(self.launch_url)
            .set_platform_public_key(self.public_pem)
            .set_platform_private_key(self.private_pem)
        )
        self.config = _PlatformConfig(registration=self.registration)
        self.publish_keys()

    @property
    def kid(self) -> str:
        return self.registration.get_kid()

    def publish_keys(self, *extra_public_pems: str) -> None:
        keys = [PlatformRegistration.get_jwk(pem) for pem in (self.public_pem, *extra_public_pems)]
        self.server.jwks = {"keys": keys}

    def rotate_key(self) -> None:
        """The platform's own key rotation: a new key signs and is published."""
        self.private_pem, self.public_pem = new_rsa_pem()
        self.registration.set_platform_public_key(self.public_pem)
        self.registration.set_platform_private_key(self.private_pem)
        self.publish_keys()

    def register_in_tool(self, *, deployment_active: bool = True) -> Registration:
        registration = Registration.objects.create(
            issuer=self.issuer,
            client_id=self.client_id,
            auth_login_url=self.server.url("/auth"),
            auth_token_url=self.server.url("/token"),
            keyset_url=self.server.url("/jwks"),
        )
        Deployment.objects.create(
            registration=registration,
            deployment_id=self.deployment_id,
            is_active=deployment_active,
        )
        return registration

    def login_initiation(self, *, user_id: str, message_hint: str = "hint") -> dict[str, str]:
        login = _Login(request=None, platform_config=self.config)
        login.set_lti_message_hint(hint=message_hint)
        url = login.initiate_login(user_id)
        return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}

    def authorize(
        self,
        auth_params: dict[str, str],
        *,
        user_id: str,
        roles: list[str],
        resource_link_id: str | None = "rl-1",
        context_id: str | None = "course-1",
        full_name: str | None = "Ada Lovelace",
        email: str | None = "ada@example.edu",
        locale: str | None = None,
        custom: dict | None = None,
        deep_link: bool = False,
        extra_claims: dict | None = None,
    ) -> dict[str, str]:
        """The platform's auth endpoint: checks the tool's redirect, signs the launch."""
        launch = _Launch(_AuthRequest(auth_params), self.config)
        launch.set_user_data(user_id, roles, full_name=full_name, email_address=email)
        if resource_link_id and not deep_link:
            launch.set_resource_link_claim(resource_link_id, title="Checkpointing quiz")
        if context_id:
            launch.set_launch_context_claim(
                context_id, context_title="Deep Learning Systems", context_label="DLS"
            )
        if custom:
            launch.set_custom_parameters_claim(custom)
        if deep_link:
            launch.set_dl(
                self.server.url("/deep-link-return"),
                title="Add activity",
                accept_types={"ltiResourceLink"},
                extra_data="opaque-data",
            )
        claims = dict(extra_claims or {})
        if locale:
            claims["https://purl.imsglobal.org/spec/lti/claim/launch_presentation"] = {
                "locale": locale,
                "document_target": "iframe",
            }
        if claims:
            launch.set_extra_claims(claims)
        data = launch.lti_launch()
        assert data["launch_url"] == self.launch_url
        return {"id_token": data["id_token"], "state": data["state"]}

    def verify_deep_linking_response(self, signed: str, tool_jwks: dict) -> list[dict]:
        self.registration.set_tool_key_set(tool_jwks)
        return self.config.validate_deeplinking_resp({"JWT": signed})

    def sign(
        self,
        payload: dict,
        *,
        headers: dict | None = None,
        key: str | None = None,
        algorithm: str = "RS256",
    ) -> str:
        """A token of our own making, for launches the library would refuse to build."""
        headers = {"kid": self.kid} if headers is None else headers
        return jwt.encode(payload, key or self.private_pem, algorithm=algorithm, headers=headers)


def start_login(
    client: Client,
    platform: Platform,
    *,
    user_id: str = "user-1",
    method: str = "get",
    extra: dict | None = None,
) -> dict[str, str]:
    """OIDC login initiation at the tool; returns the params of its redirect to the platform."""
    params = {**platform.login_initiation(user_id=user_id), **(extra or {})}
    response = getattr(client, method)("/lti/login/", params)
    assert response.status_code == 302, response.content.decode()[:500]
    location = urlsplit(response["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == platform.server.url("/auth")
    return {key: values[0] for key, values in parse_qs(location.query).items()}


def launch(
    client: Client,
    platform: Platform,
    *,
    user_id: str = "user-1",
    roles: list[str] | None = None,
    login_method: str = "get",
    **claims: Any,
):
    auth_params = start_login(client, platform, user_id=user_id, method=login_method)
    signed = platform.authorize(
        auth_params,
        user_id=user_id,
        roles=[ROLE + "Learner"] if roles is None else roles,
        **claims,
    )
    return client.post("/lti/launch/", signed)


def launch_by_platform_storage(
    client: Client,
    platform: Platform,
    *,
    user_id: str = "user-1",
    roles: list[str] | None = None,
    **claims: Any,
):
    """A launch whose state is proven by the LMS's platform storage, not by a cookie: what a
    browser that blocks the tool's cookie in the LMS page sends (the storage's postMessage
    round trip, which the page's script makes, done here by reading the page)."""
    params = {**platform.login_initiation(user_id=user_id), "lti_storage_target": "_parent"}
    page = client.get("/lti/login/", params)
    assert page.status_code == 200, page.content.decode()[:500]
    storage = page.context["storage"]
    location = urlsplit(page.context["auth_url"])
    auth_params = {key: values[0] for key, values in parse_qs(location.query).items()}
    signed = platform.authorize(
        auth_params,
        user_id=user_id,
        roles=[ROLE + "Learner"] if roles is None else roles,
        **claims,
    )
    client.cookies.clear()  # the browser kept none
    return client.post("/lti/launch/", {**signed, "lti_storage_value": storage["value"]})


def standard_claims(platform: Platform, auth_params: dict[str, str], **overrides: Any) -> dict:
    """The claims of a valid resource-link launch answering the tool's login."""
    now = int(time.time())
    claims = {
        "iss": platform.issuer,
        "aud": platform.client_id,
        "sub": "user-1",
        "iat": now,
        "exp": now + 60,
        "nonce": auth_params["nonce"],
        "https://purl.imsglobal.org/spec/lti/claim/message_type": "LtiResourceLinkRequest",
        "https://purl.imsglobal.org/spec/lti/claim/version": "1.3.0",
        "https://purl.imsglobal.org/spec/lti/claim/deployment_id": platform.deployment_id,
        "https://purl.imsglobal.org/spec/lti/claim/target_link_uri": platform.launch_url,
        "https://purl.imsglobal.org/spec/lti/claim/resource_link": {"id": "rl-1"},
        "https://purl.imsglobal.org/spec/lti/claim/roles": [ROLE + "Learner"],
        "https://purl.imsglobal.org/spec/lti/claim/context": {"id": "course-1"},
    }
    claims.update(overrides)
    return {key: value for key, value in claims.items() if value is not None}
