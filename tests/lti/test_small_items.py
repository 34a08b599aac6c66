"""Issue 17's smaller findings: the tool's configuration printed in a `make run` checkout,
the home page's registration URL where no key is needed, the roster's time read in one
sentence, and a new registration allowed to frame the tool in every process at once."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from lti.models import Role
from ops.process_memo import VERSION_CHECK_SECONDS
from tests.quiz_helpers import launched_client
from tests.workers import in_another_process


@pytest.mark.usefixtures("db")
def test_the_tool_config_prints_the_local_urls_in_a_make_run_checkout(settings, monkeypatch):
    """`make run` sets DEBUG=1 and no LTI_TOOL_URL; the guide says the command prints the
    registration URL there."""
    settings.DEBUG = True
    settings.LTI_TOOL_URL = ""
    settings.LTI_REGISTRATION_KEY = ""
    monkeypatch.setenv("PORT", "8000")
    # The command's default is read when its parser is built, as in a new process.
    out = StringIO()
    call_command("lti_tool_config", "--format", "moodle", stdout=out)
    printed = out.getvalue()
    assert "Initiate login URL: http://127.0.0.1:8000/lti/login/" in printed
    assert "http://127.0.0.1:8000/lti/register/ (open without a key" in printed


@pytest.mark.usefixtures("db")
def test_outside_debug_the_tool_config_still_needs_a_base_url(settings):
    settings.DEBUG = False
    settings.LTI_TOOL_URL = ""
    with pytest.raises(Exception, match="--base-url"):
        call_command("lti_tool_config", stdout=StringIO())


@pytest.mark.parametrize(
    ("debug", "key", "shows", "hides"),
    [
        (True, "", "/lti/register/</code> (open without a key in this local run)", "?key="),
        (False, "s3cret-key", "/lti/register/?key=…</code>", "s3cret-key"),
        (False, "", "Turned off on this server", "/lti/register/"),
    ],
    ids=["make-run", "with-key", "closed"],
)
@pytest.mark.usefixtures("db")
def test_the_home_page_gives_the_registration_url_as_this_server_opens_it(
    client, settings, debug, key, shows, hides
):
    settings.DEBUG = debug
    settings.LTI_REGISTRATION_KEY = key
    page = client.get("/").content.decode()
    assert shows in page
    assert hides not in page.split("admin-heading")[1]


def test_the_roster_time_ends_its_sentence_once(learner_membership):
    learner_membership.role = Role.STAFF
    learner_membership.save()
    context = learner_membership.context
    context.nrps_url = "https://lms.example.edu/memberships"
    context.roster_synced_at = datetime(2026, 11, 30, 21, 5, tzinfo=UTC)
    context.save()
    placement = context.resource_links.get()
    client = launched_client(learner_membership)

    page = client.get(
        reverse("assessments:manage", args=[placement.pk]), HTTP_ACCEPT_LANGUAGE="en"
    ).content.decode()

    assert "Roster last read from the LMS: 11/30/2026 9:05 p.m." in page
    assert "p.m.." not in page


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_registration_made_in_another_process_may_frame_the_tool_within_a_second(client):
    """The origins allowed to frame the tool are kept per process: a platform registered by
    another process (the one that served the registration) frames the pages here once this
    process has read the registrations' version again (at most a second), not a minute
    later."""
    before = client.get("/")["Content-Security-Policy"]
    assert "https://moodle.example.edu" not in before
    registered_from = time.monotonic()

    in_another_process(
        "from lti.models import Registration; Registration.objects.create("
        "issuer='https://moodle.example.edu', client_id='c-1', "
        "auth_login_url='https://moodle.example.edu/mod/lti/auth.php', "
        "auth_token_url='https://moodle.example.edu/mod/lti/token.php', "
        "keyset_url='https://moodle.example.edu/mod/lti/certs.php')"
    )

    time.sleep(max(0.0, registered_from + VERSION_CHECK_SECONDS - time.monotonic()))
    after = client.get("/")["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://moodle.example.edu" in after


@pytest.mark.django_db
def test_the_shared_versions_are_read_at_most_once_a_second(client, monkeypatch):
    """Pages do not each read the shared versions of the registrations and the users (a
    statement per response): a process reads them, in one statement, again only after
    VERSION_CHECK_SECONDS."""
    from types import SimpleNamespace

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr("ops.process_memo.time", SimpleNamespace(monotonic=lambda: clock.now))
    client.get("/")  # the test database's first check draws its versions
    clock.now += VERSION_CHECK_SECONDS
    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            client.get("/")
            clock.now += VERSION_CHECK_SECONDS / 10
        clock.now += VERSION_CHECK_SECONDS / 2  # the second has passed
        client.get("/")
    reads = [query for query in queries.captured_queries if "ops_sharedversion" in query["sql"]]
    assert len(reads) == 2
