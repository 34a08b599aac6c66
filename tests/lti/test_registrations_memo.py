"""The registrations a process keeps between requests (lti.registrations_memo): a repeat
login and launch wait on no statement for them, and turning a platform off still takes
effect at once here and within a second in every other process."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from lti import registrations_memo
from lti.claims import DEPLOYMENT_ID
from lti.models import Deployment
from ops.process_memo import VERSION_CHECK_SECONDS
from tests.lti_platform import launch, standard_claims, start_login
from tests.workers import committed_version, in_another_process


def _registration_reads(queries: CaptureQueriesContext) -> list[str]:
    return [
        query["sql"] for query in queries.captured_queries if "lti_registration" in query["sql"]
    ]


@pytest.mark.django_db
def test_a_repeat_login_and_launch_read_no_registration(platform):
    assert launch(Client(), platform, user_id="stu-memo").status_code == 302
    browser = Client()
    with CaptureQueriesContext(connection) as at_login:
        start_login(browser, platform, user_id="stu-memo")
    with CaptureQueriesContext(connection) as at_launch:
        assert launch(browser, platform, user_id="stu-memo").status_code == 302
    assert _registration_reads(at_login) == []
    assert _registration_reads(at_launch) == []


@pytest.mark.django_db
def test_a_deployment_turned_off_here_refuses_the_next_launch(platform):
    assert launch(Client(), platform, user_id="stu-off").status_code == 302
    deployment = Deployment.objects.get()
    deployment.is_active = False
    deployment.save()
    refused = launch(Client(), platform, user_id="stu-off")
    assert refused.status_code == 403
    assert "has been deactivated" in refused.content.decode()


@pytest.mark.django_db
def test_a_made_up_deployment_is_refused_and_takes_no_place(platform):
    assert launch(Client(), platform, user_id="stu-dep").status_code == 302
    kept = len(registrations_memo.registrations.entries)
    for number in range(3):
        browser = Client()
        auth = start_login(browser, platform, user_id="stu-dep")
        claims = standard_claims(platform, auth, **{DEPLOYMENT_ID: f"made-up-{number}"})
        refused = browser.post(
            "/lti/launch/", {"id_token": platform.sign(claims), "state": auth["state"]}
        )
        assert refused.status_code == 400
        page = refused.content.decode()
        assert f"made-up-{number}" in page
        assert "is not registered with this tool" in page
    assert len(registrations_memo.registrations.entries) == kept


@pytest.mark.django_db
def test_the_memo_starts_again_past_its_size(monkeypatch):
    memo = registrations_memo.registrations
    monkeypatch.setattr(memo, "max_entries", 2)
    for number in range(5):
        registrations_memo.remembered(("made-up", number), lambda number=number: [number])
        assert len(memo.entries) <= 2


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "their_env",
    [{}, {"REDIS_URL": "redis://127.0.0.1:1/0"}],
    ids=["with Redis", "without Redis"],
)
def test_a_deployment_turned_off_in_another_process_refuses_launches_here_within_a_second(
    platform, their_env
):
    """The process that turns a deployment off (the admin's, a command) moves the shared
    version; this one, which keeps the registration's rows, reads it again within a second
    and refuses the next launch, even when the other process could not reach Redis."""
    assert launch(Client(), platform, user_id="stu-far").status_code == 302
    turned_off_from = time.monotonic()
    in_another_process(
        "from lti.models import Deployment; d = Deployment.objects.get(); "
        "d.is_active = False; d.save()",
        env=their_env,
    )
    time.sleep(max(0.0, turned_off_from + VERSION_CHECK_SECONDS - time.monotonic()))
    refused = launch(Client(), platform, user_id="stu-far")
    assert refused.status_code == 403
    assert "has been deactivated" in refused.content.decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("platform")
def test_the_shared_version_moves_once_the_change_is_committed():
    """Moved before the commit, the version would let another process read the old rows
    again under the new version and keep them for a minute."""
    from django.db import transaction

    name = registrations_memo.REGISTRATIONS_VERSION
    before = committed_version(name)
    with transaction.atomic():
        deployment = Deployment.objects.get()
        deployment.is_active = False
        deployment.save()
        assert committed_version(name) == before  # another process still reads the old rows
    assert committed_version(name) not in (before, None)
