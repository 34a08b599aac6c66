from __future__ import annotations

import pytest

from tests.workers import PrivateRedis


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


@pytest.fixture
def outbound_policy(settings):
    """The production policy: platforms on loopback, link-local and private addresses refused
    (the suite's own settings allow them because its platforms are on 127.0.0.1)."""
    settings.LTI_ALLOW_PRIVATE_PLATFORM_ADDRESSES = False
    return settings


@pytest.fixture
def moodle(platform_server):
    """A platform ready to be registered: its configuration, registration token and answer."""
    server = platform_server
    server.registration_token = "reg-token-xyz"
    server.openid_configuration = {
        "issuer": server.base,
        "authorization_endpoint": server.url("/mod/lti/auth.php"),
        "token_endpoint": server.url("/mod/lti/token.php"),
        "jwks_uri": server.url("/mod/lti/certs.php"),
        "registration_endpoint": server.url("/register"),
    }
    server.registration_reply = {
        "client_id": "client-A",
        "https://purl.imsglobal.org/spec/lti-tool-configuration": {"deployment_id": "7"},
    }
    return server
