from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ActivitiesConfig(AppConfig):
    """The course side: between the LTI protocol (lti/) and the activity apps."""

    name = "activities"
    verbose_name = _("Activities")

    def ready(self) -> None:
        from lti.course import register_course_side

        from .course_side import ActivitiesCourseSide

        register_course_side(ActivitiesCourseSide())
