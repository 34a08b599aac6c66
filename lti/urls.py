from django.urls import path

from . import views

app_name = "lti"

urlpatterns = [
    path("demo/launch/", views.demo_launch, name="demo-launch"),
]
