"""Django's Redis cache that answers as a miss when Redis is down instead of failing the
request.

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
import threading
import time
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.cache import caches
from django.core.cache.backends import redis as django_redis
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
    "clear": lambda *a, **k: None,
}


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


class RedisCache(django_redis.RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._server = server

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
    setattr(RedisCache, _name, _falling_back(_name, getattr(django_redis.RedisCache, _name)))


def is_down(alias: str = "default") -> bool:
    """Whether the cache is a Redis that this process cannot reach just now."""
    backend = caches[alias]
    return isinstance(backend, RedisCache) and backend.is_down()
