from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "lti"
    verbose_name = "LTI 1.3"

    def ready(self) -> None:
        # Signal receivers: backends keeps the user cache true; middleware bumps the framing
        # origins' version whenever any process (a command included) saves a registration.
        from . import backends, middleware  # noqa: F401
