from django.apps import AppConfig


class AssessmentsConfig(AppConfig):
    name = "assessments"
    verbose_name = "Assessments"

    def ready(self) -> None:
        from activities import registry

        from .activity import QUIZ

        registry.register(QUIZ)
