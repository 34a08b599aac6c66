from django.apps import AppConfig


class GradebookConfig(AppConfig):
    """The instructor's grades pages of every activity kind: above the course side and the
    grade sync, beside the kinds, which it reaches through the activity registry only."""

    name = "gradebook"
    verbose_name = "Gradebook"
