"""One deploy step: the migrations, then the quiz and labs content (both idempotent), with
every line the commands print written as a log line (JSON in production)."""

from __future__ import annotations

import logging

from django.core.management import call_command
from django.core.management.base import BaseCommand

from ops.logs import LogWriter

logger = logging.getLogger("ops.deploy")
STEPS: tuple[tuple[str, dict], ...] = (
    ("migrate", {"interactive": False}),
    ("load_quiz", {}),
    ("load_labs", {}),
)


class Command(BaseCommand):
    help = "Apply the migrations and load the quiz and labs, logging their output."

    def handle(self, *args, **options) -> None:
        for name, command_options in STEPS:
            out = LogWriter(logging.getLogger(f"ops.deploy.{name}"))
            err = LogWriter(logging.getLogger(f"ops.deploy.{name}"), logging.WARNING)
            logger.info("deploy: %s", name)
            call_command(name, stdout=out, stderr=err, **command_options)
            out.close()
            err.close()
        logger.info("deploy: done")
