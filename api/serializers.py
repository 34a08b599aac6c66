"""Representations of the API. Thin: no domain logic, reads shaped by the selectors."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from activities import registry
from activities.grading import GRADE_DECIMALS
from activities.models import Grade, GradeOverride, Regrade
from assessments.models import Attempt, Response
from labs.models import LabRun
from lti.models import Membership, ResourceLink

from .access import ApiScope
from .filters import MAX_ID
from .models import ApiToken


class UserSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.SerializerMethodField()

    def get_name(self, user) -> str:
        lti_user = getattr(user, "lti_user", None)
        return (lti_user.name if lti_user else "") or user.get_full_name() or user.get_username()


class ActivitySerializer(serializers.Serializer):
    """An activity of any registered kind, as deep linking names it (``kind:slug``)."""

    key = serializers.CharField(help_text="kind:slug, as deep linking places it.")
    kind = serializers.CharField(help_text="The activity kind: quiz, lab, or another kind.")
    slug = serializers.CharField()
    title = serializers.DictField(
        child=serializers.CharField(), help_text="Title per language code."
    )
    score_maximum = serializers.DecimalField(max_digits=9, decimal_places=3)


class PlacementSerializer(serializers.ModelSerializer):
    course = serializers.SerializerMethodField()
    activity = serializers.SerializerMethodField(help_text="The quiz's or the lab's slug.")
    activity_type = serializers.SerializerMethodField()
    # The placement's policy is the course side's (activities.Placement).
    max_attempts = serializers.IntegerField(
        source="placement.max_attempts",
        allow_null=True,
        read_only=True,
        help_text="Overrides the activity's limit of attempts or runs; 0: no limit.",
    )
    grading_method = serializers.CharField(
        source="placement.grading_method",
        read_only=True,
        help_text="Overrides the activity's grading method; empty: the activity's.",
    )

    class Meta:
        model = ResourceLink
        fields = [
            "id",
            "course",
            "resource_link_id",
            "title",
            "activity",
            "activity_type",
            "max_attempts",
            "grading_method",
            "lineitem_url",
        ]

    @extend_schema_field(
        {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "context_id": {"type": "string"},
                "title": {"type": "string"},
            },
        }
    )
    def get_course(self, placement: ResourceLink) -> dict:
        context = placement.context
        return {"id": context.pk, "context_id": context.context_id, "title": context.title}

    def get_activity(self, placement: ResourceLink) -> str:
        return registry.slug(placement)

    @extend_schema_field(
        {"type": "string", "description": "The activity kind's key: quiz, lab, or another kind."}
    )
    def get_activity_type(self, placement: ResourceLink) -> str:
        return registry.kind_of(placement).key


class ResponseSerializer(serializers.ModelSerializer):
    attempt = serializers.UUIDField(source="attempt.public_id")
    question = serializers.CharField(source="question.key")
    position = serializers.IntegerField(source="question.position")
    option = serializers.CharField(source="option.key")

    class Meta:
        model = Response
        fields = ["id", "attempt", "question", "position", "option", "is_correct", "answered_at"]


class AttemptSerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="public_id")
    user = UserSerializer()
    version = serializers.IntegerField(source="quiz_version.number")

    class Meta:
        model = Attempt
        fields = [
            "id",
            "placement",
            "user",
            "number",
            "state",
            "score",
            "max_score",
            "language",
            "version",
            "started_at",
            "finished_at",
        ]


class AttemptDetailSerializer(AttemptSerializer):
    responses = ResponseSerializer(many=True)

    class Meta(AttemptSerializer.Meta):
        fields = [*AttemptSerializer.Meta.fields, "responses"]


class LabRunSerializer(serializers.ModelSerializer):
    id = serializers.UUIDField(source="public_id")
    user = UserSerializer()
    peak_activation_bytes = serializers.SerializerMethodField()
    recompute_flops = serializers.SerializerMethodField()

    class Meta:
        model = LabRun
        fields = [
            "id",
            "placement",
            "user",
            "number",
            "status",
            "policy",
            "submitted_at",
            "is_late",
            "started_at",
            "finished_at",
            "execution_attempts",
            "device",
            "score",
            "peak_activation_bytes",
            "recompute_flops",
            "error",
        ]

    def get_peak_activation_bytes(self, run: LabRun) -> int | None:
        return (run.result or {}).get("peak_activation_bytes")

    def get_recompute_flops(self, run: LabRun) -> int | None:
        return (run.result or {}).get("recompute_flops")


class LabRunDetailSerializer(LabRunSerializer):
    result = serializers.JSONField(help_text="Everything the runner measured (docs/labs.md).")

    class Meta(LabRunSerializer.Meta):
        fields = [*LabRunSerializer.Meta.fields, "result"]


class SyncSerializer(serializers.Serializer):
    state = serializers.CharField(allow_null=True)
    last_error = serializers.CharField(
        allow_null=True,
        required=False,
        help_text="The LMS's reason for the last failure; only to staff of the course.",
    )
    synced_at = serializers.DateTimeField(allow_null=True)


def grade_field(**kwargs) -> serializers.DecimalField:
    """A grade by the one rounding rule (docs/decisions.md §27), as a string: "84.38"."""
    return serializers.DecimalField(
        max_digits=9, decimal_places=GRADE_DECIMALS, rounding=ROUND_HALF_UP, **kwargs
    )


class GradeSerializer(serializers.ModelSerializer):
    """A grade as its caller may see it: staff of the grade's course (by the ``scope`` in the
    context) see everything; the student sees the override's reason only when it is shared,
    as their page does, and not the LMS's error, which only the staff's grades page shows."""

    user = UserSerializer()
    score_given = grade_field(read_only=True)
    score_maximum = grade_field(read_only=True)
    override_reason = serializers.SerializerMethodField(
        help_text="Why staff set the grade; to the student only when shared, else empty."
    )
    sync = serializers.SerializerMethodField()

    class Meta:
        model = Grade
        fields = [
            "id",
            "placement",
            "user",
            "score_given",
            "score_maximum",
            "grading_method",
            "attempt_count",
            "counted_number",
            "is_overridden",
            "override_reason",
            "override_reason_shared",
            "updated_at",
            "sync",
        ]

    def is_staff_view(self, grade: Grade) -> bool:
        scope: ApiScope | None = self.context.get("scope")
        return scope is not None and scope.is_staff_of(grade.placement.context_id)

    def get_override_reason(self, grade: Grade) -> str:
        if grade.override_reason_shared or self.is_staff_view(grade):
            return grade.override_reason
        return ""

    @extend_schema_field(SyncSerializer(allow_null=True))
    def get_sync(self, grade: Grade) -> dict | None:
        if grade.sync_state is None:
            return None
        sync = {"state": grade.sync_state, "synced_at": grade.sync_synced_at}
        if self.is_staff_view(grade):
            sync["last_error"] = grade.sync_error or None
        return sync


class OverrideSerializer(serializers.ModelSerializer):
    placement = serializers.IntegerField(source="grade.placement_id")
    user = serializers.IntegerField(source="grade.user_id")
    previous_score = grade_field(read_only=True, allow_null=True)
    score_given = grade_field(read_only=True)
    created_by = UserSerializer()

    class Meta:
        model = GradeOverride
        fields = [
            "id",
            "placement",
            "user",
            "previous_score",
            "score_given",
            "reason",
            "share_reason",
            "created_by",
            "created_at",
        ]


class OverrideInputSerializer(serializers.Serializer):
    placement = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    user = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    score_given = serializers.DecimalField(max_digits=9, decimal_places=GRADE_DECIMALS)
    reason = serializers.CharField(max_length=2000, allow_blank=False, trim_whitespace=True)
    share_reason = serializers.BooleanField(
        default=False, help_text="Show the reason to the student beside the grade."
    )

    def validate_score_given(self, value: Decimal) -> Decimal:
        # "-0" is zero: stored as 0, so answered as every later read gives it ("0.00").
        return value.copy_abs() if value.is_zero() else value


class ClearOverrideInputSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000, required=False, default="")


class RegradeSerializer(serializers.ModelSerializer):
    created_by = UserSerializer(read_only=True)

    class Meta:
        model = Regrade
        fields = [
            "id",
            "placement",
            "cause",
            "created_by",
            "created_at",
            "attempts_changed",
            "grades_changed",
            "report",
            "grades_report",
        ]
        read_only_fields = fields


class RegradeInputSerializer(serializers.Serializer):
    placement = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    preview = serializers.BooleanField(
        default=False, help_text="Only say what the regrade would change (nothing is written)."
    )
    expected = serializers.CharField(
        required=False,
        max_length=64,
        help_text="A preview's fingerprint: refuse (409) unless the regrade does exactly that.",
    )


class AttemptRescoreSerializer(serializers.Serializer):
    attempt = serializers.CharField(source="public_id")
    user_id = serializers.IntegerField()
    number = serializers.IntegerField()
    old_score = serializers.IntegerField()
    new_score = serializers.IntegerField()


class GradeShiftSerializer(serializers.Serializer):
    user_id = serializers.IntegerField()
    name = serializers.CharField()
    old_score = grade_field(allow_null=True)
    new_score = grade_field()
    score_maximum = grade_field()
    overridden = serializers.BooleanField(help_text="Overridden: the grade stays as staff set it.")


class RegradePreviewSerializer(serializers.Serializer):
    fingerprint = serializers.CharField()
    attempts_changed = serializers.SerializerMethodField()
    grades_changed = serializers.SerializerMethodField()
    report = AttemptRescoreSerializer(source="rescored", many=True)
    grades_report = GradeShiftSerializer(source="shifts", many=True)

    def get_attempts_changed(self, plan) -> int:
        return len(plan.rescored)

    def get_grades_changed(self, plan) -> int:
        return len(plan.changes)


class RosterSerializer(serializers.ModelSerializer):
    user = UserSerializer()
    course = serializers.IntegerField(source="context_id")
    lti_user_id = serializers.SerializerMethodField()

    class Meta:
        model = Membership
        fields = [
            "id",
            "course",
            "user",
            "lti_user_id",
            "role",
            "roles",
            "is_active",
            "has_launched",
        ]

    def get_lti_user_id(self, membership: Membership) -> str | None:
        lti_user = getattr(membership.user, "lti_user", None)
        return lti_user.sub if lti_user else None


class TokenSerializer(serializers.ModelSerializer):
    course = serializers.IntegerField(source="context_id", allow_null=True, required=False)

    class Meta:
        model = ApiToken
        fields = [
            "id",
            "name",
            "prefix",
            "course",
            "can_write",
            "created_at",
            "last_used_at",
            "revoked_at",
        ]
        read_only_fields = ["id", "prefix", "created_at", "last_used_at", "revoked_at"]


class NewTokenSerializer(TokenSerializer):
    token = serializers.CharField(read_only=True, help_text="Shown once; store it now.")

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]


class QuizStatisticsSerializer(serializers.Serializer):
    """Moodle's test statistics (docs/analytics.md)."""

    attempts = serializers.IntegerField()
    maximum = serializers.IntegerField()
    mean = serializers.FloatField(allow_null=True)
    median = serializers.FloatField(allow_null=True)
    standard_deviation = serializers.FloatField(allow_null=True)
    skewness = serializers.FloatField(allow_null=True)
    kurtosis = serializers.FloatField(allow_null=True)
    internal_consistency = serializers.FloatField(allow_null=True, help_text="Cronbach's α, %")
    error_ratio = serializers.FloatField(allow_null=True)
    standard_error = serializers.FloatField(allow_null=True)


class ItemStatisticsSerializer(serializers.Serializer):
    attempts = serializers.IntegerField()
    facility = serializers.FloatField(allow_null=True)
    standard_deviation = serializers.FloatField(allow_null=True)
    random_guess_score = serializers.FloatField(allow_null=True)
    intended_weight = serializers.FloatField()
    effective_weight = serializers.FloatField(allow_null=True)
    discrimination_index = serializers.FloatField(allow_null=True)
    discriminative_efficiency = serializers.FloatField(allow_null=True)
    point_biserial = serializers.FloatField(allow_null=True)
    upper_lower_difference = serializers.FloatField(allow_null=True)


class OptionStatsSerializer(serializers.Serializer):
    key = serializers.CharField()
    correct = serializers.BooleanField(source="is_correct")
    chosen = serializers.IntegerField()
    share = serializers.FloatField(allow_null=True)
    share_top_third = serializers.FloatField(allow_null=True)
    share_bottom_third = serializers.FloatField(allow_null=True)
    never_chosen = serializers.BooleanField()
    attracts_strong_students = serializers.BooleanField()
    beats_key = serializers.BooleanField(help_text="Wrong, and chosen more often than the key.")


class QuestionStatsSerializer(serializers.Serializer):
    key = serializers.CharField()
    position = serializers.IntegerField()
    answered = serializers.IntegerField()
    facility = serializers.SerializerMethodField(help_text="Share answered right, 0 to 1.")
    mean_seconds = serializers.FloatField(allow_null=True)
    statistics = ItemStatisticsSerializer()
    options = OptionStatsSerializer(many=True)

    def get_facility(self, row) -> float | None:
        facility = row.statistics.facility
        return None if facility is None else facility / 100


class FailureReasonSerializer(serializers.Serializer):
    reason = serializers.CharField()
    count = serializers.IntegerField()


class SyncSummarySerializer(serializers.Serializer):
    synced = serializers.IntegerField()
    pending = serializers.IntegerField()
    failed = serializers.IntegerField()
    failure_reasons = serializers.SerializerMethodField()

    @extend_schema_field(FailureReasonSerializer(many=True))
    def get_failure_reasons(self, summary) -> list[dict]:
        return [{"reason": reason, "count": count} for reason, count in summary.failure_reasons]


class HistogramBinSerializer(serializers.Serializer):
    score = serializers.IntegerField()
    count = serializers.IntegerField()


class TimelineDaySerializer(serializers.Serializer):
    day = serializers.DateField()
    started = serializers.IntegerField()
    finished = serializers.IntegerField()


class LanguageCountSerializer(serializers.Serializer):
    language = serializers.CharField()
    attempts = serializers.IntegerField()


class AnalyticsSerializer(serializers.Serializer):
    """The quiz dashboard's figures for the attempts that count (?attempts=, ?finished_from=,
    ?finished_to=); ``attempts`` and ``finished`` count every attempt started (and of those,
    finished) in the date range, whatever the counting rule."""

    attempts = serializers.SerializerMethodField()
    finished = serializers.SerializerMethodField()
    mean_score = serializers.FloatField(source="statistics.mean", allow_null=True)
    counting = serializers.CharField(source="rules.counting")
    statistics = QuizStatisticsSerializer()
    score_histogram = serializers.SerializerMethodField()
    questions = QuestionStatsSerializer(many=True)
    timeline = serializers.SerializerMethodField()
    languages = serializers.SerializerMethodField()
    not_attempted = serializers.IntegerField(source="not_attempted_count")
    grade_sync = SyncSummarySerializer(source="sync")

    def get_attempts(self, dashboard) -> int:
        return sum(started for _day, started, _finished in dashboard.timeline)

    def get_finished(self, dashboard) -> int:
        return sum(finished for _day, _started, finished in dashboard.timeline)

    @extend_schema_field(HistogramBinSerializer(many=True))
    def get_score_histogram(self, dashboard) -> list[dict]:
        return [{"score": score, "count": count} for score, count in dashboard.histogram]

    @extend_schema_field(TimelineDaySerializer(many=True))
    def get_timeline(self, dashboard) -> list[dict]:
        return [
            {"day": day.isoformat(), "started": started, "finished": finished}
            for day, started, finished in dashboard.timeline
        ]

    @extend_schema_field(LanguageCountSerializer(many=True))
    def get_languages(self, dashboard) -> list[dict]:
        return [{"language": code, "attempts": count} for code, count in dashboard.languages]


class LabPointSerializer(serializers.Serializer):
    student = serializers.CharField()
    peak_bytes = serializers.IntegerField()
    recompute_flops = serializers.IntegerField()
    score = serializers.FloatField()
    within_budget = serializers.BooleanField()


class LabFailureSerializer(serializers.Serializer):
    status = serializers.CharField()
    cause = serializers.CharField()
    runs = serializers.IntegerField()


class LabAnalyticsSerializer(serializers.Serializer):
    budget_bytes = serializers.IntegerField()
    runs = serializers.IntegerField()
    measured = serializers.IntegerField()
    within_budget = serializers.IntegerField()
    share_within_budget = serializers.FloatField(allow_null=True)
    statuses = serializers.SerializerMethodField()
    failures = serializers.SerializerMethodField()
    points = LabPointSerializer(many=True)
    frontier = serializers.ListField(child=serializers.DictField())
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    mean_wait_seconds = serializers.FloatField(allow_null=True)
    run_seconds_by_device = serializers.SerializerMethodField()
    grade_sync = SyncSummarySerializer(source="sync")

    def get_statuses(self, dashboard) -> dict[str, int]:
        return dict(dashboard.statuses)

    @extend_schema_field(LabFailureSerializer(many=True))
    def get_failures(self, dashboard) -> list[dict]:
        return [
            {"status": status, "cause": error, "runs": count}
            for status, error, count in dashboard.failures
        ]

    def get_run_seconds_by_device(self, dashboard) -> dict[str, float]:
        return dict(dashboard.run_seconds_by_device)
