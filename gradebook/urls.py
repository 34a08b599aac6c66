from django.urls import path

from . import views

app_name = "gradebook"

urlpatterns = [
    path("placements/<int:placement_id>/grades/", views.grades, name="grades"),
    path("placements/<int:placement_id>/grades/override/", views.override, name="override"),
    path(
        "placements/<int:placement_id>/grades/clear-override/",
        views.clear_override,
        name="clear-override",
    ),
    path("placements/<int:placement_id>/grades/regrade/", views.regrade, name="regrade"),
]
