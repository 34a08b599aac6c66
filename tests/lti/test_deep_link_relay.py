"""Deep linking from a browser that blocks the tool's cookie in the LMS dialog: the teacher
picks in a new window, and the signed answer goes back to the dialog's iframe, which alone
holds the secret to take it (lti/deep_link_relay.py). Each test tries to get past the
relay: another browser without the secret, a second take, an expired channel, a login that
did not come from the dialog, another return address."""

from __future__ import annotations

import json
import re
import time
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from lti import deep_link_relay
from ops.cache import RedisCache
from tests.lti_platform import ROLE

pytestmark = pytest.mark.django_db

FRAMED = {"HTTP_SEC_FETCH_DEST": "iframe", "HTTP_SEC_FETCH_SITE": "cross-site"}
TOP_LEVEL = {"HTTP_SEC_FETCH_DEST": "document", "HTTP_SEC_FETCH_SITE": "same-origin"}
PICKED = {
    "activity": "quiz:gradient-checkpointing",
    "title": "Checkpointing quiz, week 3",
    "max_attempts": "0",
    "grading_method": "highest",
}


def _hidden_fields(html: str) -> dict[str, str]:
    return {
        name: unescape(value)
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html)
        if name != "csrfmiddlewaretoken"
    }


class Dialog:
    """The LMS dialog's iframe (it keeps no cookie of the tool's) and the new window the
    teacher opens from it (a browser of its own: the cookie is first-party there)."""

    def __init__(self, platform, *, user_id: str = "teacher-1") -> None:
        self.platform = platform
        self.user_id = user_id
        self.iframe = Client()
        page = self.iframe.get(
            "/lti/login/", platform.login_initiation(user_id=user_id), **FRAMED
        ).content.decode()
        self.window_form = _hidden_fields(page)
        found = re.search(r'<script id="lti-return-channel" type="application/json">(.+?)</', page)
        assert found, page
        self.held = json.loads(found.group(1))  # what only the iframe's page holds
        self.window = Client()

    @property
    def channel(self) -> str:
        return self.held["channel"]

    @property
    def secret(self) -> str:
        return self.held["secret"]

    def open_window(self, *, deep_link: bool = True, form: dict | None = None, window=None):
        """The new window's login and launch; returns the launch's response."""
        window = window or self.window
        login = window.post("/lti/login/", form or self.window_form, **TOP_LEVEL)
        assert login.status_code == 302, login.content.decode()[:300]
        auth = {k: v[0] for k, v in parse_qs(urlsplit(login["Location"]).query).items()}
        signed = self.platform.authorize(
            auth,
            user_id=self.user_id,
            roles=[ROLE + ("Instructor" if deep_link else "Learner")],
            deep_link=deep_link,
        )
        return window.post("/lti/launch/", signed, HTTP_SEC_FETCH_DEST="document")

    def pick(self, launched, window=None):
        window = window or self.window
        assert launched.status_code == 302
        return window.post(launched["Location"], PICKED)

    def ask(self, client: Client | None = None, *, secret: str | None = None):
        return (client or self.iframe).post(
            "/lti/return-channel/status/",
            {"channel": self.channel, "secret": self.secret if secret is None else secret},
        )

    def take(self, client: Client | None = None, *, secret: str | None = None):
        return (client or self.iframe).post(
            "/lti/return-channel/answer/",
            {"channel": self.channel, "secret": self.secret if secret is None else secret},
        )


def test_the_answer_picked_in_the_new_window_goes_to_the_dialog_iframe(platform):
    dialog = Dialog(platform)
    assert dialog.window_form[deep_link_relay.CHANNEL_FIELD] == dialog.channel
    assert dialog.secret not in json.dumps(dialog.window_form)  # the window never gets it
    assert dialog.ask().json() == {"status": "waiting"}

    picked = dialog.pick(dialog.open_window())

    # The window says it is done; the signed answer is not in it.
    window_page = picked.content.decode()
    assert picked.status_code == 200
    assert "You can close this window" in window_page
    assert 'name="JWT"' not in window_page
    assert dialog.ask().json() == {"status": "ready"}

    answer = dialog.take()
    html = answer.content.decode()
    assert answer.status_code == 200
    assert f'action="{platform.server.url("/deep-link-return")}"' in html
    assert platform.server.base in answer["Content-Security-Policy"].split("form-action")[1]
    items = platform.verify_deep_linking_response(
        _hidden_fields(html)["JWT"], dialog.iframe.get("/lti/jwks/").json()
    )
    assert [item["title"] for item in items] == ["Checkpointing quiz, week 3"]


def test_another_browser_without_the_secret_learns_and_takes_nothing(platform):
    dialog = Dialog(platform)
    dialog.pick(dialog.open_window())
    stranger = Client()

    # The channel's id alone (it travelled to the new window) is not enough, nor a guess.
    assert dialog.ask(stranger, secret="").status_code == 404
    assert dialog.ask(stranger, secret="x" * 43).json() == {"status": "gone"}
    refused = dialog.take(stranger, secret=dialog.channel)
    assert refused.status_code == 404
    assert 'name="JWT"' not in refused.content.decode()
    # The new window, signed in as the teacher, cannot take it either.
    assert dialog.take(dialog.window, secret="").status_code == 404

    # The iframe still can.
    assert dialog.take().status_code == 200


def test_the_secret_of_another_dialog_takes_nothing(platform):
    """Two dialogs of the same teacher: each secret opens its own channel only."""
    first, second = Dialog(platform), Dialog(platform)
    first.pick(first.open_window())
    second.pick(second.open_window())

    assert first.ask(secret=second.secret).json() == {"status": "gone"}
    assert first.take(secret=second.secret).status_code == 404
    assert second.take(secret=first.secret).status_code == 404

    taken = {
        dialog.channel: _hidden_fields(dialog.take().content.decode())["JWT"]
        for dialog in (first, second)
    }
    assert taken[first.channel] != taken[second.channel]


def test_a_question_without_a_channel_or_secret_is_a_404_not_an_error():
    stranger = Client()
    for path in ("/lti/return-channel/status/", "/lti/return-channel/answer/"):
        for form in ({}, {"channel": "../../etc", "secret": "'; drop"}, {"channel": "x" * 5000}):
            assert stranger.post(path, form).status_code == 404
        assert stranger.get(path).status_code == 405


def test_the_answer_is_taken_once(platform):
    dialog = Dialog(platform)
    dialog.pick(dialog.open_window())
    assert dialog.take().status_code == 200

    again = dialog.take()
    assert again.status_code == 404
    assert 'name="JWT"' not in again.content.decode()
    assert dialog.ask().json() == {"status": "gone"}


def test_a_channel_expires(platform, settings):
    settings.LTI_DEEP_LINK_RELAY_SECONDS = 1
    dialog = Dialog(platform)
    launched = dialog.open_window()
    time.sleep(2.1)

    picked = dialog.pick(launched)

    # The window says the course page stopped waiting, and no answer was kept.
    assert picked.status_code == 410
    assert "stopped waiting" in picked.content.decode()
    assert 'name="JWT"' not in picked.content.decode()
    assert dialog.take().status_code == 404


def test_only_the_login_the_dialog_started_binds_its_channel(platform):
    """A login naming the channel for another initiation (another user's, in another
    browser) is not bound: what it picks is never delivered to the dialog's iframe."""
    dialog = Dialog(platform)
    intruder = Dialog(platform, user_id="someone-else")
    form = {**intruder.window_form, deep_link_relay.CHANNEL_FIELD: dialog.channel}

    answered = intruder.pick(intruder.open_window(form=form))

    assert 'name="JWT"' in answered.content.decode()  # answered from its own window
    assert dialog.ask().json() == {"status": "waiting"}
    # The dialog's own login still binds the channel, and its answer arrives.
    dialog.pick(dialog.open_window())
    assert dialog.take().status_code == 200


def test_a_channel_binds_one_login_only(platform):
    dialog = Dialog(platform)
    first = Client()
    assert first.post("/lti/login/", dialog.window_form, **TOP_LEVEL).status_code == 302  # bound
    second = Client()
    launched = dialog.open_window(window=second)  # the same initiation, repeated elsewhere

    # The second window's launch gets no channel, though it launched first: its answer goes
    # to the LMS from the window itself, never to the dialog.
    answered = dialog.pick(launched, window=second)
    assert 'name="JWT"' in answered.content.decode()
    assert dialog.ask().json() == {"status": "waiting"}


def test_the_answer_goes_only_to_the_return_url_of_the_launch(platform):
    dialog = Dialog(platform)
    dialog.open_window()
    assert not deep_link_relay.deliver(
        dialog.channel, return_url="https://evil.example/collect", jwt="forged"
    )
    assert dialog.ask().json() == {"status": "waiting"}


def test_a_return_url_outside_ascii_is_relayed(platform, monkeypatch):
    """The platform's return URL may hold any character: the relay compared it as text with
    hmac.compare_digest, which raises on anything but ASCII, and the pick answered 500."""
    url = platform.server.url
    monkeypatch.setattr(
        platform.server,
        "url",
        lambda path: url(path) + ("?kurs=ü" if path == "/deep-link-return" else ""),
    )
    dialog = Dialog(platform)
    assert dialog.pick(dialog.open_window()).status_code == 200
    assert dialog.ask().json() == {"status": "ready"}
    assert 'name="JWT"' in dialog.take().content.decode()


def test_a_launch_that_is_not_deep_linking_closes_the_channel(platform):
    dialog = Dialog(platform, user_id="student-1")
    landed = dialog.open_window(deep_link=False)
    assert landed.status_code == 302
    assert dialog.ask().json() == {"status": "closed"}


def test_without_the_cache_the_window_answers_the_lms_itself(platform, monkeypatch):
    """No channel can be kept: the login page offers the new window without one, and the
    picker there answers as it did before the relay (a real Redis that does not answer)."""
    unreachable = RedisCache("redis://127.0.0.1:1/0", {"OPTIONS": {"socket_connect_timeout": 0.2}})
    monkeypatch.setattr("lti.deep_link_relay.cache", unreachable)
    iframe = Client()
    page = iframe.get(
        "/lti/login/", platform.login_initiation(user_id="teacher-1"), **FRAMED
    ).content.decode()
    assert 'id="lti-return-channel"' not in page
    form = _hidden_fields(page)
    assert deep_link_relay.CHANNEL_FIELD not in form

    window = Client()
    login = window.post("/lti/login/", form, **TOP_LEVEL)
    auth = {k: v[0] for k, v in parse_qs(urlsplit(login["Location"]).query).items()}
    signed = platform.authorize(
        auth, user_id="teacher-1", roles=[ROLE + "Instructor"], deep_link=True
    )
    launched = window.post("/lti/launch/", signed, HTTP_SEC_FETCH_DEST="document")
    answered = window.post(launched["Location"], PICKED)
    assert 'name="JWT"' in answered.content.decode()
