"""Browsers that block the tool's cookie inside the LMS page (Safari by default): the page
a launch lands on offers a new window, and a one-time handoff carries the launch's session
there. Launches are signed by the independent platform library; the browser that drops
the cookie is a client that keeps none."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from lti.models import ResourceLink
from ops.cache import RedisCache
from tests.lti_platform import ROLE, launch, launch_by_platform_storage
from tests.quiz_helpers import start

pytestmark = pytest.mark.django_db

SAFARI = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) Version/17.5 Safari/605.1.15"


def landing_of(response) -> tuple[str, str]:
    """The page a launch redirects to, and the handoff it names."""
    assert response.status_code == 302, response.content.decode()[:300]
    location = response["Location"]
    return location, parse_qs(urlsplit(location).query)["handoff"][0]


def cookieless_browser() -> Client:
    """A browser that sends the tool none of the cookies set inside the LMS iframe."""
    return Client(HTTP_USER_AGENT=SAFARI)


def test_a_browser_that_dropped_the_cookie_continues_in_a_new_window(platform):
    launched = launch(Client(HTTP_USER_AGENT=SAFARI), platform, user_id="safari-student")
    landing, token = landing_of(launched)
    placement = ResourceLink.objects.get()
    assert urlsplit(landing).path == f"/quiz/{placement.pk}/"

    in_iframe = cookieless_browser()
    offered = in_iframe.get(landing)
    html = offered.content.decode()
    assert offered.status_code == 403
    assert "blocks cookies from other sites" in html
    link = re.search(r'id="open-in-window"[^>]*href="([^"]+)"[^>]*target="_blank"', html)
    assert link
    assert link.group(1) == f"/lti/handoff/{token}/"

    new_window = cookieless_browser()
    handed = new_window.get(link.group(1))
    assert handed.status_code == 302
    assert handed["Location"] == urlsplit(landing).path
    page = new_window.get(handed["Location"])
    assert page.status_code == 200
    assert "Start" in page.content.decode()
    # Signed in as the launch's student, in the launch's course only.
    assert new_window.session["_auth_user_id"] == launched.wsgi_request.session["_auth_user_id"]

    # Once: the link does not sign in a second window.
    again = cookieless_browser().get(link.group(1))
    assert again.status_code == 400
    assert "expired or was used" in again.content.decode()


def test_a_student_resuming_an_attempt_in_such_a_browser_continues_it_in_the_new_window(
    platform,
):
    first = Client(HTTP_USER_AGENT=SAFARI)
    launch(first, platform, user_id="safari-student")
    attempt = start(first, ResourceLink.objects.get().pk)

    # Such a browser proves the launch's state by the LMS's platform storage, not a cookie:
    # the launch cannot know that the session's cookie will come back, so it redirects.
    landing, token = landing_of(
        launch_by_platform_storage(
            Client(HTTP_USER_AGENT=SAFARI), platform, user_id="safari-student"
        )
    )
    assert urlsplit(landing).path == f"/attempts/{attempt.public_id}/"
    offered = cookieless_browser().get(landing)
    assert offered.status_code == 403
    assert f"/lti/handoff/{token}/" in offered.content.decode()

    new_window = cookieless_browser()
    handed = new_window.get(f"/lti/handoff/{token}/")
    assert handed["Location"] == urlsplit(landing).path
    page = new_window.get(handed["Location"]).content.decode()
    assert "Question 1 of 8" in page
    assert 'name="option"' in page


def test_a_handoff_serves_only_the_browser_that_launched_and_only_from_the_tool(platform):
    _landing, token = landing_of(launch(Client(HTTP_USER_AGENT=SAFARI), platform))
    elsewhere = Client(HTTP_USER_AGENT="curl/8.5.0").get(f"/lti/handoff/{token}/")
    assert elsewhere.status_code == 400
    assert "_auth_user_id" not in elsewhere.wsgi_request.session
    # A token that travelled to another browser is spent.
    assert cookieless_browser().get(f"/lti/handoff/{token}/").status_code == 400

    # Another site cannot sign a browser in with a handoff (an image, a redirect).
    _landing, token = landing_of(launch(Client(HTTP_USER_AGENT=SAFARI), platform))
    from_a_site = cookieless_browser().get(
        f"/lti/handoff/{token}/", headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert from_a_site.status_code == 403
    assert "_auth_user_id" not in from_a_site.wsgi_request.session
    new_window = cookieless_browser()
    handed = new_window.get(f"/lti/handoff/{token}/", headers={"Sec-Fetch-Site": "same-origin"})
    assert handed.status_code == 302
    assert handed["Cache-Control"].startswith("max-age=0")


def test_the_new_window_gets_the_session_under_a_new_key_and_the_launch_language(platform):
    browser = Client(HTTP_USER_AGENT=SAFARI)
    launched = launch(browser, platform, locale="ru-RU")
    launch_key = launched.wsgi_request.session.session_key
    _landing, token = landing_of(launched)
    new_window = cookieless_browser()
    handed = new_window.get(f"/lti/handoff/{token}/")
    assert handed.cookies["django_language"].value == "ru"
    assert new_window.session.session_key != launch_key
    # Whoever held the launch's cookie holds nothing now.
    assert browser.get(handed["Location"]).status_code == 403
    assert "Начать" in new_window.get(handed["Location"]).content.decode()


def test_a_landing_that_kept_its_cookie_drops_the_handoff(platform):
    browser = Client(HTTP_USER_AGENT=SAFARI)
    landing, token = landing_of(launch(browser, platform))
    assert browser.get(landing).status_code == 200
    assert cookieless_browser().get(f"/lti/handoff/{token}/").status_code == 400
    # A page without a handoff, or with one that is gone, says to launch again.
    refused = cookieless_browser().get(landing)
    assert refused.status_code == 403
    assert "Open this activity from your course" in refused.text


def test_deep_linking_says_what_to_do_when_the_cookie_is_blocked(platform):
    """The content picker must answer the LMS from the LMS page: no new window for it."""
    launched = launch(
        Client(HTTP_USER_AGENT=SAFARI), platform, roles=[ROLE + "Instructor"], deep_link=True
    )
    assert launched.status_code == 302
    assert "handoff" not in launched["Location"]
    refused = cookieless_browser().get(launched["Location"])
    assert refused.status_code == 404
    assert "blocks this tool&#x27;s cookies" in refused.text


def test_without_the_cache_a_launch_lands_without_a_handoff(platform, monkeypatch):
    unreachable = RedisCache("redis://127.0.0.1:1/0", {"OPTIONS": {"socket_connect_timeout": 0.2}})
    monkeypatch.setattr("lti.handoff.cache", unreachable)
    browser = Client(HTTP_USER_AGENT=SAFARI)
    launched = launch(browser, platform)
    assert launched.status_code == 302
    assert "handoff" not in launched["Location"]
    assert browser.get(launched["Location"]).status_code == 200
