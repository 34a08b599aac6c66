"""Django's PostgreSQL backend (``ENGINE = "ops.postgresql"``), whose connection health check
asks the connection's socket before it asks the server.

With ``CONN_HEALTH_CHECKS`` Django sends ``SELECT 1`` before the first statement of every
request that reuses a connection, so that a PostgreSQL restarted meanwhile (or an
administrator ending the web's connections) costs no failed request: a round trip on every
page, login, launch and answer. A backend that ends its connection says so on the socket (its
FATAL message, then end of file), where an idle connection in autocommit has nothing to read.
So an idle socket with nothing to read is taken as usable without asking; one with something
to read gets Django's own check, which reads it (a server's notice, a TLS record) and tells a
live connection from an ended one (decision 62).
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
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
