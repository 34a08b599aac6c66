"""Grade delivery and the roster against a platform that answers oddly or with hostility: pages
that never end, a Retry-After of no time, a score accepted with a body that is not JSON, a
roster page without its members, a token that claims to live forever, pages and line items on
another host. Each against the fake LMS, a real HTTP server."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gradesync import services
from gradesync.models import GradeSync
from lti import ags
from lti import claims as c
from lti.models import Membership
from lti.services import sync_roster
from tests.grades_helpers import finish_attempt, graded_placement, student
from tests.http_servers import serve_in_thread

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch):
    """The reminders deliveries send, by countdown, instead of to a broker."""
    from ops import jobs

    countdowns: list[float] = []

    def send(task_name, *args, countdown=0, eta=None):  # noqa: ARG001
        countdowns.append(countdown)
        return True

    monkeypatch.setattr(jobs, "send", send)
    return countdowns


def _one_grade(fake_lms, quiz, **placement) -> GradeSync:
    link = graded_placement(fake_lms, quiz, **placement)
    finish_attempt(student(link, "s1"), link, correct=3)
    return GradeSync.objects.get()


@pytest.mark.parametrize("paging", ["self", "endless"])
@pytest.mark.usefixtures("sent")
def test_line_items_that_page_forever_are_an_unavailable_platform(
    fake_lms, quiz, paging, monkeypatch
):
    monkeypatch.setattr(ags, "MAX_PAGES", 20, raising=False)
    fake_lms.paging = paging
    sync = _one_grade(fake_lms, quiz, lineitem=False)
    assert services.deliver(sync.pk) == "retry"
    sync.refresh_from_db()
    assert "pages" in sync.last_error
    # Stopped by the client (at the repeat, or at the cap), not by the fake LMS's own limit.
    assert fake_lms.page_requests <= 20


@pytest.mark.parametrize("paging", ["self", "endless"])
def test_a_roster_that_pages_forever_fails_and_deactivates_no_one(
    fake_lms, quiz, paging, monkeypatch
):
    link = graded_placement(fake_lms, quiz)
    fake_lms.members = [{"user_id": "a", "roles": ["Learner"], "status": "Active"}]
    sync_roster(link.context)
    monkeypatch.setattr(ags, "MAX_PAGES", 20, raising=False)
    fake_lms.paging = paging
    with pytest.raises(ags.PlatformUnavailable):
        sync_roster(link.context)
    assert fake_lms.page_requests <= 20
    assert Membership.objects.get().is_active


@pytest.mark.parametrize("retry_after", ["0", "Thu, 01 Jan 1970 00:00:00 GMT"])
def test_a_retry_after_of_no_time_still_backs_off(fake_lms, quiz, sent, retry_after, settings):
    settings.GRADESYNC_BACKOFF_BASE_SECONDS = 30
    fake_lms.scripted = ["429"]
    fake_lms.retry_after = retry_after
    sync = _one_grade(fake_lms, quiz)
    assert services.deliver(sync.pk) == "retry"
    assert sent[-1] >= 30 * 0.75


def test_a_score_accepted_with_a_body_that_is_not_json_is_delivered(fake_lms, quiz):
    fake_lms.score_reply = (200, "text/plain", b"OK")
    sync = _one_grade(fake_lms, quiz)
    assert services.deliver(sync.pk) == "synced"
    assert fake_lms.scores


@pytest.mark.parametrize("body", [{"error": "maintenance"}, {"members": 5}, {"members": None}])
def test_a_roster_page_without_its_members_deactivates_no_one(fake_lms, quiz, body):
    link = graded_placement(fake_lms, quiz)
    fake_lms.members = [
        {"user_id": "a", "roles": ["Learner"], "status": "Active"},
        {"user_id": "b", "roles": ["Instructor"], "status": "Active"},
    ]
    sync_roster(link.context)
    fake_lms.members_body = body
    with pytest.raises(ags.PlatformUnavailable):
        sync_roster(link.context)
    assert Membership.objects.filter(is_active=True).count() == 2


@pytest.mark.parametrize("expires_in", [1e20, 10**25, float("inf")])
def test_a_token_claimed_to_live_forever_is_used_and_cached(fake_lms, quiz, expires_in):
    fake_lms.expires_in = expires_in
    sync = _one_grade(fake_lms, quiz)
    assert services.deliver(sync.pk) == "synced"
    ags.access_token(sync.placement.context.registration, [c.SCOPE_SCORE])
    assert fake_lms.token_requests == 1


@pytest.fixture
def other_host():
    """A server on another origin that records what reaches it (the bearer token, above all)."""
    seen: list[tuple[str, str, str | None]] = []

    class Recorder(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _any(self) -> None:
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"[]")

        do_GET = do_POST = do_PUT = _any  # noqa: N815

    server = ThreadingHTTPServer(("127.0.0.2", 0), Recorder)
    serve_in_thread(server)
    yield f"http://127.0.0.2:{server.server_address[1]}", seen
    server.shutdown()


@pytest.mark.usefixtures("sent")
def test_line_items_paged_to_another_host_are_not_followed(fake_lms, quiz, other_host):
    """The platform's token is for the platform: an answer naming another host's page (or a
    line item there) must not send it there."""
    fake_lms.elsewhere, seen = other_host
    fake_lms.paging = "elsewhere"
    sync = _one_grade(fake_lms, quiz, lineitem=False)
    assert services.deliver(sync.pk) == "retry"
    sync.refresh_from_db()
    assert "another host" in sync.last_error
    assert seen == []


def test_a_roster_paged_to_another_host_is_not_followed(fake_lms, quiz, other_host):
    fake_lms.elsewhere, seen = other_host
    link = graded_placement(fake_lms, quiz)
    fake_lms.members = [{"user_id": "a", "roles": ["Learner"]}]
    sync_roster(link.context)  # stored while the roster is whole
    fake_lms.paging = "elsewhere"
    with pytest.raises(ags.PlatformUnavailable):
        sync_roster(link.context)
    assert seen == []
    assert Membership.objects.filter(is_active=False).count() == 0


@pytest.mark.usefixtures("sent")
def test_a_line_item_created_on_another_host_gets_no_score(fake_lms, quiz, other_host):
    fake_lms.elsewhere, seen = other_host
    fake_lms.lineitems_elsewhere = True
    sync = _one_grade(fake_lms, quiz, lineitem=False)
    assert services.deliver(sync.pk) == "retry"
    sync.refresh_from_db()
    assert "another host" in sync.last_error
    assert seen == []
