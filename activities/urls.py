from django.urls import path

from ops.throttling import limited

from . import views

app_name = "activities"

urlpatterns = [
    # Under /lti/, where the launch that leads to them came in (cookies scoped to /lti/).
    path("lti/deep-link/<str:token>/", views.deep_link, name="deep-link"),
    path("lti/demo/launch/", limited("demo")(views.demo_launch), name="demo-launch"),
]
