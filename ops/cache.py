"""Django's Redis cache, keeping one client per connection pool.

Django's client builds a new ``redis.Redis`` (and its table of response callbacks) for
every cache call: about 60 µs, which every request paid twice (its session and its
user). A client over a connection pool is safe to share, so one per pool does the same.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends import redis as django_redis


class RedisCacheClient(django_redis.RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(django_redis.RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = RedisCacheClient
