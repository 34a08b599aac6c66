from django.core.management.base import BaseCommand, CommandError

from analytics.demo_data import generate_demo_data
from lti.models import ResourceLink
from lti.services import QuizNotLoaded, ensure_demo_placement


class Command(BaseCommand):
    help = (
        "Add students of varying ability, with attempts, to the demo course's quiz (or to "
        "--placement), so the dashboards have something to show."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--students", type=int, default=200)
        parser.add_argument("--placement", type=int, help="a quiz placement's id")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--if-empty",
            action="store_true",
            help="do nothing when the placement already has attempts (for `make run`)",
        )

    def handle(
        self, *args, students: int, placement: int | None, seed: int, if_empty: bool, **options
    ) -> None:
        if not 1 <= students <= 200_000:
            raise CommandError("--students must be between 1 and 200000")
        try:
            target = (
                ResourceLink.objects.get(pk=placement, quiz__isnull=False)
                if placement
                else ensure_demo_placement()
            )
        except ResourceLink.DoesNotExist:
            raise CommandError(f"No quiz placement {placement}") from None
        except QuizNotLoaded as error:
            raise CommandError(str(error)) from None
        if if_empty and target.attempts.exists():
            self.stdout.write(f"{target.context} / {target} already has attempts; nothing added")
            return
        made = generate_demo_data(target, students, seed=seed)
        self.stdout.write(
            f"{made.students} students, {made.attempts} attempts, {made.responses} responses "
            f"in {target.context} / {target}"
        )
