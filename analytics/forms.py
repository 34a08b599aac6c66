from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from django import forms
from django.utils.translation import gettext_lazy as _

from .selectors import AttemptFilter

EARLIEST, LATEST = date(1900, 1, 1), date(9000, 12, 31)


class DashboardFilterForm(forms.Form):
    attempts = forms.ChoiceField(
        label=_("Attempts that count"),
        required=False,
        choices=[
            ("all", _("All finished attempts")),
            ("first", _("Each student's first attempt")),
            ("last", _("Each student's last attempt")),
            ("highest", _("Each student's highest attempt")),
        ],
    )
    finished_from = forms.DateField(
        label=_("Finished from"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    finished_to = forms.DateField(
        label=_("Finished up to (inclusive)"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
    )

    def clean(self):
        data = super().clean()
        start, end = data.get("finished_from"), data.get("finished_to")
        for value in (start, end):
            if value and not EARLIEST <= value <= LATEST:
                raise forms.ValidationError(
                    _("Dates must fall between %(earliest)s and %(latest)s.")
                    % {"earliest": EARLIEST.isoformat(), "latest": LATEST.isoformat()}
                )
        if start and end and end < start:
            raise forms.ValidationError(_("The end of the date range is before its start."))
        return data

    def rules(self) -> AttemptFilter:
        """Call after is_valid(); an unbound form gives every finished attempt."""
        data = self.cleaned_data if self.is_bound else {}
        start, end = data.get("finished_from"), data.get("finished_to")
        return AttemptFilter(
            counting=data.get("attempts") or "all",
            finished_after=datetime.combine(start, time.min, UTC) if start else None,
            finished_before=(
                datetime.combine(end + timedelta(days=1), time.min, UTC) if end else None
            ),
        )
