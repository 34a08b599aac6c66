from django.urls import include, path

from config.urls import urlpatterns as site

from . import views

exercise = (
    [path("exercises/<int:placement_id>/", views.placement, name="placement")],
    "kind_app",
)

# The site with the exercise kind's pages (tests that place an exercise use this URLconf).
urlpatterns = [*site, path("", include(exercise))]
