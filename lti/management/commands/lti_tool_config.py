import json
import os
from urllib.parse import urlencode

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from lti import claims as c
from lti.dynamic_registration import TOOL_DESCRIPTION, TOOL_NAME, registration_mode, tool_urls
from lti.keys import signing_key


def default_base_url() -> str:
    """LTI_TOOL_URL, or in a DEBUG run (`make run`) the address that run serves."""
    if settings.LTI_TOOL_URL:
        return settings.LTI_TOOL_URL
    if settings.DEBUG:
        return f"http://127.0.0.1:{os.environ.get('PORT', '8000')}/"
    return ""


class Command(BaseCommand):
    help = (
        "Print what an LMS administrator enters: the fields of Moodle's 'Manage tools' form "
        "and a Canvas developer key (LTI key, JSON)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--base-url",
            default=default_base_url(),
            help=(
                "The tool's public HTTPS base URL (default: LTI_TOOL_URL; in a DEBUG run "
                "without it, http://127.0.0.1:$PORT/ as `make run` serves)."
            ),
        )
        parser.add_argument("--format", choices=["moodle", "canvas", "all"], default="all")

    def handle(self, *args, base_url: str, format: str, **options):
        if not base_url:
            raise CommandError(
                "Give --base-url https://your-tool.example.edu/ or set LTI_TOOL_URL."
            )
        urls = tool_urls(base_url)
        registration_url = {
            "key": f"{urls['register']}?{urlencode({'key': settings.LTI_REGISTRATION_KEY})}",
            "open": f"{urls['register']} (open without a key while DEBUG is on)",
            "closed": "closed: set LTI_REGISTRATION_KEY to open it",
        }[registration_mode()]
        signing_key()  # the JWKS must have a key before a platform fetches it
        if format in ("moodle", "all"):
            self.stdout.write(
                "Moodle: Site administration > Plugins > Activity modules > External tool > "
                "Manage tools > configure a tool manually"
            )
            for label, value in [
                ("Tool name", TOOL_NAME),
                ("Tool URL", urls["launch"]),
                ("LTI version", "LTI 1.3"),
                ("Public key type", "Keyset URL"),
                ("Public keyset", urls["jwks"]),
                ("Initiate login URL", urls["login"]),
                ("Redirection URI(s)", urls["launch"]),
                ("Supports Deep Linking (Content-Item Message)", "yes"),
                ("Content Selection URL", urls["launch"]),
                (
                    "IMS LTI Assignment and Grade Services",
                    "Use this service for grade sync and column management",
                ),
                (
                    "IMS LTI Names and Role Provisioning",
                    "Use this service to retrieve members' information",
                ),
                ("Share launcher's name / email with tool", "Always (optional)"),
                ("Dynamic registration URL (instead of all the above)", registration_url),
            ]:
                self.stdout.write(f"  {label}: {value}")
        if format in ("canvas", "all"):
            domain = base_url.split("://", 1)[-1].split("/", 1)[0]
            key = {
                "title": TOOL_NAME,
                "description": TOOL_DESCRIPTION,
                "oidc_initiation_url": urls["login"],
                "target_link_uri": urls["launch"],
                "public_jwk_url": urls["jwks"],
                "scopes": c.TOOL_SCOPES,
                "extensions": [
                    {
                        "platform": "canvas.instructure.com",
                        "privacy_level": "public",
                        "domain": domain,
                        "settings": {
                            "placements": [
                                {
                                    "placement": "link_selection",
                                    "message_type": c.DEEP_LINKING_REQUEST,
                                    "target_link_uri": urls["launch"],
                                },
                                {
                                    "placement": "assignment_selection",
                                    "message_type": c.DEEP_LINKING_REQUEST,
                                    "target_link_uri": urls["launch"],
                                },
                            ]
                        },
                    }
                ],
                "custom_fields": {},
            }
            self.stdout.write(
                "Canvas: Admin > Developer Keys > + Developer Key > LTI Key > Method: Paste JSON"
            )
            self.stdout.write(json.dumps(key, indent=2))
            self.stdout.write(f"Redirect URIs: {urls['launch']}")
