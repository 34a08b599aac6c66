"""The grading REST API (/api/v1/). Its endpoints land with the grading-API issue; the
router is here so every app registers its viewsets in one place."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

router = DefaultRouter()

app_name = "api"

urlpatterns = [
    path("v1/", include(router.urls)),
]
