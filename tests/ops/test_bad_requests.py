"""Requests Django itself refuses to read get the site's page saying what is wrong, never a
bare server error (found by fuzzing the running service, 2026-12-02)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.quiz_helpers import launched_client, start

pytestmark = pytest.mark.django_db

TOKEN = "A" * 32


@pytest.mark.parametrize("charset", ["latin-1", "utf8", "UTF-16"])
def test_a_form_sent_in_another_character_set_is_a_400_page(charset):
    """Django refuses such a form (RFC 1866: always UTF-8) without marking it read, so its own
    400 page, which checks the CSRF token and reads the form again, failed as well and the
    client got a bare 500 on every form the site has."""
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.cookies["csrftoken"] = TOKEN
    response = client.post(
        "/lti/login/",
        "iss=x",
        content_type=f"application/x-www-form-urlencoded; charset={charset}",
        HTTP_X_CSRFTOKEN=TOKEN,
    )
    assert response.status_code == 400
    assert "UTF-8" in response.content.decode()


@pytest.mark.usefixtures("quiz")
def test_a_signed_in_student_sending_an_answer_in_another_character_set_loses_nothing():
    from activities.demo import enrol_demo_member, ensure_demo_placement

    placement = ensure_demo_placement()
    client = launched_client(enrol_demo_member())
    attempt = start(client, placement.pk)
    client.raise_request_exception = False
    response = client.post(
        f"/attempts/{attempt.public_id}/answer/",
        "question=1&option=1",
        content_type="application/x-www-form-urlencoded; charset=latin-1",
    )
    assert response.status_code == 400
    assert "UTF-8" in response.content.decode()
    assert not attempt.responses.exists()
