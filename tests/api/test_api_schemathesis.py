"""Schemathesis against the live OpenAPI schema, with a valid write token: no generated
input may cause a 500, and every response must match the schema."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)

from api.tokens import create_token
from lti.models import Membership, Role
from tests.grades_helpers import finish_attempt, graded_placement, student


@pytest.fixture
def api_token(live_server, transactional_db, fake_lms, seed_content):  # noqa: ARG001
    from assessments.services import load_quiz

    quiz = load_quiz(seed_content).quiz
    placement = graded_placement(fake_lms, quiz)
    for number in range(3):
        finish_attempt(student(placement, f"s{number}"), placement, correct=number + 4)
    teacher = student(placement, "teacher")
    Membership.objects.filter(user=teacher).update(role=Role.STAFF)
    _, value = create_token(actor=teacher, name="fuzz", context=placement.context, can_write=True)
    return value


def test_no_generated_input_causes_a_server_error(live_server, api_token):
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    statuses = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=12, deadline=None, database=None, suppress_health_check=list(HealthCheck)
        )
        def call(case):
            response = case.call_and_validate(
                base_url=live_server.url,
                headers={"Authorization": f"Bearer {api_token}"},
                checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
            )
            statuses.append(response.status_code)

        call()
    # Generated calls both succeeded and were refused (valid and invalid input), never 5xx.
    assert {200, 201} & set(statuses)
    assert {400, 404} & set(statuses)
    assert max(statuses) < 500
