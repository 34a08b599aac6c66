from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from assessments.content import ContentError
from labs.content import LABS_FILE, parse_labs
from labs.services import load_lab


class Command(BaseCommand):
    help = "Load the labs from a content file (idempotent; default labs/content/labs.yaml)."

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", type=Path, default=LABS_FILE)

    def handle(self, *args, path: Path, **options) -> None:
        try:
            labs = parse_labs(path)
        except ContentError as error:
            raise CommandError(str(error)) from error
        for content in labs:
            lab, changed = load_lab(content)
            self.stdout.write(f"{lab.slug}: {'loaded' if changed else 'unchanged'}")
