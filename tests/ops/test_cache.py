"""The Redis cache backend (ops.cache): Django's cache API over one Redis client, with the
same stored format as Django's own Redis backend."""

from __future__ import annotations

import contextlib
import threading
import uuid

import pytest
import redis
from django.conf import settings
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

from ops.cache import RedisCache


@pytest.fixture
def pair():
    """This backend and Django's own on the same Redis and key prefix of their own."""
    params = {"KEY_PREFIX": f"cache-test-{uuid.uuid4().hex[:8]}", "TIMEOUT": 60}
    ours = RedisCache(settings.REDIS_URL, params)
    django_cache = DjangoRedisCache(settings.REDIS_URL, params)
    yield ours, django_cache
    ours.delete_many(["a", "b", "c", "counter", "gone", "kept"])


def test_entries_read_the_same_through_django_s_backend_and_this_one(pair):
    ours, django_cache = pair
    django_cache.set("a", {"session": [1, "two"]})
    django_cache.set("counter", 41)
    assert ours.get("a") == {"session": [1, "two"]}
    assert ours.incr("counter") == 42
    ours.set("b", ("tuple", 3.5))
    assert django_cache.get("b") == ("tuple", 3.5)
    assert django_cache.get("counter") == 42


def test_the_cache_api_answers_as_django_s_does(pair):
    ours, _ = pair
    assert ours.get("a", "default") == "default"
    assert ours.add("a", 1) is True
    assert ours.add("a", 2) is False
    assert ours.get("a") == 1
    assert ours.has_key("a")
    ours.set_many({"b": "bee", "c": True})
    assert ours.get_many(["a", "b", "c", "missing"]) == {"a": 1, "b": "bee", "c": True}
    assert ours.decr("a") == 0
    with pytest.raises(ValueError, match="not found"):
        ours.incr("missing")
    ours.set("gone", "soon", timeout=0)  # zero deletes, as in Django
    assert ours.get("gone") is None
    ours.set("kept", "a while", timeout=30)
    assert ours.touch("kept", None) is True
    assert ours.delete("kept") is True
    ours.delete_many(["a", "b"])
    assert ours.get_many(["a", "b", "c"]) == {"c": True}


def test_one_client_serves_every_call(pair, monkeypatch):
    """redis-py's client is costly to build (its reply callbacks): it is built once per
    cache object, not once per call as Django's backend does."""
    ours, _ = pair
    built = []
    real_init = redis.Redis.__init__

    def counted(self, *args, **kwargs):
        built.append(1)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "__init__", counted)
    ours.set("a", 1)
    for _ in range(5):
        ours.get("a")
    assert built == []


def test_replies_are_parsed_by_hiredis(pair):
    """The install carries hiredis (redis[hiredis]), so redis-py parses replies in C: a
    few per cent of every launched page's CPU (docs/benchmarks.md)."""
    from redis._parsers import _HiredisParser

    ours, _ = pair
    ours.set("a", 1)
    connection = ours._client.connection_pool.get_connection()
    try:
        assert isinstance(connection._parser, _HiredisParser)
    finally:
        ours._client.connection_pool.release(connection)


def test_an_incr_racing_its_key_s_expiry_leaves_no_key_without_a_timeout(pair, monkeypatch):
    """A rate limit's window counter expires a moment after its window. An incr that checks
    the key, then adds to it, could meet the expiry in between and create the key anew with
    no timeout: a counter kept for ever. The check and the addition are one step."""
    ours, _ = pair
    ours.set("counter", 5, timeout=30)
    name = ours.make_and_validate_key("counter")
    client = ours._client
    real_exists = client.exists

    def exists_then_expires(*names):
        found = real_exists(*names)
        client.delete(name)  # the key's timeout runs out right after it was seen
        return found

    monkeypatch.setattr(client, "exists", exists_then_expires)
    # Gone before the addition would be "not found", as Django's incr says.
    with contextlib.suppress(ValueError):
        ours.incr("counter")
    assert client.ttl(name) != -1  # absent (-2) or with its timeout, never without one


@pytest.mark.parametrize("backend", ["ops.cache.RedisCache", "filebased.FileBasedCache"])
def test_of_requests_racing_to_take_an_entry_one_gets_it(tmp_path, backend):
    """A one-time entry (a login's state) is taken: read and removed in one step, so that of
    requests racing for it exactly one gets it, on Redis (GETDEL) and on the local run's file
    cache (the delete decides)."""
    from django.core.cache import caches
    from django.test import override_settings

    from ops import cache as ops_cache

    racing = {
        "BACKEND": backend.replace("filebased.", "django.core.cache.backends.filebased."),
        "LOCATION": settings.REDIS_URL if "Redis" in backend else str(tmp_path),
        "KEY_PREFIX": f"take-test-{uuid.uuid4().hex[:8]}",
    }
    with override_settings(CACHES={**settings.CACHES, "racing": racing}):
        for round_ in range(20):
            caches["racing"].set("one-time", {"round": round_}, 30)
            barrier = threading.Barrier(4)
            taken: list = []

            def take(barrier: threading.Barrier = barrier, taken: list = taken) -> None:
                barrier.wait()
                value = ops_cache.take("one-time", alias="racing")
                if value is not None:
                    taken.append(value)

            threads = [threading.Thread(target=take) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert taken == [{"round": round_}]
            assert caches["racing"].get("one-time") is None
