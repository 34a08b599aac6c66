"""Content-Security-Policy on every page (scripts only from our static files, no plugins,
no <base>, forms to the tool or, where a page must, to the platform), Permissions-Policy,
no inline script in any template, and the pages that carry third-party code (the admin,
the API docs) working under that policy in Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from lti.models import Registration
from tests.lti_platform import ROLE, launch

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted(
    path
    for folder in ["templates", *(f"{app}/templates" for app in django_settings.INSTALLED_APPS)]
    if (ROOT / folder).is_dir()
    for path in (ROOT / folder).rglob("*.html")
)


def directives(response) -> dict[str, str]:
    policy = response["Content-Security-Policy"]
    return {
        part.strip().partition(" ")[0]: part.strip().partition(" ")[2]
        for part in policy.split(";")
        if part.strip()
    }


@pytest.mark.parametrize(
    "path",
    ["/", "/admin/login/", "/api/docs/", "/lti/register/", "/no-such-page/", "/lti/jwks/"],
)
def test_every_page_has_the_policy(client, path):
    response = client.get(path)
    found = directives(response)
    assert found["script-src"] == "'self'"
    assert found["object-src"] == "'none'"
    assert found["base-uri"] == "'none'"
    assert found["form-action"] == "'self'"
    assert "frame-ancestors" in found
    assert "camera=()" in response["Permissions-Policy"]
    assert "geolocation=()" in response["Permissions-Policy"]


def test_a_course_page_has_the_policy(learner_client, placement):
    response = learner_client.get(f"/quiz/{placement.pk}/")
    assert response.status_code in (200, 302)
    assert directives(response)["script-src"] == "'self'"


def test_hsts_stays_under_the_settings(client, settings):
    settings.SECURE_HSTS_SECONDS = 31536000
    response = client.get("/", secure=True)
    assert response["Strict-Transport-Security"].startswith("max-age=31536000")


@pytest.mark.usefixtures("quiz")
def test_the_deep_link_return_may_post_to_the_platform_only(client, platform):
    response = launch(client, platform, roles=[ROLE + "Instructor"], deep_link=True)
    returned = client.post(
        response["Location"],
        {
            "activity": "quiz:gradient-checkpointing",
            "title": "Quiz",
            "max_attempts": "1",
            "grading_method": "highest",
        },
    )
    assert returned.status_code == 200
    assert directives(returned)["form-action"] == f"'self' {platform.server.base}"
    assert "<script>" not in returned.content.decode()


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_template_has_inline_script(template):
    text = template.read_text()
    assert not INLINE_SCRIPT.search(text), "inline <script>: move it to a static file"
    assert not INLINE_HANDLER.search(text), "inline event handler"
    assert "javascript:" not in text.lower()


def test_templates_were_found():
    names = {path.name for path in TEMPLATES}
    assert {"base.html", "deep_link_return.html", "registered.html", "error.html"} <= names


def csp_errors(page) -> list[str]:
    errors: list[str] = []
    page.on(
        "console",
        lambda message: (
            errors.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    return errors


@pytest.mark.browser
def test_admin_and_api_docs_work_under_the_policy(page, live_server):
    get_user_model().objects.create_superuser("admin", "admin@example.edu", "correct horse")
    errors = csp_errors(page)
    page.goto(live_server.url + "/admin/login/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill("correct horse")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Site administration")).to_be_visible()
    page.goto(live_server.url + "/admin/lti/registration/add/")
    expect(page.locator("#registration_form")).to_be_visible()
    page.goto(live_server.url + "/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_be_visible()
    page.goto(live_server.url + "/api/v1/")
    expect(page.get_by_role("heading", name="Api Root")).to_be_visible()
    assert errors == []


@pytest.mark.browser
def test_registration_works_inside_the_platforms_dialog_without_cookies(
    page, live_server, moodle, settings
):
    """The platform frames the registration page from another site; the browser keeps no
    third-party cookie there (Playwright's contexts block them); the tool registers, and
    its close message reaches the dialog."""
    settings.LTI_REGISTRATION_KEY = "k3y"
    server = moodle
    errors = csp_errors(page)
    configuration = server.url("/.well-known/openid-configuration")
    tool = (
        f"{live_server.url}/lti/register/?key=k3y&registration_token=reg-token-xyz"
        f"&openid_configuration={configuration}"
    )
    page.goto(server.url("/registration-dialog") + "?" + f"tool={quote(tool)}")
    frame = page.frame_locator("iframe")
    frame.get_by_role("button", name="Register").click()
    expect(frame.get_by_role("heading", name="The tool is registered")).to_be_visible()
    page.wait_for_function("window.closedBy !== null")
    assert page.evaluate("window.closedBy") == live_server.url
    assert Registration.objects.get().client_id == "client-A"
    assert errors == []


def quote(value: str) -> str:
    from urllib.parse import quote as url_quote

    return url_quote(value, safe="")
