from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from . import registry
from .models import GradingMethod


class AttemptPolicyForm(forms.Form):
    """The title and attempt policy every placement has, whatever its activity."""

    title = forms.CharField(label=_("Title in the course"), max_length=255)
    max_attempts = forms.IntegerField(
        label=_("Attempts allowed (0 = unlimited)"),
        help_text=_("Quiz attempts or lab runs a student may make."),
        min_value=0,
        max_value=100,
        initial=0,
    )
    grading_method = forms.ChoiceField(
        label=_("Grading method"), choices=GradingMethod.choices, initial=GradingMethod.HIGHEST
    )


class MethodSelect(forms.Select):
    """The grading methods, each option marked with the kinds that grade by it
    (``data-kinds``), so that the picker offers a lab only its own."""

    def __init__(self, kinds_of: dict[str, str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kinds_of = kinds_of

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        option["attrs"]["data-kinds"] = self.kinds_of.get(str(value), "")
        return option


class DeepLinkForm(AttemptPolicyForm):
    """What an instructor chooses when placing an activity of any registered kind in a
    course: the activity (``kind:slug``), its title and attempt policy, and the fields each
    kind adds (a lab's schedule), checked by the chosen kind."""

    activity = forms.ChoiceField(label=_("Activity"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kinds = {kind.key: kind for kind in registry.kinds()}
        self.fields["activity"].choices = [
            (f"{kind.key}:{slug}", title)
            for kind in self._kinds.values()
            for slug, title in kind.offered().items()
        ]
        for kind in self._kinds.values():
            for name, field in kind.deep_link_fields().items():
                field.widget.attrs["data-kind"] = kind.key  # shown for that kind only
                self.fields[name] = field
        # A kind that names its methods (a lab: best run, last run) grades by those only.
        self.fields["grading_method"].widget = MethodSelect(
            {
                method: " ".join(
                    kind.key
                    for kind in self._kinds.values()
                    if not kind.method_labels or method in kind.method_labels
                )
                for method in GradingMethod.values
            },
            choices=GradingMethod.choices,
        )
        self.order_fields(["activity", "title", "max_attempts", "grading_method"])

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        chosen = self.chosen()
        if chosen is not None:
            chosen[0].clean_deep_link(self, data)
        return data

    def chosen(self) -> tuple[registry.ActivityKind, str] | None:
        """The chosen activity's kind and slug (after is_valid())."""
        key, _sep, slug = str(self.cleaned_data.get("activity") or "").partition(":")
        found = self._kinds.get(key)
        return (found, slug) if found is not None else None
