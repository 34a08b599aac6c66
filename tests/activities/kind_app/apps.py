from django.apps import AppConfig


class ExerciseConfig(AppConfig):
    """Registers the exercise kind, as the quiz and the labs register theirs."""

    name = "tests.activities.kind_app"
    label = "kind_app"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from activities import registry

        from .activity import EXERCISE

        registry.register(EXERCISE)
