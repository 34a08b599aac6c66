from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, transaction

from activities.content import ContentError
from labs.content import LABS_FILE, parse_labs
from labs.services import ReferenceUnavailable, ensure_reference, load_lab


class Command(BaseCommand):
    help = (
        "Load the labs from a content file (idempotent; default labs/content/labs.yaml). "
        "With --references, also compute each lab's reference optimum now (otherwise the "
        "first run of a lab computes it)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", type=Path, default=LABS_FILE)
        parser.add_argument("--references", action="store_true")

    def handle(self, *args, path: Path, references: bool, **options) -> None:
        try:
            labs = parse_labs(path)
        except ContentError as error:
            raise CommandError(str(error)) from error
        try:
            with transaction.atomic():  # all the file's labs, or none
                loaded = [load_lab(content) for content in labs]
        except DatabaseError as error:
            raise CommandError(
                f"{path}: the database refused the labs; none loaded: {error}"
            ) from error
        for lab, changed in loaded:
            self.stdout.write(f"{lab.slug}: {'loaded' if changed else 'unchanged'}")
            if references:
                try:
                    reference = ensure_reference(lab)
                except ReferenceUnavailable as error:
                    raise CommandError(f"{lab.slug}: {error}") from error
                self.stdout.write(
                    f"{lab.slug}: optimum {reference['optimal_recompute_flops']} FLOPs "
                    f"within {lab.budget_bytes} bytes"
                )
