"""The statements a request sent for itself, for tests that count them."""

from __future__ import annotations

from django.test.utils import CaptureQueriesContext


def page_statements(queries: CaptureQueriesContext) -> list[str]:
    """The captured statements, less the shared versions' read, which a process sends once a
    second on whichever request comes then (ops.process_memo)."""
    return [q["sql"] for q in queries.captured_queries if '"ops_sharedversion"' not in q["sql"]]
