"""A refusal by the database itself, for tests of what a caller does when a write it could
not foresee failing fails: a trigger that refuses one row (PostgreSQL or SQLite). It lives
in the test's transaction and goes with it."""

from __future__ import annotations

from django.db import connection


def refuse_inserts(table: str, column: str, value: str) -> None:
    """From now on in this transaction, inserting a row of ``table`` whose ``column`` is
    ``value`` fails in the database."""
    condition = f"NEW.{column} = '{value}'"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION refuse_row() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$"
            )
            cursor.execute(
                f"CREATE TRIGGER refuse_row BEFORE INSERT ON {table} FOR EACH ROW "
                f"WHEN ({condition}) EXECUTE FUNCTION refuse_row()"
            )
        else:
            cursor.execute(
                f"CREATE TRIGGER refuse_row BEFORE INSERT ON {table} WHEN {condition} "
                "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
            )
