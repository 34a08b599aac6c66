"""Finding 8: every malformed body gets the API's one JSON error format with a 4xx."""

from __future__ import annotations

import pytest
from django.test import Client

from api.tokens import create_token
from lti.models import Membership, Role
from tests.grades_helpers import graded_placement, student

pytestmark = pytest.mark.django_db

DEEP = 100_000

# (case, content type, body, expected status)
BODIES: list[tuple[str, str, bytes, int]] = [
    ("deeply nested arrays", "application/json", b"[" * DEEP + b"]" * DEEP, 400),
    ("deeply nested objects", "application/json", b'{"a":' * DEEP + b"1" + b"}" * DEEP, 400),
    ("nested past the API's depth", "application/json", b"[" * 40 + b"1" + b"]" * 40, 400),
    ("oversize body (3 MB)", "application/json", b'{"pad": "' + b"x" * 3_000_000 + b'"}', 413),
    ("wrong content type", "text/plain", b'{"placement": 1}', 415),
    ("a form instead of JSON", "application/x-www-form-urlencoded", b"placement=1", 415),
    ("invalid UTF-8", "application/json", b'{"placement": "\xff\xfe"}', 400),
    ("malformed JSON", "application/json", b'{"placement": ', 400),
    ("NaN", "application/json", b'{"placement": NaN}', 400),
    ("an integer of 5000 digits", "application/json", b'{"placement": ' + b"7" * 5000 + b"}", 400),
    ("a JSON string, not an object", "application/json", b'"placement"', 400),
]


@pytest.fixture
def writer(fake_lms, quiz) -> Client:
    placement = graded_placement(fake_lms, quiz)
    teacher = student(placement, "teacher")
    Membership.objects.filter(user=teacher).update(role=Role.STAFF)
    _, value = create_token(actor=teacher, name="w", context=placement.context, can_write=True)
    return Client(HTTP_AUTHORIZATION=f"Bearer {value}")


@pytest.mark.parametrize(
    ("case", "content_type", "body", "status"), BODIES, ids=[b[0] for b in BODIES]
)
@pytest.mark.parametrize("url", ["/api/v1/regrades/", "/api/v1/overrides/"])
def test_a_malformed_body_gets_the_json_error_format(writer, url, case, content_type, body, status):
    response = writer.generic("POST", url, body, content_type=content_type)
    assert response.status_code == status, (case, response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), case
    error = response.json()["error"]
    assert error["status"] == status, error
    assert error["code"], error
    assert error["message"], error


UTF_16 = '{"placement": 1, "reason": "ré"}'.encode("utf-16")  # with its byte order mark


@pytest.mark.parametrize(
    ("case", "content_type", "body", "named"),
    [
        ("declared UTF-16", "application/json; charset=utf-16", UTF_16, "utf-16"),
        (
            "declared Latin-1",
            "application/json; charset=ISO-8859-1",
            b'{"r": "r\xe9"}',
            "iso-8859-1",
        ),
        ("UTF-16 by its byte order mark", "application/json", UTF_16, "UTF-16"),
    ],
)
def test_a_body_in_another_encoding_is_refused_by_its_encoding(
    writer, case, content_type, body, named
):
    """JSON between systems is UTF-8 (RFC 8259 §8.1): a body in another encoding is refused
    naming the one it came in, not as broken UTF-8."""
    response = writer.generic("POST", "/api/v1/overrides/", body, content_type=content_type)
    assert response.status_code == 400, case
    message = response.json()["error"]["message"]
    assert "UTF-8" in message, message
    assert named.lower() in message.lower(), message
    assert "not valid UTF-8 (byte" not in message, message
