from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from lti.models import Deployment, Registration


class Command(BaseCommand):
    help = (
        "Register a platform by hand (what Moodle's tool details or a Canvas developer key "
        "show). Running it again for the same issuer and client id updates it."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--issuer", required=True, help="Platform ID (iss), e.g. https://moodle.example.edu"
        )
        parser.add_argument("--client-id", required=True)
        parser.add_argument(
            "--auth-login-url",
            required=True,
            help="e.g. https://moodle.example.edu/mod/lti/auth.php",
        )
        parser.add_argument(
            "--auth-token-url",
            required=True,
            help="e.g. https://moodle.example.edu/mod/lti/token.php",
        )
        parser.add_argument(
            "--keyset-url", required=True, help="e.g. https://moodle.example.edu/mod/lti/certs.php"
        )
        parser.add_argument(
            "--deployment-id", action="append", default=[], help="Repeat for several."
        )
        parser.add_argument("--title", default="")

    @transaction.atomic
    def handle(self, *args, **options):
        for name in ("issuer", "auth_login_url", "auth_token_url", "keyset_url"):
            if not options[name].startswith(("https://", "http://")):
                raise CommandError(f"--{name.replace('_', '-')} must be an http(s) URL.")
        registration, created = Registration.objects.update_or_create(
            issuer=options["issuer"].rstrip("/"),
            client_id=options["client_id"],
            defaults={
                "title": options["title"],
                "auth_login_url": options["auth_login_url"],
                "auth_token_url": options["auth_token_url"],
                "keyset_url": options["keyset_url"],
                "is_active": True,
            },
        )
        for deployment_id in options["deployment_id"]:
            Deployment.objects.get_or_create(registration=registration, deployment_id=deployment_id)
        deployments = ", ".join(registration.deployments.values_list("deployment_id", flat=True))
        verb = "Added" if created else "Updated"
        self.stdout.write(f"{verb} {registration} with deployments: {deployments or 'none'}")
