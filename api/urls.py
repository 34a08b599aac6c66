"""The grading REST API: /api/v1/, its OpenAPI schema and browsable docs."""

from django.conf import settings
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("activities", views.ActivityViewSet, basename="activity")
router.register("placements", views.PlacementViewSet, basename="placement")
router.register("attempts", views.AttemptViewSet, basename="attempt")
router.register("responses", views.ResponseViewSet, basename="response")
router.register("lab-runs", views.LabRunViewSet, basename="lab-run")
router.register("grades", views.GradeViewSet, basename="grade")
router.register("overrides", views.OverrideViewSet, basename="override")
router.register("regrades", views.RegradeViewSet, basename="regrade")
router.register("roster", views.RosterViewSet, basename="roster")
router.register("tokens", views.TokenViewSet, basename="token")

app_name = "api"

urlpatterns = [
    path("v1/", include(router.urls)),
    # The API has one version: drf-spectacular would otherwise take ?version= into the
    # download's file name, where a line break was a server error.
    path(
        "schema/",
        SpectacularAPIView.as_view(api_version=settings.SPECTACULAR_SETTINGS["VERSION"]),
        name="schema",
    ),
    # The split view serves its script as a file of its own: no inline script (CSP).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
]
