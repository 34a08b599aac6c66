from django.core.management.base import BaseCommand

from labs.services import remeasure_runs, stale_runs


class Command(BaseCommand):
    help = (
        "Measure again, and grade by the current scoring, the runs graded by an earlier one "
        "(docs/labs.md, 'Runs graded before'); --placement limits it to one placement. "
        "Without --yes it only counts them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--placement", type=int)
        parser.add_argument("--yes", action="store_true")

    def handle(self, *args, placement: int | None, yes: bool, **options) -> None:
        runs = stale_runs()
        if placement is not None:
            runs = runs.filter(placement_id=placement)
        if not yes:
            self.stdout.write(
                f"{runs.count()} runs graded by an earlier scoring (--yes queues them)"
            )
            return
        self.stdout.write(f"{remeasure_runs(runs)} runs queued to be measured again")
