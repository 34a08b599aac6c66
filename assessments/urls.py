from django.urls import path

from . import views

app_name = "assessments"

urlpatterns = [
    path("quiz/<int:placement_id>/", views.placement, name="placement"),
    path("quiz/<int:placement_id>/start/", views.start_attempt, name="start"),
    path("quiz/<int:placement_id>/manage/", views.manage, name="manage"),
    path("attempts/<uuid:public_id>/", views.attempt_page, name="attempt"),
    path("attempts/<uuid:public_id>/answer/", views.answer, name="answer"),
    path(
        "attempts/<uuid:public_id>/questions/<int:position>/feedback/",
        views.feedback,
        name="feedback",
    ),
    path("attempts/<uuid:public_id>/summary/", views.summary, name="summary"),
]
