from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings
from django.test import Client

from activities.demo import enrol_demo_member
from assessments.content import SEED_QUIZ_FILE, read_quiz_file
from assessments.models import Quiz
from assessments.services import load_quiz
from lti.models import Membership, ResourceLink, Role

from .quiz_helpers import launched_client

# One thread per torch process (the test processes and the lab runners and workers they
# start): the suite runs two test processes on two cores, and torch's default of a thread per
# core in each made the threads of one wait on the other's: beside one busy process, 30
# measurements of the transformer lab took 15.5 s with two threads against 3.9 s with one.
# Torch reads it when first imported, which is after this file (by the test modules).
os.environ.setdefault("OMP_NUM_THREADS", "1")

# One cache namespace per test process and run (inherited by the workers and servers the
# tests start): each xdist process has a database of its own where ids repeat, and the
# cache holds entries by id (the signed-in user) that must never cross between them.
os.environ["CACHE_KEY_PREFIX"] = f"test-{uuid.uuid4().hex[:12]}"
settings.CACHES["default"]["KEY_PREFIX"] = os.environ["CACHE_KEY_PREFIX"]
# The test platforms and LMSs are on 127.0.0.1, which the outbound policy refuses by default
# (tests/security turns it off again to prove the refusals); workers inherit it.
os.environ["LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES"] = "1"
settings.LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES = True

# The suite launches, signs in and enters the demo many times from 127.0.0.1: the limits
# per address are raised here (and for the servers and workers the tests start), and
# tests/security/test_rate_limits.py tests them with low values. The demo is on, as in
# `make run`.
SUITE_RATES = {
    "THROTTLE_LTI_LOGIN": "lti_login",
    "THROTTLE_LTI_LAUNCH": "lti_launch",
    "THROTTLE_LTI_REGISTRATION": "lti_registration",
    "THROTTLE_DEMO": "demo",
    "API_THROTTLE_TOKEN_FAILURES": "api_token_failures",
}
for variable, scope in SUITE_RATES.items():
    os.environ[variable] = "100000/min"
    settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"][scope] = os.environ[variable]
os.environ["DEMO_MODE"] = "1"
settings.DEMO_MODE = True

# What a test starts decides whether `make test-fast` runs it. The markers follow from what a
# test uses where that tells (its fixtures; torch in its module), the rest are set by hand, and
# _marked_for_what_it_starts fails an unmarked test that starts a process (the lab runner is
# one: labs/execution.py), so the fast subset cannot quietly come to need a worker or torch.
BROWSER_FIXTURES = {"playwright", "browser", "page"}
WORKER_FIXTURES = {"private_redis"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    torch = sys.modules.get("torch")
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if fixtures & WORKER_FIXTURES:
            item.add_marker(pytest.mark.worker)
        if torch is not None and getattr(getattr(item, "module", None), "torch", None) is torch:
            item.add_marker(pytest.mark.torch)


@pytest.fixture(autouse=True)
def _marked_for_what_it_starts(request, monkeypatch):
    if not {marker.name for marker in request.node.iter_markers()} & {"worker", "browser", "torch"}:
        name = request.node.nodeid

        def refuse(*args, **kwargs):
            raise AssertionError(
                f"{name} starts a process: mark it @pytest.mark.worker, or "
                "@pytest.mark.torch when the process is the lab runner"
            )

        monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


@pytest.fixture(autouse=True)
def _process_memos_forgotten():
    """A test's rows (registrations, users) are rolled back at its end, which fires no
    signal: the next test must not find them kept in this process (ops.process_memo)."""
    from ops.process_memo import ProcessMemo

    ProcessMemo.forget_all()


@pytest.fixture(scope="session")
def seed_content():
    return read_quiz_file(SEED_QUIZ_FILE)


@pytest.fixture
def quiz(db, seed_content) -> Quiz:  # noqa: ARG001
    return load_quiz(seed_content).quiz


@pytest.fixture
def learner_membership(quiz) -> Membership:  # noqa: ARG001
    return enrol_demo_member(Role.LEARNER)


@pytest.fixture
def learner(learner_membership):
    return learner_membership.user


@pytest.fixture
def placement(learner_membership) -> ResourceLink:
    return learner_membership.context.resource_links.get()


@pytest.fixture
def learner_client(learner_membership) -> Client:
    return launched_client(learner_membership)


@pytest.fixture
def platform_server():
    from lti.platform_keys import forget_keyset

    from .lti_platform import PlatformServer

    server = PlatformServer()
    # The cache (Redis) outlives tests: a port reused from an earlier test must not bring
    # that test's keyset or refetch limit with it.
    forget_keyset(server.url("/jwks"))
    yield server
    server.stop()


@pytest.fixture
def platform(platform_server, quiz, django_capture_on_commit_callbacks):  # noqa: ARG001
    """A registered LMS (issuer, client id, deployment "1") driving the tool, registered as
    if committed before the test: a transaction that changed the registrations reads them
    from the database until it ends (ops.process_memo), and a test's never does."""
    from .lti_platform import Platform

    lms = Platform(platform_server)
    with django_capture_on_commit_callbacks(execute=True):
        lms.register_in_tool()
    return lms


@pytest.fixture(scope="session")
def playwright():
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running in this thread for the session;
    # the tests' own ORM calls are still plain synchronous code.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as instance:
        yield instance


@pytest.fixture(scope="session")
def browser(playwright):
    from .browser import CHROMIUM, CHROMIUM_ARGS

    chromium = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    yield chromium
    chromium.close()


@pytest.fixture
def page(browser, live_server, transactional_db, seed_content):  # noqa: ARG001
    """A fresh browser context on the live server, with the seed quiz loaded."""
    load_quiz(seed_content)
    context = browser.new_context(locale="en-US")
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    yield tab
    context.close()


@pytest.fixture
def fake_lms():
    from lti.keys import published_jwks

    from .fake_lms import FakeLms

    lms = FakeLms()
    lms.tool_jwks = published_jwks()
    yield lms
    lms.stop()
