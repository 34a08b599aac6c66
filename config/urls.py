from django.contrib import admin
from django.urls import include, path

from lti import views as lti_views
from ops.metrics import metrics

from . import views
from .health import healthz, readyz

urlpatterns = [
    path("", views.home, name="home"),
    path("", include("assessments.urls")),
    path("lti/", include("lti.urls")),
    path("", include("activities.urls")),
    path("", include("gradesync.urls")),
    path("", include("gradebook.urls")),
    path("", include("labs.urls")),
    path("", include("analytics.urls")),
    path("api/", include("api.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
    path(".well-known/jwks.json", lti_views.jwks, name="well-known-jwks"),
]
