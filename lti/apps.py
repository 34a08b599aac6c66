from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "lti"
    verbose_name = "LTI 1.3"

    def ready(self) -> None:
        from . import backends  # noqa: F401  (its signal receivers keep the user cache true)
