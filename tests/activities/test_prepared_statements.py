"""PostgreSQL keeps the plans of the statements a connection repeats (decision 51). A plan
kept must not break when a deploy's migration changes a table under running workers."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from activities.models import Grade
from activities.selectors import GRADE, grade_of
from tests.quiz_helpers import answer_all, start


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db(transaction=True)
def test_a_repeated_read_is_prepared_and_survives_a_column_added_under_it(
    learner_client, learner, placement
):
    attempt = start(learner_client, placement.pk)
    answer_all(learner_client, attempt, lambda _q: True)
    scores = {grade_of(learner.pk, placement.pk).score_given for _ in range(6)}
    assert scores == {8}
    assert any(
        statement.startswith("SELECT") and f"FROM {GRADE.table} WHERE" in statement
        for statement in prepared_statements()
    )

    # A migration run by a deploy, from its own connection, while this worker still serves.
    settings = connection.settings_dict
    deploy = psycopg.connect(
        dbname=settings["NAME"], user=settings["USER"], host=settings["HOST"],
        port=settings["PORT"] or 5432, autocommit=True,
    )  # fmt: skip
    table = Grade._meta.db_table
    try:
        deploy.execute(f"ALTER TABLE {table} ADD COLUMN added_by_a_deploy integer")
        assert grade_of(learner.pk, placement.pk).score_given == 8
    finally:
        deploy.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS added_by_a_deploy")
        deploy.close()


@pytest.mark.django_db(transaction=True)
def test_a_statement_is_planned_once_for_any_parameters_from_its_first_run(learner, placement):
    """A new worker's first launches paid PostgreSQL's planning for each of their statements
    (psycopg prepared a statement on its sixth run, and PostgreSQL planned a prepared one
    anew for its first five): a statement with parameters is prepared at its first run and
    planned once, generically (decision 64). One without parameters runs as it is: a
    migration's text holds several commands, which no prepared statement can."""
    connection.close()  # a new connection, as a new worker's
    assert grade_of(learner.pk, placement.pk) is None  # its first run
    prepared = [text for text in prepared_statements() if f"FROM {GRADE.table} WHERE" in text]
    assert len(prepared) == 1, prepared
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_generic_plan"
        cursor.execute("SELECT 1; SELECT 2")  # several commands, no parameters: not refused
        assert cursor.fetchone() == (1,)
