from django import forms
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from assessments.models import GradingMethod, Quiz
from assessments.selectors import localized
from labs.forms import validate_moment
from labs.models import Lab, LatePolicy


class ActivityChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Quiz) -> str:
        return localized(obj.current_version.title, get_language())


class _AttemptPolicyForm(forms.Form):
    title = forms.CharField(label=_("Title in the course"), max_length=255)
    max_attempts = forms.IntegerField(
        label=_("Attempts allowed (0 = unlimited)"), min_value=0, max_value=100, initial=0
    )
    grading_method = forms.ChoiceField(
        label=_("Grading method"), choices=GradingMethod.choices, initial=GradingMethod.HIGHEST
    )


class PlacementSettingsForm(_AttemptPolicyForm):
    """What an instructor chooses when re-pointing a quiz placement."""

    quiz = ActivityChoiceField(
        queryset=Quiz.objects.filter(current_version__isnull=False).select_related(
            "current_version"
        ),
        label=_("Activity"),
        empty_label=None,
    )
    field_order = ["quiz", "title", "max_attempts", "grading_method"]


def _moment(label) -> forms.DateTimeField:
    return forms.DateTimeField(
        label=label,
        required=False,
        validators=[validate_moment],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )


class DeepLinkForm(_AttemptPolicyForm):
    """What an instructor chooses when placing an activity (a quiz or a lab) in a course.
    ``cleaned_data["activity"]`` is the Quiz or the Lab; the schedule applies to labs."""

    activity = forms.ChoiceField(label=_("Activity"))
    opens_at = _moment(_("Lab opens at"))
    due_at = _moment(_("Lab due at"))
    closes_at = _moment(_("Lab closes at (late runs until then)"))
    late_policy = forms.ChoiceField(
        label=_("Late runs"), choices=LatePolicy.choices, initial=LatePolicy.ACCEPT, required=False
    )
    late_penalty_percent = forms.IntegerField(
        label=_("Late penalty (%)"), min_value=0, max_value=100, initial=0, required=False
    )
    field_order = ["activity", "title", "max_attempts", "grading_method"]

    def clean(self):
        data = super().clean()
        opens, due, closes = (data.get(name) for name in ("opens_at", "due_at", "closes_at"))
        if opens and due and due < opens:
            self.add_error("due_at", _("The due time must come after the opening time."))
        if closes and ((due and closes < due) or (opens and closes < opens)):
            self.add_error(
                "closes_at", _("The closing time must come after the opening and due times.")
            )
        return data

    def schedule(self) -> dict:
        """The lab schedule as deep linking carries it (after is_valid())."""
        names = ("opens_at", "due_at", "closes_at", "late_policy", "late_penalty_percent")
        return {name: self.cleaned_data.get(name) for name in names}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        language = get_language()
        self._activities = {
            **{
                f"quiz:{quiz.slug}": quiz
                for quiz in Quiz.objects.filter(current_version__isnull=False).select_related(
                    "current_version"
                )
            },
            **{f"lab:{lab.slug}": lab for lab in Lab.objects.all()},
        }
        self.fields["activity"].choices = [
            (
                key,
                localized(
                    activity.current_version.title if key.startswith("quiz:") else activity.title,
                    language,
                ),
            )
            for key, activity in self._activities.items()
        ]

    def clean_activity(self) -> Quiz | Lab:
        return self._activities[self.cleaned_data["activity"]]
