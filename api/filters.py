import re
from datetime import UTC, datetime, timedelta

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField

from activities.models import Grade
from assessments.models import Attempt, AttemptState, Response
from labs.models import LabRun, RunStatus
from lti.models import Membership, ResourceLink

# The largest id a row can have (PostgreSQL's bigint, SQLite's integer).
MAX_ID = 2**63 - 1
_DIGITS = re.compile(r"[0-9]+")


class IdField(forms.IntegerField):
    """A row's id: ASCII digits, 1 to MAX_ID. A decimal filter read "1.5" and "1e0" as 1, and
    a number past a bigint reached the database, which refused it with a server error."""

    def __init__(self, **kwargs):
        super().__init__(min_value=1, max_value=MAX_ID, **kwargs)

    def to_python(self, value):
        if value in self.empty_values:
            return None
        if not _DIGITS.fullmatch(str(value).strip()):
            raise forms.ValidationError("Enter an id: a whole number of ASCII digits.")
        return super().to_python(value)


class IdFilter(django_filters.NumberFilter):
    field_class = IdField


class UtcDateTimeField(IsoDateTimeField):
    """An ISO 8601 date-time, passed to the database in UTC: an offset beyond ±14:00 or a
    date that cannot be expressed in UTC is a 400, not a database error."""

    def clean(self, value):
        moment: datetime | None = super().clean(value)
        if moment is None:
            return None
        offset = moment.utcoffset() or timedelta(0)
        if abs(offset) > timedelta(hours=14):
            raise forms.ValidationError("The time zone offset must be within ±14:00.")
        try:
            return moment.astimezone(UTC)
        except (OverflowError, ValueError) as error:
            raise forms.ValidationError("The date is out of range.") from error


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcDateTimeField


class PlacementFilter(django_filters.FilterSet):
    course = IdFilter(field_name="context_id")

    class Meta:
        model = ResourceLink
        fields = ["course"]


class AttemptFilter(django_filters.FilterSet):
    course = IdFilter(field_name="placement__context_id")
    activity = django_filters.CharFilter(field_name="placement__quiz_placement__quiz__slug")
    placement = IdFilter(field_name="placement_id")
    user = IdFilter(field_name="user_id")
    state = django_filters.ChoiceFilter(choices=AttemptState.choices)
    started_after = UtcDateTimeFilter(field_name="started_at", lookup_expr="gte")
    started_before = UtcDateTimeFilter(field_name="started_at", lookup_expr="lt")

    class Meta:
        model = Attempt
        fields = ["course", "activity", "placement", "user", "state"]


class LabRunFilter(django_filters.FilterSet):
    course = IdFilter(field_name="placement__context_id")
    activity = django_filters.CharFilter(field_name="placement__lab_placement__lab__slug")
    placement = IdFilter(field_name="placement_id")
    user = IdFilter(field_name="user_id")
    status = django_filters.ChoiceFilter(choices=RunStatus.choices)
    submitted_after = UtcDateTimeFilter(field_name="submitted_at", lookup_expr="gte")
    submitted_before = UtcDateTimeFilter(field_name="submitted_at", lookup_expr="lt")

    class Meta:
        model = LabRun
        fields = ["course", "activity", "placement", "user", "status"]


class ResponseFilter(django_filters.FilterSet):
    attempt = django_filters.UUIDFilter(field_name="attempt__public_id")
    placement = IdFilter(field_name="attempt__placement_id")
    question = django_filters.CharFilter(field_name="question__key")

    class Meta:
        model = Response
        fields = ["attempt", "placement", "question", "is_correct"]


class GradeFilter(django_filters.FilterSet):
    course = IdFilter(field_name="placement__context_id")
    placement = IdFilter(field_name="placement_id")
    user = IdFilter(field_name="user_id")

    class Meta:
        model = Grade
        fields = ["course", "placement", "user", "is_overridden"]


class RosterFilter(django_filters.FilterSet):
    course = IdFilter(field_name="context_id")

    class Meta:
        model = Membership
        fields = ["course", "role", "is_active"]
