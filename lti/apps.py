from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "lti"
    verbose_name = "LTI 1.3"

    def ready(self) -> None:
        # Signal receivers: backends keeps the user cache true; registrations_memo bumps the
        # registrations' version whenever any process (a command included) changes one.
        from . import backends, registrations_memo  # noqa: F401

    def warm_up(self) -> None:
        """A web worker's warm-up (ops.warmup): the registrations its first logins and
        launches look up, their platforms' key sets as the cache holds them, the member's
        statement prepared, and a signature made and checked."""
        from .keys import exercise_signatures
        from .platform_keys import remember_cached_keysets
        from .selectors import remember_registrations

        remember_cached_keysets(remember_registrations())
        exercise_signatures()
