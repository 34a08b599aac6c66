from django.apps import AppConfig


class GradesyncConfig(AppConfig):
    name = "gradesync"
    verbose_name = "Grade sync (LTI AGS)"
