from django.apps import AppConfig


class AssessmentsConfig(AppConfig):
    name = "assessments"
    verbose_name = "Assessments"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from activities import registry

        from . import selectors
        from .activity import QUIZ
        from .models import Question, QuizVersion

        registry.register(QUIZ)
        # A wording corrected in the admin shows at once in the process that saved it.
        for model in (QuizVersion, Question):
            post_save.connect(
                selectors.forget_saved_layout, sender=model, dispatch_uid=f"layout-{model.__name__}"
            )

    def warm_up(self) -> None:
        """A web worker's warm-up (ops.warmup): the quizzes' current content, and the
        attempt pages' statements prepared."""
        from .selectors import prepare_attempt_reads, read_current_versions

        read_current_versions()
        prepare_attempt_reads()
