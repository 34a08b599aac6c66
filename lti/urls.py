from django.urls import path

from ops.throttling import limited

from . import views

app_name = "lti"

# The entries anyone can reach are rate-limited per client address (decision 30).
urlpatterns = [
    path("login/", limited("lti_login")(views.login), name="login"),
    path("launch/", limited("lti_launch")(views.launch), name="launch"),
    path("jwks/", views.jwks, name="jwks"),
    path("register/", limited("lti_registration")(views.register), name="register"),
    path("handoff/<str:token>/", views.continue_in_window, name="handoff"),
    path(
        "return-channel/status/",
        limited("lti_relay")(views.return_channel_status),
        name="return-channel-status",
    ),
    path(
        "return-channel/answer/",
        limited("lti_relay")(views.return_channel_answer),
        name="return-channel-answer",
    ),
    path("roster/<int:placement_id>/refresh/", views.roster_refresh, name="roster-refresh"),
]
