"""Finding 9 (and the demo's entry, finding 6): rate limits per client address on OIDC
login, launch, dynamic registration, the demo entry and admin sign-in; an API token is
throttled before its failures are answered; no limiter fails when Redis is down.

The limits are set low here; tests/conftest.py raises them for the rest of the suite."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import TypeVar

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client, RequestFactory
from rest_framework import exceptions

from api.authentication import ApiTokenAuthentication
from api.tokens import create_token
from lti.models import Membership, Role
from ops.throttling import AddressThrottle
from tests.grades_helpers import graded_placement, student

pytestmark = pytest.mark.django_db

LIMIT = 3
T = TypeVar("T")
_addresses = (f"10.77.{n // 250}.{n % 250 + 1}" for n in itertools.count())


def a_new_address() -> str:
    """An address of its own per test: counts live in the cache and outlast a test."""
    return next(_addresses)


@pytest.fixture
def low_limits(settings):
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]}
    for scope in ("lti_login", "lti_launch", "lti_registration", "demo", "api_token_failures"):
        rates[scope] = f"{LIMIT}/min"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    settings.AXES_FAILURE_LIMIT = LIMIT


# (case, method, path, data)
LIMITED = [
    ("OIDC login (GET)", "get", "/lti/login/", {"iss": "https://lms.example"}),
    ("OIDC login (POST)", "post", "/lti/login/", {"iss": "https://lms.example"}),
    ("launch", "post", "/lti/launch/", {"state": "made-up", "id_token": "x.y.z"}),
    ("dynamic registration", "get", "/lti/register/", {"openid_configuration": "x"}),
    ("demo entry", "post", "/lti/demo/launch/", {"role": "learner"}),
]


@pytest.mark.parametrize(("case", "method", "path", "data"), LIMITED, ids=[c[0] for c in LIMITED])
@pytest.mark.usefixtures("low_limits", "quiz")
def test_an_address_is_limited_and_others_are_not(case, method, path, data):
    address = a_new_address()
    client = Client(REMOTE_ADDR=address)
    for _ in range(LIMIT):
        response = getattr(client, method)(path, data)
        assert response.status_code != 429, case
    refused = getattr(client, method)(path, data)
    assert refused.status_code == 429, (case, refused.status_code)
    assert int(refused["Retry-After"]) > 0
    assert "Too many requests" in refused.content.decode()
    other = getattr(Client(REMOTE_ADDR=a_new_address()), method)(path, data)
    assert other.status_code != 429, case


@pytest.mark.usefixtures("low_limits", "quiz")
def test_forwarded_for_does_not_change_the_address_without_a_trusted_proxy():
    address = a_new_address()
    for number in range(LIMIT + 1):
        response = Client(REMOTE_ADDR=address, HTTP_X_FORWARDED_FOR=f"192.0.2.{number}").get(
            "/lti/login/"
        )
    assert response.status_code == 429


@pytest.mark.usefixtures("low_limits", "quiz")
def test_behind_a_trusted_proxy_the_forwarded_address_counts(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    proxy, client_address = a_new_address(), a_new_address()
    for _ in range(LIMIT):
        Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=client_address).get("/lti/login/")
    limited = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=client_address).get("/lti/login/")
    assert limited.status_code == 429
    other = Client(REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=a_new_address()).get("/lti/login/")
    assert other.status_code != 429


@pytest.mark.usefixtures("low_limits")
def test_admin_sign_in_locks_an_address_out_after_failures():
    get_user_model().objects.create_superuser("root", "root@example.edu", "a-Good-passw0rd")
    address = a_new_address()
    client = Client(REMOTE_ADDR=address)
    for _ in range(LIMIT - 1):
        wrong = client.post("/admin/login/", {"username": "root", "password": "wrong"})
        assert wrong.status_code == 200  # the form again, with its error
    last = client.post("/admin/login/", {"username": "root", "password": "wrong"})
    assert last.status_code == 429  # the failure that reaches the limit locks the address
    locked = client.post("/admin/login/", {"username": "root", "password": "a-Good-passw0rd"})
    assert locked.status_code == 429
    assert "Too many requests" in locked.content.decode()
    other = Client(REMOTE_ADDR=a_new_address())
    signed_in = other.post("/admin/login/", {"username": "root", "password": "a-Good-passw0rd"})
    assert signed_in.status_code == 302


@pytest.mark.usefixtures("low_limits")
def test_an_invalid_bearer_token_is_throttled_before_it_is_refused(fake_lms, quiz):
    placement = graded_placement(fake_lms, quiz)
    teacher = student(placement, "teacher")
    Membership.objects.filter(user=teacher).update(role=Role.STAFF)
    _, good = create_token(actor=teacher, name="t", context=placement.context, can_write=False)
    address = a_new_address()

    def call(token: str, at: str = address):
        return Client(REMOTE_ADDR=at, HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/v1/grades/")

    assert call(good).status_code == 200  # successes are not counted
    for _ in range(LIMIT):
        assert call("gcq_deadbeef_guess").status_code == 401
    for token in ("gcq_deadbeef_guess", good):
        throttled = call(token)
        assert throttled.status_code == 429
        assert throttled.json()["error"]["status"] == 429
    assert call(good, a_new_address()).status_code == 200


@pytest.mark.parametrize(("case", "method", "path", "data"), LIMITED, ids=[c[0] for c in LIMITED])
@pytest.mark.usefixtures("low_limits", "quiz")
def test_limits_let_requests_through_while_redis_is_down(private_redis, case, method, path, data):
    private_redis.stop()
    client = Client(REMOTE_ADDR=a_new_address())
    for _ in range(LIMIT + 2):
        response = getattr(client, method)(path, data)
        assert response.status_code < 500, (case, response.status_code)
        assert response.status_code != 429, case


def at_once(burst: int, work: Callable[[], T]) -> list[T]:
    """``work`` run by ``burst`` threads released together; what each returned."""
    start = threading.Barrier(burst)
    outcomes: list[T] = []

    def one() -> None:
        start.wait()
        try:
            outcomes.append(work())
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(burst)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


@pytest.mark.usefixtures("low_limits")
def test_requests_arriving_together_cannot_share_one_count():
    """An attacker sending a burst at once: each request must be counted, not several of them
    reading the same count and each writing it back one higher."""
    request = RequestFactory().post("/lti/login/", REMOTE_ADDR=a_new_address())
    allowed = at_once(24, lambda: AddressThrottle("lti_login").allow_request(request, None))
    assert allowed.count(True) == LIMIT


@pytest.mark.usefixtures("low_limits")
def test_token_guesses_arriving_together_are_looked_at_no_more_than_the_limit():
    """A burst of guesses sent at once: each takes its place in the count before its token is
    looked at, so no more than the limit are checked, however many arrive together."""
    request = RequestFactory().get(
        "/api/v1/grades/", REMOTE_ADDR=a_new_address(), HTTP_AUTHORIZATION="Bearer gcq_x_guess"
    )

    def guess() -> str:
        try:
            ApiTokenAuthentication().authenticate(request)
        except exceptions.Throttled:
            return "throttled"
        except exceptions.AuthenticationFailed:
            return "looked at"
        return "accepted"

    outcomes = at_once(24, guess)
    assert outcomes.count("looked at") == LIMIT, outcomes
    assert outcomes.count("throttled") == 24 - LIMIT
