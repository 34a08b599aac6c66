"""gunicorn settings for production (docker-compose.yml's web)."""

import os

from ops.logs import logging_config

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
# X-Forwarded-Proto (and -For) count only from these addresses or networks: the compose file
# sets the network that holds the reverse proxy alone, so a client cannot claim HTTPS.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
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
