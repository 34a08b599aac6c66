"""The project's settings with the test activity kind (tests/activities/kind_app): a kind
that is neither the quiz nor a lab, registered the way they are, so the tests show a new
kind needs no change to lti/ or to what the activity registry's users call."""

from config.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "tests.activities.kind_app"]  # noqa: F405
