"""Forms of the instructor's grades page."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from activities.grading import GRADE_DECIMALS


class OverrideForm(forms.Form):
    user = forms.IntegerField(min_value=1, max_value=2**31 - 1, widget=forms.HiddenInput)
    score_given = forms.DecimalField(
        label=_("Grade"),
        min_value=0,
        max_digits=9,
        decimal_places=GRADE_DECIMALS,
        localize=True,
    )
    reason = forms.CharField(
        label=_("Reason"), max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )
    share_reason = forms.BooleanField(label=_("Show the reason to the student"), required=False)


class ClearOverrideForm(forms.Form):
    user = forms.IntegerField(min_value=1, max_value=2**31 - 1, widget=forms.HiddenInput)
    reason = forms.CharField(label=_("Reason"), max_length=2000, required=False)
