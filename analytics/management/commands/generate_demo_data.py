from django.core.management.base import BaseCommand, CommandError

from activities.demo import ensure_demo_placement
from activities.errors import ActivityNotLoaded
from analytics.demo_data import DemoLabError, generate_demo_data, generate_demo_lab_runs
from lti.models import ResourceLink


class Command(BaseCommand):
    help = (
        "Add students of varying ability, with attempts, to the demo course's quiz (or to "
        "--placement), so the dashboards have something to show; in the demo course, also "
        "runs of the demo lab by some of them (measured once per policy by the runner)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--students", type=int, default=200)
        parser.add_argument("--placement", type=int, help="a quiz placement's id")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--if-empty",
            action="store_true",
            help="do nothing where the placement already has attempts or runs (for `make run`)",
        )
        parser.add_argument("--no-lab", action="store_true", help="leave the demo lab without runs")

    def handle(
        self,
        *args,
        students: int,
        placement: int | None,
        seed: int,
        if_empty: bool,
        no_lab: bool,
        **options,
    ) -> None:
        if not 1 <= students <= 200_000:
            raise CommandError("--students must be between 1 and 200000")
        try:
            target = (
                ResourceLink.objects.get(pk=placement, quiz_placement__isnull=False)
                if placement
                else ensure_demo_placement()
            )
        except ResourceLink.DoesNotExist:
            raise CommandError(f"No quiz placement {placement}") from None
        except ActivityNotLoaded as error:
            raise CommandError(error.message) from None
        if if_empty and target.attempts.exists():
            self.stdout.write(f"{target.context} / {target} already has attempts; nothing added")
        else:
            made = generate_demo_data(target, students, seed=seed)
            self.stdout.write(
                f"{made.students} students, {made.attempts} attempts, {made.responses} "
                f"responses in {target.context} / {target}"
            )
        if placement or no_lab:
            return
        self._fill_demo_lab(seed=seed, if_empty=if_empty)

    def _fill_demo_lab(self, *, seed: int, if_empty: bool) -> None:
        try:
            lab = ensure_demo_placement("lab")
        except ActivityNotLoaded:
            self.stdout.write("The labs are not loaded; the demo lab gets no runs")
            return
        if if_empty and lab.lab_runs.exists():
            self.stdout.write(f"{lab.context} / {lab} already has runs; nothing added")
            return
        self.stdout.write("Measuring the demo lab's policies on the CPU (once each)…")
        try:
            runs = generate_demo_lab_runs(lab, seed=seed)
        except DemoLabError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"{runs} lab runs in {lab.context} / {lab}")
