from django.urls import path

from . import views

app_name = "labs"

urlpatterns = [
    path("lab/<int:placement_id>/", views.placement, name="placement"),
    path("lab/<int:placement_id>/runs/", views.submit, name="submit"),
    path("lab/<int:placement_id>/estimate/", views.estimate, name="estimate"),
    path("lab/<int:placement_id>/manage/", views.manage, name="manage"),
    path("runs/<uuid:public_id>/", views.run_page, name="run"),
]
