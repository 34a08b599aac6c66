from django.core.management.base import BaseCommand

from labs.content import parse_labs
from labs.services import load_lab


class Command(BaseCommand):
    help = "Load the labs from labs/content/labs.yaml (idempotent)."

    def handle(self, *args, **options) -> None:
        for content in parse_labs():
            lab, changed = load_lab(content)
            self.stdout.write(f"{lab.slug}: {'loaded' if changed else 'unchanged'}")
