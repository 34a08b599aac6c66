"""Django's PostgreSQL backend (``ENGINE = "ops.postgresql"``), whose connection health check
asks the connection's socket before it asks the server, and whose cursors prepare only
statements with parameters.

With ``CONN_HEALTH_CHECKS`` Django sends ``SELECT 1`` before the first statement of every
request that reuses a connection, so that a PostgreSQL restarted meanwhile (or an
administrator ending the web's connections) costs no failed request: a round trip on every
page, login, launch and answer. A backend that ends its connection says so on the socket (its
FATAL message, then end of file), where an idle connection in autocommit has nothing to read.
So an idle socket with nothing to read is taken as usable without asking; one with something
to read gets Django's own check, which reads it (a server's notice, a TLS record) and tells a
live connection from an ended one (decision 62).

With ``prepare_threshold`` 0 (config/settings.py, decision 64) psycopg prepares every
statement the first time it runs; PostgreSQL prepares one command at a time, and Django's
schema editor sends several in one text (a migration's ``ALTER TABLE ...; SET CONSTRAINTS
...``). A statement without parameters (a migration's, a ``SET``) is one-off text that a plan
kept would not serve again: it runs unprepared.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


class ParameterPreparingCursor(base.ServerBindingCursor):
    def execute(self, query, params=None, *, prepare=None, binary=None):
        if prepare is None and not params:
            prepare = False
        return super().execute(query, params, prepare=prepare, binary=binary)


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict:
        params = super().get_connection_params()
        if params.get("cursor_factory") is base.ServerBindingCursor:
            params["cursor_factory"] = ParameterPreparingCursor
        return params

    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        try:
            socket = connection.fileno()
            poller = select.poll()
            poller.register(socket, select.POLLIN)
            waiting = poller.poll(0)
        except (OSError, ValueError):
            return False
        return not waiting or super().is_usable()
