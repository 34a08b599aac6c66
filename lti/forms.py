from django import forms
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from assessments.models import GradingMethod, Quiz
from assessments.selectors import localized


class ActivityChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Quiz) -> str:
        return localized(obj.current_version.title, get_language())


class PlacementSettingsForm(forms.Form):
    """What an instructor chooses when placing or re-pointing an activity."""

    quiz = ActivityChoiceField(
        queryset=Quiz.objects.filter(current_version__isnull=False).select_related(
            "current_version"
        ),
        label=_("Activity"),
        empty_label=None,
    )
    title = forms.CharField(label=_("Title in the course"), max_length=255)
    max_attempts = forms.IntegerField(
        label=_("Attempts allowed (0 = unlimited)"), min_value=0, max_value=100, initial=0
    )
    grading_method = forms.ChoiceField(
        label=_("Grading method"), choices=GradingMethod.choices, initial=GradingMethod.HIGHEST
    )
