from django.core.management.base import BaseCommand, CommandError

from lti.keys import KeyRotationError, activate_next_key, publish_next_key, retire_old_keys
from lti.models import ToolKey


class Command(BaseCommand):
    help = (
        "Rotate the tool's signing key in three steps, waiting between them: "
        "'publish' a next key (in the JWKS, not signing); after platforms' keyset caches "
        "expire (a day is safe), 'activate' it (it signs; the old key stays published); "
        "after tokens signed with the old key expire (an hour), 'retire' the old key. "
        "'status' lists the keys."
    )

    def add_arguments(self, parser):
        parser.add_argument("step", choices=["publish", "activate", "retire", "status"])

    def handle(self, *args, step: str, **options):
        try:
            if step == "publish":
                key = publish_next_key()
                self.stdout.write(f"Published next key {key.kid}; it does not sign yet.")
            elif step == "activate":
                key = activate_next_key()
                self.stdout.write(f"Key {key.kid} now signs; the previous key stays published.")
            elif step == "retire":
                count = retire_old_keys()
                self.stdout.write(f"Withdrew {count} old key(s) from the JWKS.")
        except KeyRotationError as error:
            raise CommandError(str(error)) from error
        for key in ToolKey.objects.order_by("created_at"):
            self.stdout.write(
                f"  {key.kid}  {key.state}  since {key.state_changed_at:%Y-%m-%d %H:%M}"
            )
