from django.urls import path

from . import views

app_name = "gradesync"

urlpatterns = [
    path("grade-sync/<int:sync_id>/retry/", views.retry, name="retry"),
]
