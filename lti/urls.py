from django.urls import path

from . import views

app_name = "lti"

urlpatterns = [
    path("login/", views.login, name="login"),
    path("launch/", views.launch, name="launch"),
    path("jwks/", views.jwks, name="jwks"),
    path("register/", views.register, name="register"),
    path("deep-link/<str:token>/", views.deep_link, name="deep-link"),
    path("handoff/<str:token>/", views.continue_in_window, name="handoff"),
    path("demo/launch/", views.demo_launch, name="demo-launch"),
    path("roster/<int:placement_id>/refresh/", views.roster_refresh, name="roster-refresh"),
]
