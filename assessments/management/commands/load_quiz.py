from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from assessments.content import SEED_QUIZ_FILE, ContentError, read_quiz_file
from assessments.services import load_quiz


class Command(BaseCommand):
    help = (
        "Load a quiz content file (YAML). Idempotent: an unchanged file changes nothing, an "
        "edited one becomes a new version while started attempts keep theirs."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "paths",
            nargs="*",
            type=Path,
            default=[SEED_QUIZ_FILE],
            help="Content files to load (default: the seed gradient-checkpointing quiz).",
        )

    def handle(self, *args, paths: list[Path], **options):
        for path in paths:
            try:
                content = read_quiz_file(path)
            except ContentError as error:
                raise CommandError(str(error)) from error
            try:
                result = load_quiz(content)  # one transaction
            except DatabaseError as error:
                raise CommandError(
                    f"{path}: the database refused the quiz; not loaded: {error}"
                ) from error
            state = "loaded as new" if result.created else "unchanged, current is"
            self.stdout.write(f"{result.quiz.slug}: {state} version {result.version.number}")
