"""The Redis cache: one Redis client per cache object (so per thread, as Django keeps cache
objects), which answers as a miss when Redis is down instead of failing the request.

Django's own Redis backend builds a new ``redis.Redis`` for every call (60–85 µs here of
redis-py setting up its reply callbacks, twice on every page of a launched session: the
session and the user). This backend is Django's documented
custom-backend API (``BaseCache``) over one client: the same keys, timeouts and values as
Django's (integers stored as themselves so that ``incr`` is Redis's, anything else pickled),
so entries written by either read the same.

Everything in the cache can be lost (decision 29): sessions are in the database too, the
signed-in user is read from the database, LTI login state and nonces go to the database
while Redis is away, and rate limits let requests through. So a call that cannot reach
Redis reads as a miss (``get`` gives the default, ``add`` and ``delete`` give False, ``set``
keeps nothing), is logged, and for ``RETRY_SECONDS`` afterwards this process does not try
Redis at all, so an outage costs no connection timeout per call. ``is_down`` tells callers
that must tell "not there" from "not reachable" (an ``add`` that gave False) which it was.
"""

from __future__ import annotations

import logging
import pickle
import threading
import time
from collections.abc import Callable
from functools import wraps
from typing import Any

import redis
from django.core.cache import caches
from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

RETRY_SECONDS = 2.0
UNREACHABLE = (RedisConnectionError, RedisTimeoutError)

# Cache objects are per thread; whether Redis is reachable is known per process and server.
_down_until: dict[str, float] = {}
_lock = threading.Lock()


def _missing_key(*args: Any, **kwargs: Any) -> Any:
    raise ValueError("Key not found (the cache is unreachable).")


def _default_of(*args: Any, **kwargs: Any) -> Any:
    # get(key, default=None, version=None)
    return kwargs.get("default", args[1] if len(args) > 1 else None)


# What each operation answers while Redis is unreachable: what it answers for a key that
# is not there.
_MISS: dict[str, Callable[..., Any]] = {
    "get": _default_of,
    "get_many": lambda *a, **k: {},
    "has_key": lambda *a, **k: False,
    "add": lambda *a, **k: False,
    "set": lambda *a, **k: None,
    "set_many": lambda keys, *a, **k: list(keys),
    "touch": lambda *a, **k: False,
    "delete": lambda *a, **k: False,
    "delete_many": lambda *a, **k: None,
    "incr": _missing_key,
    "take": lambda *a, **k: None,
    "clear": lambda *a, **k: None,
}


# Django's incr checks that the key is there, then adds to it: a key whose timeout ran out in
# between came back without one. One script does both in one step on the server.
_INCR_EXISTING = """
if redis.call('EXISTS', KEYS[1]) == 1 then
    return redis.call('INCRBY', KEYS[1], ARGV[1])
end
return false
"""


def _falling_back(name: str, operation: Callable[..., Any]) -> Callable[..., Any]:
    miss = _MISS[name]

    @wraps(operation)
    def call(self: RedisCache, *args: Any, **kwargs: Any) -> Any:
        if self.is_down():
            return miss(*args, **kwargs)
        try:
            return operation(self, *args, **kwargs)
        except UNREACHABLE as error:
            self._went_down(name, error)
            return miss(*args, **kwargs)

    return call


class RedisCache(BaseCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(params)
        self._server = server
        self._client = redis.Redis.from_url(server, **params.get("OPTIONS", {}))
        self._incr_existing = self._client.register_script(_INCR_EXISTING)

    @staticmethod
    def _dumps(value: Any) -> Any:
        # As Django's Redis backend stores values: an int as itself (so that incr is
        # Redis's INCR), anything else pickled.
        return value if type(value) is int else pickle.dumps(value, pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def _loads(data: bytes) -> Any:
        try:
            return int(data)
        except ValueError:
            return pickle.loads(data)

    def get_backend_timeout(self, timeout: Any = DEFAULT_TIMEOUT) -> int | None:
        # None keeps the key; zero or less deletes it (Django's Redis rule).
        if timeout == DEFAULT_TIMEOUT:
            timeout = self.default_timeout
        return None if timeout is None else max(0, int(timeout))

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        value = self._client.get(self.make_and_validate_key(key, version=version))
        return default if value is None else self._loads(value)

    def get_many(self, keys: Any, version: int | None = None) -> dict[Any, Any]:
        names = {self.make_and_validate_key(key, version=version): key for key in keys}
        values = self._client.mget(list(names)) if names else []
        loads = self._loads
        return {
            names[name]: loads(v) for name, v in zip(names, values, strict=True) if v is not None
        }

    def has_key(self, key: Any, version: int | None = None) -> bool:
        return bool(self._client.exists(self.make_and_validate_key(key, version=version)))

    def add(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> bool:
        name = self.make_and_validate_key(key, version=version)
        value, seconds = self._dumps(value), self.get_backend_timeout(timeout)
        if seconds == 0:  # added and gone at once
            added = bool(self._client.set(name, value, nx=True))
            if added:
                self._client.delete(name)
            return added
        return bool(self._client.set(name, value, ex=seconds, nx=True))

    def set(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> None:
        name = self.make_and_validate_key(key, version=version)
        seconds = self.get_backend_timeout(timeout)
        if seconds == 0:
            self._client.delete(name)
        else:
            self._client.set(name, self._dumps(value), ex=seconds)

    def set_many(
        self, data: dict[Any, Any], timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> list[Any]:
        if not data:
            return []
        seconds = self.get_backend_timeout(timeout)
        pipeline = self._client.pipeline()
        for key, value in data.items():
            name = self.make_and_validate_key(key, version=version)
            if seconds == 0:
                pipeline.delete(name)
            else:
                pipeline.set(name, self._dumps(value), ex=seconds)
        pipeline.execute()
        return []

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        name = self.make_and_validate_key(key, version=version)
        seconds = self.get_backend_timeout(timeout)
        if seconds is None:
            return bool(self._client.persist(name))
        return bool(self._client.expire(name, seconds))

    def delete(self, key: Any, version: int | None = None) -> bool:
        return bool(self._client.delete(self.make_and_validate_key(key, version=version)))

    def delete_many(self, keys: Any, version: int | None = None) -> None:
        names = [self.make_and_validate_key(key, version=version) for key in keys]
        if names:
            self._client.delete(*names)

    def take(self, key: Any, version: int | None = None) -> Any:
        """The entry, removed in the same step (Redis's GETDEL): of callers racing for it,
        one gets it. None when it is not there."""
        value = self._client.getdel(self.make_and_validate_key(key, version=version))
        return None if value is None else self._loads(value)

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        name = self.make_and_validate_key(key, version=version)
        value = self._incr_existing(keys=[name], args=[delta])
        if value is None:
            raise ValueError(f"Key '{key}' not found.")
        return int(value)

    def clear(self) -> None:
        self._client.flushdb()

    def is_down(self) -> bool:
        return time.monotonic() < _down_until.get(self._server, 0.0)

    def _went_down(self, operation: str, error: Exception) -> None:
        with _lock:
            first = not self.is_down()
            _down_until[self._server] = time.monotonic() + RETRY_SECONDS
        if first:
            logger.warning(
                "cache unreachable (%s: %s); serving without it for %.0f s",
                operation,
                type(error).__name__,
                RETRY_SECONDS,
            )


for _name in _MISS:
    setattr(RedisCache, _name, _falling_back(_name, getattr(RedisCache, _name)))


def take(key: str, alias: str = "default") -> Any:
    """The entry under ``key``, removed: of requests racing for it, one gets it (None when
    it is not there). One round trip on Redis; another backend (the local run's file cache)
    reads, and the caller whose delete removed it is the one that gets it."""
    backend = caches[alias]
    if isinstance(backend, RedisCache):
        return backend.take(key)
    value = backend.get(key)
    return value if value is not None and backend.delete(key) else None


def is_down(alias: str = "default") -> bool:
    """Whether the cache is a Redis that this process cannot reach just now."""
    backend = caches[alias]
    return isinstance(backend, RedisCache) and backend.is_down()
