"""The login inside the LMS iframe checks that the browser keeps the tool's cookie before
it spends the platform's login hint, and a launch posted cross-site without the state
cookie is posted once more from the tool's own page: neither opens a way round the state's
binding to the browser that started the login."""

from __future__ import annotations

import json
import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from lti import deep_link_relay, oidc
from lti.models import LtiUser
from lti.views import COOKIE_CHECK, RELAYED_FIELD
from tests.lti_platform import ROLE

FRAMED = {"HTTP_SEC_FETCH_DEST": "iframe", "HTTP_SEC_FETCH_SITE": "cross-site"}
CROSS_SITE_POST = {"HTTP_SEC_FETCH_DEST": "document", "HTTP_SEC_FETCH_SITE": "cross-site"}

pytestmark = pytest.mark.django_db


def _hidden_fields(html: str) -> dict[str, str]:
    """The page's hidden fields, but the language switch's CSRF token (every page has it)."""
    return {
        name: unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html)
        if name != "csrfmiddlewaretoken"
    }


def _framed_login(client: Client, platform) -> tuple[str, dict[str, str]]:
    """The login page in the iframe: the platform's URL it goes on to and its new-window form."""
    params = platform.login_initiation(user_id="user-1")
    response = client.get("/lti/login/", params, **FRAMED)
    assert response.status_code == 200
    html = response.content.decode()
    auth_url = re.search(r'<script id="lti-auth-url" type="application/json">(.+?)</script>', html)
    assert auth_url, html
    return json.loads(auth_url.group(1)), _hidden_fields(html)


def test_a_framed_login_checks_the_cookie_and_offers_the_same_login_in_a_new_window(
    client, platform
):
    params = platform.login_initiation(user_id="user-1")
    response = client.get("/lti/login/", params, **FRAMED)

    assert response.status_code == 200
    assert response.cookies[COOKIE_CHECK].value == "1"
    assert not response.cookies[COOKIE_CHECK]["httponly"]  # the page's script reads it
    state_cookies = [name for name in response.cookies if name.startswith("lti_state_")]
    assert len(state_cookies) == 1
    assert response.cookies[state_cookies[0]]["httponly"]
    # The new window repeats the platform's login initiation, not our state, and names the
    # return channel of a deep-linking answer (its secret stays with this page).
    fields = _hidden_fields(response.content.decode())
    assert fields.pop(deep_link_relay.CHANNEL_FIELD)
    assert fields == {name: params[name] for name in oidc.LOGIN_PARAMS if name in params}
    # Its redirect to the platform is allowed as a form's destination.
    assert platform.server.base in response["Content-Security-Policy"].split("form-action")[1]


def test_a_login_at_the_top_level_redirects_at_once(client, platform):
    params = platform.login_initiation(user_id="user-1")
    response = client.post(
        "/lti/login/", params, HTTP_SEC_FETCH_DEST="document", HTTP_SEC_FETCH_SITE="same-origin"
    )
    assert response.status_code == 302
    assert COOKIE_CHECK not in response.cookies


def _signed_launch(client: Client, platform) -> dict[str, str]:
    auth_url, _ = _framed_login(client, platform)
    auth_params = {key: values[0] for key, values in parse_qs(urlsplit(auth_url).query).items()}
    return platform.authorize(auth_params, user_id="user-1", roles=[ROLE + "Learner"])


def test_a_cross_site_launch_without_the_cookie_is_posted_again_from_the_tool(client, platform):
    signed = _signed_launch(client, platform)
    cookie = client.cookies.pop(oidc.STATE_COOKIE_PREFIX + signed["state"])  # a Lax cookie

    relay = client.post("/lti/launch/", signed, **CROSS_SITE_POST)

    assert relay.status_code == 200
    assert "no-store" in relay["Cache-Control"]
    assert _hidden_fields(relay.content.decode()) == {**signed, RELAYED_FIELD: "1"}
    client.cookies[cookie.key] = cookie.value  # the tool's own page posts it with the cookie
    landed = client.post(
        "/lti/launch/",
        {**signed, RELAYED_FIELD: "1"},
        HTTP_SEC_FETCH_DEST="document",
        HTTP_SEC_FETCH_SITE="same-origin",
    )
    assert landed.status_code == 302
    assert LtiUser.objects.get().sub == "user-1"


def test_a_relayed_launch_in_a_browser_without_the_cookie_is_refused(client, platform):
    """Another browser (an attacker's id_token posted from a victim's) has no state cookie:
    the relay posts once, and that launch is refused, the state left for its browser."""
    signed = _signed_launch(client, platform)
    stranger = Client()

    relay = stranger.post("/lti/launch/", signed, **CROSS_SITE_POST)
    refused = stranger.post("/lti/launch/", _hidden_fields(relay.content.decode()))

    assert refused.status_code == 403
    assert "not started in this browser" in refused.content.decode()
    assert not LtiUser.objects.exists()
    assert oidc.peek_state(signed["state"]) is not None


def test_a_same_site_launch_without_the_cookie_is_refused_at_once(client, platform):
    signed = _signed_launch(client, platform)
    stranger = Client()
    refused = stranger.post("/lti/launch/", signed, HTTP_SEC_FETCH_SITE="same-site")
    assert refused.status_code == 403
