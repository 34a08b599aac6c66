"""The grading API. Views scope querysets to the caller (api/access.py) and call the same
services the pages use; they hold no domain logic."""

from __future__ import annotations

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response as ApiResponse

from activities import registry
from activities import services as grade_services
from activities.errors import DomainError
from activities.models import Grade, GradeOverride, Regrade
from activities.selectors import regrade_plan
from analytics.forms import DashboardFilterForm
from analytics.selectors import COUNTING_RULES, lab_dashboard, quiz_dashboard
from assessments.models import Attempt, Response
from gradesync.models import GradeSync
from labs.models import LabRun
from lti.models import Context, Membership, ResourceLink

from . import filters, serializers
from .access import ApiScope, scope_for
from .exceptions import domain_error
from .models import ApiToken
from .tokens import create_token, revoke_token

# The public id (a UUID) of an attempt or a lab run, in a path.
UUID_CHARACTERS = "[0-9a-fA-F-]+"


class ScopedViewSet(viewsets.GenericViewSet):
    # A row's id in a path is ASCII digits, as in Django's <int:> paths: DRF's default takes
    # any text, and int() reads other scripts' digits ("\u0661\u0662" as 12).
    lookup_value_regex = "[0-9]+"

    @property
    def scope(self) -> ApiScope:
        if not hasattr(self, "_scope"):
            self._scope = scope_for(self.request)
        return self._scope

    def staff_placement(self, placement_id: int, *, write: bool) -> ResourceLink:
        placement = (
            ResourceLink.objects.select_related("context", "placement")
            .filter(self.scope.contexts("context_id"), pk=placement_id)
            .first()
        )
        if placement is None:
            raise NotFound("No such placement in your courses.")
        allowed = (self.scope.may_write if write else self.scope.is_staff_of)(placement.context_id)
        if not allowed:
            raise PermissionDenied(
                "This needs staff access to the course" + (" with a write token." if write else ".")
            )
        return placement


class ActivityViewSet(ScopedViewSet):
    """Activities that can be placed in a course: every registered kind's (the quizzes, the
    labs), ordered by kind and slug."""

    serializer_class = serializers.ActivitySerializer
    filter_backends: list = []

    def get_queryset(self) -> list[dict]:
        """The rows, from the registered kinds' catalogues rather than one model (the
        browsable API asks for them too)."""
        languages = [code for code, _name in settings.LANGUAGES]
        return sorted(
            (
                {
                    "key": f"{kind.key}:{kind.slug_of(activity)}",
                    "kind": kind.key,
                    "slug": kind.slug_of(activity),
                    "title": {code: kind.title_of(activity, code) for code in languages},
                    "score_maximum": kind.score_maximum_of(activity),
                }
                for kind in registry.kinds()
                for activity in kind.catalogue()
            ),
            key=lambda row: (row["kind"], row["slug"]),
        )

    def list(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class PlacementViewSet(ScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Placements (resource links) of activities in the caller's courses."""

    queryset = ResourceLink.objects.none()  # for the schema; get_queryset scopes it

    serializer_class = serializers.PlacementSerializer
    filterset_class = filters.PlacementFilter
    ordering_fields = ["id", "title"]
    ordering = ["id"]

    def get_queryset(self):
        return ResourceLink.objects.filter(self.scope.contexts("context_id")).select_related(
            "context",
            "placement",
            *(name for kind in registry.kinds() for name in kind.select_related),
        )

    @extend_schema(
        responses=serializers.AnalyticsSerializer,
        parameters=[
            OpenApiParameter("attempts", str, enum=list(COUNTING_RULES)),
            OpenApiParameter("finished_from", OpenApiTypes.DATE),
            OpenApiParameter("finished_to", OpenApiTypes.DATE),
        ],
    )
    @action(detail=True, methods=["get"])
    def analytics(self, request, pk=None):
        """The quiz dashboard's statistics (Moodle's definitions), for the course's staff."""
        placement = self.staff_placement(int(pk), write=False)
        if not registry.places(placement, "quiz"):
            raise ValidationError({"placement": "This is a lab; see its lab-analytics."})
        form = DashboardFilterForm(request.query_params or None)
        if form.is_bound and not form.is_valid():
            raise ValidationError(form.errors.get_json_data())
        dashboard = quiz_dashboard(placement, form.rules())
        return ApiResponse(serializers.AnalyticsSerializer(dashboard).data)

    @extend_schema(responses=serializers.LabAnalyticsSerializer)
    @action(detail=True, methods=["get"], url_path="lab-analytics")
    def lab_analytics(self, request, pk=None):
        """The lab dashboard's figures: runs, budget, failures, queue and device time."""
        placement = self.staff_placement(int(pk), write=False)
        if not registry.places(placement, "lab"):
            raise ValidationError({"placement": "This is a quiz; see its analytics."})
        return ApiResponse(serializers.LabAnalyticsSerializer(lab_dashboard(placement)).data)


class AttemptViewSet(ScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Attempts: staff see their courses', learners their own."""

    queryset = Attempt.objects.none()  # for the schema; get_queryset scopes it

    lookup_field = "public_id"
    lookup_value_regex = UUID_CHARACTERS
    filterset_class = filters.AttemptFilter
    ordering_fields = ["started_at", "finished_at", "score", "number"]
    ordering = ["-started_at"]

    def get_serializer_class(self):
        if self.action == "retrieve":
            return serializers.AttemptDetailSerializer
        return serializers.AttemptSerializer

    def get_queryset(self):
        queryset = Attempt.objects.filter(
            self.scope.rows("placement__context_id", "user")
        ).select_related("user__lti_user", "quiz_version")
        if self.action == "retrieve":
            queryset = queryset.prefetch_related("responses__question", "responses__option")
        return queryset


class LabRunViewSet(ScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Lab runs with what the runner measured: staff see their courses', learners their own."""

    queryset = LabRun.objects.none()  # for the schema; get_queryset scopes it

    lookup_field = "public_id"
    lookup_value_regex = UUID_CHARACTERS
    filterset_class = filters.LabRunFilter
    ordering_fields = ["submitted_at", "finished_at", "score", "number"]
    ordering = ["-submitted_at"]

    def get_serializer_class(self):
        if self.action == "retrieve":
            return serializers.LabRunDetailSerializer
        return serializers.LabRunSerializer

    def get_queryset(self):
        return LabRun.objects.filter(
            self.scope.rows("placement__context_id", "user")
        ).select_related("user__lti_user")


class ResponseViewSet(ScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    queryset = Response.objects.none()  # for the schema; get_queryset scopes it
    serializer_class = serializers.ResponseSerializer
    filterset_class = filters.ResponseFilter
    ordering_fields = ["answered_at", "id"]
    ordering = ["id"]

    def get_queryset(self):
        return Response.objects.filter(
            self.scope.rows("attempt__placement__context_id", "attempt__user")
        ).select_related("attempt", "question", "option")


class GradeViewSet(ScopedViewSet, mixins.ListModelMixin, mixins.RetrieveModelMixin):
    """Each student's current grade per placement, how it was computed and its sync state."""

    queryset = Grade.objects.none()  # for the schema; get_queryset scopes it

    serializer_class = serializers.GradeSerializer
    filterset_class = filters.GradeFilter
    ordering_fields = ["updated_at", "score_given", "id"]
    ordering = ["id"]

    def get_queryset(self):
        latest = GradeSync.objects.filter(grade=OuterRef("pk")).order_by("-created_at", "-pk")
        return (
            Grade.objects.filter(self.scope.rows("placement__context_id", "user"))
            .select_related("user__lti_user", "placement")
            .annotate(
                sync_state=Subquery(latest.values("state")[:1]),
                sync_error=Subquery(latest.values("last_error")[:1]),
                sync_synced_at=Subquery(latest.values("synced_at")[:1]),
            )
        )

    def get_serializer_context(self) -> dict:
        # The serializer shows each grade as the caller's role in its course allows.
        return {**super().get_serializer_context(), "scope": self.scope}

    @extend_schema(
        request=serializers.ClearOverrideInputSerializer, responses=serializers.GradeSerializer
    )
    @action(detail=True, methods=["post"], url_path="clear-override")
    def clear_override(self, request, pk=None):
        """Give an overridden grade back to the rules (staff with write access)."""
        data = serializers.ClearOverrideInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        grade = self.get_object()
        placement = self.staff_placement(grade.placement_id, write=True)
        try:
            grade_services.clear_override(
                placement=placement,
                user=grade.user,
                actor=request.user,
                reason=data.validated_data["reason"],
            )
        except DomainError as error:
            return domain_error(error)
        return ApiResponse(self.get_serializer(self.get_object()).data)


class OverrideViewSet(ScopedViewSet, mixins.ListModelMixin, mixins.CreateModelMixin):
    """The audit trail of grade overrides; staff with write access create them."""

    queryset = GradeOverride.objects.none()  # for the schema; get_queryset scopes it

    serializer_class = serializers.OverrideSerializer
    ordering_fields = ["created_at"]
    ordering = ["-created_at"]

    def get_queryset(self):
        queryset = GradeOverride.objects.select_related("grade", "created_by__lti_user")
        return queryset.filter(self.scope.rows("grade__placement__context_id"))

    @extend_schema(
        request=serializers.OverrideInputSerializer, responses={201: serializers.OverrideSerializer}
    )
    def create(self, request, *args, **kwargs):
        data = serializers.OverrideInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        placement = self.staff_placement(data.validated_data["placement"], write=True)
        member = (
            Membership.objects.select_related("user")
            .filter(context_id=placement.context_id, user_id=data.validated_data["user"])
            .first()
        )
        if member is None:
            raise NotFound("No such student in this course.")
        try:
            override = grade_services.override_grade(
                placement=placement,
                user=member.user,
                score_given=data.validated_data["score_given"],
                reason=data.validated_data["reason"],
                share_reason=data.validated_data["share_reason"],
                actor=request.user,
            )
        except DomainError as error:
            return domain_error(error)
        body = serializers.OverrideSerializer(override).data
        return ApiResponse(body, status=status.HTTP_201_CREATED)


class RegradeViewSet(ScopedViewSet, mixins.ListModelMixin, mixins.CreateModelMixin):
    """Recompute a placement's grades by its rules in force (a quiz's attempts against its
    current key too); ``preview`` says what that would change without writing."""

    queryset = Regrade.objects.none()  # for the schema; get_queryset scopes it

    serializer_class = serializers.RegradeSerializer
    ordering_fields = ["created_at"]
    ordering = ["-created_at"]

    def get_queryset(self):
        queryset = Regrade.objects.select_related("created_by__lti_user")
        if self.scope.staff_contexts is not None:
            queryset = queryset.filter(placement__context_id__in=self.scope.staff_contexts)
        return queryset

    @extend_schema(
        request=serializers.RegradeInputSerializer,
        responses={
            201: serializers.RegradeSerializer,
            200: serializers.RegradePreviewSerializer,
        },
    )
    def create(self, request, *args, **kwargs):
        data = serializers.RegradeInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        placement = self.staff_placement(data.validated_data["placement"], write=True)
        if data.validated_data["preview"]:
            applies_key = registry.kind_of(placement).regrade_applies_key
            plan = regrade_plan(placement, apply_key=applies_key)
            return ApiResponse(serializers.RegradePreviewSerializer(plan).data)
        try:
            regrade = grade_services.regrade_placement(
                placement=placement,
                actor=request.user,
                expected=data.validated_data.get("expected"),
            )
        except DomainError as error:
            return domain_error(error)
        return ApiResponse(
            serializers.RegradeSerializer(regrade).data, status=status.HTTP_201_CREATED
        )


class RosterViewSet(ScopedViewSet, mixins.ListModelMixin):
    """Course members (from launches and NRPS), for staff."""

    queryset = Membership.objects.none()  # for the schema; get_queryset scopes it

    serializer_class = serializers.RosterSerializer
    filterset_class = filters.RosterFilter
    ordering_fields = ["id"]
    ordering = ["id"]

    def get_queryset(self):
        queryset = Membership.objects.select_related("user__lti_user")
        if self.scope.staff_contexts is not None:
            queryset = queryset.filter(context_id__in=self.scope.staff_contexts)
        return queryset


class SignedInSession(BasePermission):
    """A signed-in session, not an API token: a token reaches one course, but its creator's
    tokens span every course they teach, so a token neither lists, creates nor revokes them."""

    message = "Tokens are managed from a signed-in session, not a token."

    def has_permission(self, request, view) -> bool:
        return not isinstance(request.auth, ApiToken)


class TokenViewSet(
    ScopedViewSet, mixins.ListModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin
):
    """API tokens of the signed-in staff member, listed, created and revoked from an LTI
    session only (a token is refused with 403)."""

    queryset = ApiToken.objects.none()  # for the schema; get_queryset scopes it

    permission_classes = [IsAuthenticated, SignedInSession]
    serializer_class = serializers.TokenSerializer
    ordering = ["-created_at"]

    def get_queryset(self):
        return ApiToken.objects.filter(created_by=self.request.user)

    @extend_schema(
        request=serializers.TokenSerializer, responses={201: serializers.NewTokenSerializer}
    )
    def create(self, request, *args, **kwargs):
        data = serializers.TokenSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        course_id = data.validated_data.get("context_id")
        if course_id is None:
            if not request.user.is_superuser:
                raise PermissionDenied("Only administrators may create site-wide tokens.")
            context = None
        else:
            if not self.scope.is_staff_of(course_id):
                raise NotFound("No such course among those you teach.")
            context = get_object_or_404(Context, pk=course_id)
        token, value = create_token(
            actor=request.user,
            name=data.validated_data["name"],
            context=context,
            can_write=data.validated_data.get("can_write", False),
        )
        body = {**serializers.TokenSerializer(token).data, "token": value}
        return ApiResponse(body, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: ApiToken) -> None:
        revoke_token(instance)
