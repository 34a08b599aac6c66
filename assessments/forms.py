"""The quiz's instructor forms: re-pointing a placement."""

from __future__ import annotations

from django import forms
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from activities.forms import AttemptPolicyForm
from activities.texts import localized

from .models import Quiz


class QuizChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Quiz) -> str:
        return localized(obj.current_version.title, get_language())


class PlacementSettingsForm(AttemptPolicyForm):
    """What an instructor chooses when re-pointing a quiz placement."""

    quiz = QuizChoiceField(
        queryset=Quiz.objects.filter(current_version__isnull=False).select_related(
            "current_version"
        ),
        label=_("Activity"),
        empty_label=None,
    )
    field_order = ["quiz", "title", "max_attempts", "grading_method"]
