"""What a login and its launch ask of Redis: each round trip is a wait on every launch
(docs/benchmarks.md), so the checks that need Redis share what they can."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from django.core.cache import cache
from django.test import Client

from tests.lti_platform import ROLE, launch, start_login

pytestmark = pytest.mark.django_db


@contextlib.contextmanager
def redis_commands() -> Iterator[list[tuple[str, str]]]:
    """The commands this thread's cache sends to Redis meanwhile: (command, its first key)."""
    client = cache._client
    real = client.execute_command
    sent: list[tuple[str, str]] = []

    def recorded(*args, **options):
        command = str(args[0]).upper()
        # EVALSHA's first argument is the script, its third the first key.
        key = args[3] if command == "EVALSHA" else (args[1] if len(args) > 1 else "")
        sent.append((command, key.decode() if isinstance(key, bytes) else str(key)))
        return real(*args, **options)

    client.execute_command = recorded
    try:
        yield sent
    finally:
        del client.execute_command


def _about(sent: list[tuple[str, str]], part: str) -> list[str]:
    return [command for command, key in sent if part in key]


def test_a_launch_takes_its_state_in_one_step_and_asks_nothing_of_a_relay(platform):
    browser = Client()
    with redis_commands() as at_login:
        auth = start_login(browser, platform, user_id="stu-rt")
    signed = platform.authorize(auth, user_id="stu-rt", roles=[ROLE + "Learner"])
    with redis_commands() as at_launch:
        response = browser.post("/lti/launch/", signed)
    assert response.status_code == 302
    state = auth["state"]
    assert _about(at_login, f"lti:state:{state}") == ["SET"]
    # Read and removed by one GETDEL: the cookie proves the browser without the record.
    assert _about(at_launch, f"lti:state:{state}") == ["GETDEL"]
    # The login repeated no deep-linking return channel, so none was bound to its state.
    assert _about(at_launch, "dl-relay") == []


def test_a_rate_limit_counts_a_window_s_later_requests_in_one_round_trip(platform):
    browser = Client()
    start_login(browser, platform, user_id="stu-rt")  # the window's first: its entry added
    with redis_commands() as sent:
        start_login(browser, platform, user_id="stu-rt")
    assert _about(sent, "throttle_lti_login") == ["EVALSHA"]


def test_a_launch_into_an_attempt_in_progress_reads_it_and_its_placement_once(platform):
    """The landing reads the attempt in progress with its answers in the one statement its
    page renders from, and the placement's kind, which never changes, once per process."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from lti.models import ResourceLink
    from tests.quiz_helpers import start

    browser = Client()
    launch(browser, platform, user_id="stu-resume")
    attempt = start(browser, ResourceLink.objects.get(resource_link_id="rl-1").pk)
    with CaptureQueriesContext(connection) as queries:
        response = launch(browser, platform, user_id="stu-resume")
    assert response.status_code == 200
    assert "Question 1 of 8" in response.content.decode()
    assert reverse("assessments:attempt", args=[attempt.public_id]) in response.content.decode()
    sql = [query["sql"] for query in queries.captured_queries]
    assert [text for text in sql if "activities_placement" in text] == [], sql
    assert len([text for text in sql if "assessments_attempt" in text]) == 1, sql


def test_a_process_reads_a_platform_s_key_set_from_the_cache_once_in_a_while(platform):
    """Each launch needs its platform's key set: a process keeps it as it read it from the
    cache for a few seconds, then reads it again (lti.platform_keys)."""
    from lti import platform_keys

    launch(Client(), platform, user_id="stu-keys")  # this process has read it now
    with redis_commands() as sent:
        assert launch(Client(), platform, user_id="stu-keys").status_code == 302
    assert _about(sent, "lti:jwks:set") == []
    url = platform.server.url("/jwks")
    read_at, keyset = platform_keys._read[url]
    platform_keys._read[url] = (read_at - platform_keys.PROCESS_SECONDS, keyset)  # time passed
    with redis_commands() as sent:
        assert launch(Client(), platform, user_id="stu-keys").status_code == 302
    assert _about(sent, "lti:jwks:set") == ["GET"]


def test_a_key_another_process_refetched_serves_here_at_once(platform, platform_server):
    """The platform rotated its key and another process refetched the set (and holds the
    refetch's limit): a launch signed with the new key finds it in the cache here, though
    this process still keeps the old set."""
    from lti import platform_keys

    launch(Client(), platform, user_id="stu-rotated")  # this process keeps the old set
    platform.rotate_key()
    url = platform_server.url("/jwks")
    cache.set(platform_keys._cache_key(url, "set"), platform_server.jwks, 3600)  # the other's
    cache.set(platform_keys._cache_key(url, "refetch"), True, 300)  # its limit
    fetched = platform_server.requests.count(("GET", "/jwks"))
    assert launch(Client(), platform, user_id="stu-rotated").status_code == 302
    assert platform_server.requests.count(("GET", "/jwks")) == fetched  # none from here
