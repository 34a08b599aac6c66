"""URLs a platform gives in a launch (deep-link return, AGS, NRPS, launch presentation
return) are http(s) only, https from an https platform without DEBUG; anything else is
refused with a clear page and never rendered."""

from __future__ import annotations

import pytest

from lti.http import platform_url_ok
from tests.lti_platform import ROLE, Platform, standard_claims, start_login

pytestmark = pytest.mark.django_db

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
HOSTILE = [
    "javascript:alert(document.domain)",
    "JavaScript:fetch('/api/v1/grades/')",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "ftp://lms.example.edu/return",
    "//evil.example/return",
    " javascript:alert(1)",
    "http://lms.example.edu/\nreturn",
]


def deep_link_claims(platform: Platform, auth: dict, return_url: str) -> dict:
    return standard_claims(
        platform,
        auth,
        **{
            LTI + "message_type": "LtiDeepLinkingRequest",
            LTI + "resource_link": None,
            LTI + "roles": [ROLE + "Instructor"],
            DL_SETTINGS: {
                "deep_link_return_url": return_url,
                "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"],
            },
        },
    )


def post_launch(client, platform: Platform, claims: dict, auth: dict):
    return client.post("/lti/launch/", {"id_token": platform.sign(claims), "state": auth["state"]})


@pytest.mark.parametrize("return_url", HOSTILE)
def test_a_deep_link_return_url_that_is_not_http_is_refused_and_never_rendered(
    client, platform, return_url
):
    auth = start_login(client, platform)
    response = post_launch(client, platform, deep_link_claims(platform, auth, return_url), auth)
    html = response.content.decode()
    assert response.status_code == 400, html[:800]
    assert "deep_link_return_url is not an http(s) address" in html
    assert "action=" not in html.split("<main", 1)[1]  # no form, let alone one posting there
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    ("claim", "value", "name"),
    [
        (AGS, {"lineitem": "javascript:alert(1)"}, "lineitem"),
        (AGS, {"lineitems": "data:application/json,{}"}, "lineitems"),
        (NRPS, {"context_memberships_url": "file:///etc/passwd"}, "context_memberships_url"),
        (LTI + "launch_presentation", {"return_url": "javascript:alert(1)"}, "return_url"),
    ],
)
def test_service_and_return_urls_that_are_not_http_are_refused(
    client, platform, claim, value, name
):
    auth = start_login(client, platform)
    response = post_launch(
        client, platform, standard_claims(platform, auth, **{claim: value}), auth
    )
    html = response.content.decode().replace("&#x27;", "'")
    assert response.status_code == 400, html[:800]
    assert f"launch's {name} is not an http(s) address" in html


@pytest.mark.usefixtures("quiz")
def test_an_https_platform_must_give_https_urls_without_debug(client, platform_server):
    lms = Platform(platform_server, issuer="https://lms.example.edu")
    lms.register_in_tool()
    auth = start_login(client, lms)
    claims = deep_link_claims(lms, auth, "http://lms.example.edu/deep-link-return")
    response = post_launch(client, lms, claims, auth)
    assert response.status_code == 400
    auth = start_login(client, lms)
    claims = deep_link_claims(lms, auth, "https://lms.example.edu/deep-link-return")
    assert post_launch(client, lms, claims, auth).status_code == 302


@pytest.mark.parametrize(
    ("url", "issuer", "debug", "allowed"),
    [
        ("https://lms.example.edu/x", "https://lms.example.edu", False, True),
        ("http://lms.example.edu/x", "https://lms.example.edu", False, False),
        ("http://lms.example.edu/x", "https://lms.example.edu", True, True),
        ("http://127.0.0.1:8000/x", "http://127.0.0.1:8000", False, True),
        ("javascript:alert(1)", "http://127.0.0.1:8000", True, False),
        ("data:text/html,x", "https://lms.example.edu", True, False),
        ("https:///no-host", "https://lms.example.edu", False, False),
        (["https://lms.example.edu/x"], "https://lms.example.edu", False, False),
    ],
)
def test_platform_url_rule(settings, url, issuer, debug, allowed):
    settings.DEBUG = debug
    assert platform_url_ok(url, issuer) is allowed
