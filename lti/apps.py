from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "lti"
    verbose_name = "LTI 1.3"

    def ready(self) -> None:
        # Signal receivers: backends keeps the user cache true; registrations_memo bumps the
        # registrations' version whenever any process (a command included) changes one.
        from . import backends, registrations_memo  # noqa: F401
