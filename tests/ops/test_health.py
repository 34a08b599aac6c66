"""Liveness and readiness probes against real services: a PostgreSQL port with nothing
behind it, and a private redis-server stopped and started again."""

import pytest
from django.db import connection

from config.celery import app as celery_app
from tests.workers import PrivateRedis

pytestmark = pytest.mark.django_db


def test_healthz_is_liveness_only(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.parametrize("probe", ["/healthz", "/readyz"])
def test_a_probe_answers_head_as_it_answers_get(client, probe):
    """Found by review: some load balancers probe with HEAD, which was refused (405)."""
    got = client.get(probe)
    head = client.head(probe)
    assert head.status_code == got.status_code == 200
    assert head.content == b""


def test_readyz_reports_every_dependency(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ready",
        "database": "ok",
        "redis": "ok",
        "broker": "ok",
        "migrations": "ok",
    }


@pytest.mark.worker
def test_readyz_stays_ready_but_degraded_while_redis_is_down(
    client, settings, tmp_path, monkeypatch
):
    """Every instance shares Redis and serves without it (decision 29): its outage must not
    take them all out of rotation, but the probe says what is missing."""
    redis = PrivateRedis(tmp_path)
    settings.REDIS_URL = redis.url
    monkeypatch.setattr(celery_app.conf, "broker_url", redis.url)
    try:
        assert client.get("/readyz").json()["status"] == "ready"
        redis.stop()
        down = client.get("/readyz")
        assert down.status_code == 200
        body = down.json()
        assert body["status"] == "degraded"
        assert body["database"] == "ok"
        assert body["redis"] == "unavailable (ConnectionError)"
        assert "127.0.0.1" not in down.content.decode()  # no addresses in a public probe
        assert body["broker"] != "ok"
        redis.start()
        assert client.get("/readyz").json()["status"] == "ready"
    finally:
        redis.stop()


@pytest.mark.django_db(transaction=True)
def test_readyz_fails_while_the_database_is_unreachable_and_recovers(client):
    from lti import registrations_memo

    # No framing origins known: the middleware must not need the database.
    registrations_memo.forget()
    real_port = connection.settings_dict["PORT"]
    connection.close()
    connection.settings_dict["PORT"] = "9"  # nothing listens there: the database is "down"
    try:
        down = client.get("/readyz")
        assert down.status_code == 503
        body = down.json()
        assert body["database"] == "unavailable (OperationalError)"
        assert body["migrations"].startswith("unknown")
    finally:
        connection.close()
        connection.settings_dict["PORT"] = real_port
    assert client.get("/readyz").status_code == 200


def test_readyz_names_unapplied_migrations(client, monkeypatch):
    from django.db.migrations.recorder import MigrationRecorder

    monkeypatch.setattr("config.health._migrations_applied", False)
    MigrationRecorder.Migration.objects.filter(app="labs").delete()
    response = client.get("/readyz")
    assert response.status_code == 503
    assert "labs.0001_initial" in response.json()["migrations"]


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "10.213.87.5:8000", "web:8000"])
def test_probes_answer_by_address_behind_a_production_host_list(client, settings, host):
    """A health check or a load balancer probes by address, which ALLOWED_HOSTS does not list;
    Django's host check answered 400 and the web container stayed unhealthy."""
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["quiz.example.edu"]
    settings.SECURE_SSL_REDIRECT = True
    settings.METRICS_TOKEN = "metrics-secret"
    assert client.get("/healthz", HTTP_HOST=host).status_code == 200
    ready = client.get("/readyz", HTTP_HOST=host)
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"
    scraped = client.get("/metrics", HTTP_HOST=host, HTTP_AUTHORIZATION="Bearer metrics-secret")
    assert scraped.status_code == 200
    assert client.get("/metrics", HTTP_HOST=host).status_code == 403  # still needs its token
    # Everything else still refuses a host that is not listed, and redirects to HTTPS.
    assert client.get("/", HTTP_HOST=host).status_code == 400
    assert client.get("/healthz/", HTTP_HOST=host).status_code == 400
    assert client.get("/", HTTP_HOST="quiz.example.edu").status_code == 301
