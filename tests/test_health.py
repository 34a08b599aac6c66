import pytest

from config.celery import app as celery_app

pytestmark = pytest.mark.django_db


def test_healthz_reports_database_and_broker(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}


def test_healthz_is_503_with_the_reason_when_the_broker_is_unreachable(client, monkeypatch):
    # A port nothing listens on: the broker is "down".
    monkeypatch.setattr(celery_app.conf, "broker_url", "redis://127.0.0.1:9/0")
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable" and body["database"] == "ok"
    assert "Error" in body["broker"] or "refused" in body["broker"].lower()
