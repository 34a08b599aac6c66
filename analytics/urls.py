from django.urls import path

from . import views

app_name = "analytics"

urlpatterns = [
    path("dashboard/<int:placement_id>/", views.dashboard, name="dashboard"),
    path("dashboard/<int:placement_id>/<slug:kind>.csv", views.export, name="export"),
]
