from __future__ import annotations

import pytest

from ..workers import PrivateRedis


@pytest.fixture
def private_redis(settings, tmp_path):
    """The cache on a redis-server of the test's own, which the test may stop and start."""
    redis = PrivateRedis(tmp_path)
    settings.REDIS_URL = redis.url
    settings.CACHES = {
        "default": {
            **settings.CACHES["default"],
            "BACKEND": "ops.cache.RedisCache",
            "LOCATION": redis.url,
        }
    }
    yield redis
    redis.stop()
