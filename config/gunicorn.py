"""gunicorn settings for production (docker-compose.yml's web)."""

import gc
import logging
import os

from gunicorn.glogging import Logger

from ops.logs import logging_config

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
# X-Forwarded-Proto (and -For) count only from these addresses or networks: the compose file
# sets the network that holds the reverse proxy alone, so a client cannot claim HTTPS.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# An LTI login initiation may come as a GET whose query carries the platform's hints (a
# Canvas lti_message_hint is a signed JWT): gunicorn's most, where its default (4094 bytes)
# answered a long one with a bare 400 of its own before the tool could say anything. nginx
# in front takes request lines of up to 8 KiB by default (large_client_header_buffers).
limit_request_line = 8190
# gunicornc's control socket is not used; it wanted a home directory the image's user lacks.
control_socket_disable = True

# gunicorn's own lines through the application's formatter (JSON lines in production). The
# application logs one line per request, with its view and request id (ops.middleware), so
# gunicorn's access lines (INFO) are held back by level; lowered, they come out formatted the same.
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO")
logconfig_dict = logging_config(
    os.environ.get("LOG_FORMAT", "json"),
    LOG_LEVEL,
    loggers={
        "gunicorn.error": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "gunicorn.access": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
)


class AccessLinesWhenLogged(Logger):
    """gunicorn's logger, which otherwise formats every request's access line (its atoms:
    the headers, the time) whenever a logging configuration is given, even while the
    access logger's level holds the line back."""

    def access(self, resp, req, environ, request_time) -> None:
        if self.access_log.isEnabledFor(logging.INFO):
            super().access(resp, req, environ, request_time)


logger_class = AccessLinesWhenLogged


# GC_FREEZE=0 leaves the collector as Python sets it (bench/gc_pauses.py compares the two).
GC_FREEZE = os.environ.get("GC_FREEZE", "1") != "0"
# After this many requests a worker has built what it builds once (URL resolvers, compiled
# templates, translations, each quiz version's content): then it is frozen with the rest.
FREEZE_AFTER_REQUESTS = 200


def post_worker_init(worker) -> None:
    """Take what the worker loaded out of the garbage collector's reach.

    A full collection walks every object tracked: in a worker, Django, the project and their
    caches, some 150,000 objects. Each pass stopped the request in hand for 35–200 ms on
    this machine, a few times a minute under load, in the tail of every latency figure.
    Frozen objects are never walked again (what requests leave behind still is): the passes
    took 20–50 ms with the start-up frozen, 2.5–14 ms with the warm-up too
    (docs/decisions.md).
    """
    from ops.warmup import warm_up

    worker.requests_served = 0
    # What its first requests would build, built before it takes one (decisions 59, 66).
    warm_up(worker.wsgi)
    if GC_FREEZE:
        gc.collect()
        gc.freeze()


def post_request(worker, _req, _environ, _resp) -> None:
    worker.requests_served += 1
    if GC_FREEZE and worker.requests_served == FREEZE_AFTER_REQUESTS:
        gc.collect()
        gc.freeze()
