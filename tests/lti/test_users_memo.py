"""The signed-in user a process keeps between requests (lti.backends, ops.process_memo): a
page of a launched session waits on no cache read for its user, and deactivating the user
still takes effect at once here and within a second in every other process."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.test import Client

from lti.backends import CachedUserBackend
from ops.process_memo import VERSION_CHECK_SECONDS
from tests.lti_platform import launch
from tests.workers import in_another_process


def _launched(platform, user_id: str) -> tuple[Client, str]:
    """A browser launched into the course, and the page its launch landed on."""
    browser = Client()
    launched = launch(browser, platform, user_id=user_id)
    assert launched.status_code == 302
    landing = launched["Location"]
    assert browser.get(landing).status_code == 200
    return browser, landing


@pytest.mark.django_db
def test_a_signed_in_page_reads_its_user_from_the_process_not_the_cache(platform, monkeypatch):
    browser, landing = _launched(platform, "stu-kept")
    user_reads = []
    real_get = cache.get

    def counted(key, *args, **kwargs):
        if key.startswith("auth-user:"):
            user_reads.append(key)
        return real_get(key, *args, **kwargs)

    monkeypatch.setattr(cache, "get", counted)
    for _ in range(3):
        assert browser.get(landing).status_code == 200
    assert user_reads == []


@pytest.mark.django_db
def test_each_request_gets_a_user_of_its_own(platform):
    """A page may set attributes on request.user (the permissions' cache, for one): the next
    request must not find them."""
    _launched(platform, "stu-own")
    user_id = User.objects.get(lti_user__sub="stu-own").pk
    backend = CachedUserBackend()
    first = backend.get_user(user_id)
    first.first_name = "Changed by a page"
    second = backend.get_user(user_id)
    assert second is not first
    assert second.first_name != "Changed by a page"


@pytest.mark.django_db
def test_a_user_deactivated_here_is_refused_on_the_next_request(platform):
    browser, landing = _launched(platform, "stu-here")
    user = User.objects.get(lti_user__sub="stu-here")
    user.is_active = False
    user.save()
    refused = browser.get(landing)
    assert refused.status_code == 403
    assert "You are not signed in" in refused.content.decode()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_user_deactivated_in_another_process_is_refused_here_within_a_second(platform):
    """The process that deactivates the user (the admin's, a command) bumps the shared
    version; this one, which keeps the user, reads it again within a second and refuses the
    next page."""
    browser, landing = _launched(platform, "stu-far")
    user_id = User.objects.get(lti_user__sub="stu-far").pk
    deactivated_from = time.monotonic()
    in_another_process(
        "from django.contrib.auth.models import User; "
        f"user = User.objects.get(pk={user_id}); user.is_active = False; user.save()"
    )
    time.sleep(max(0.0, deactivated_from + VERSION_CHECK_SECONDS - time.monotonic()))
    refused = browser.get(landing)
    assert refused.status_code == 403
    assert "You are not signed in" in refused.content.decode()
