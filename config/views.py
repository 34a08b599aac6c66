"""The site shell: the home page and the refusal pages every app shares (the error pages
themselves are templates/400.html … 500.html, which Django's default handlers render)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from activities.views import render_error
from lti.dynamic_registration import registration_mode, tool_urls
from lti.views import tool_base_url


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return render_error(
        request,
        _(
            "Your form could not be accepted because its security token is missing or "
            "expired (or your browser blocks this site's cookies). Reload the page and try again."
        ),
        403,
    )


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "home.html",
        {
            "demo_mode": settings.DEMO_MODE,
            "tool_urls": tool_urls(tool_base_url(request)),
            "registration_mode": registration_mode(),
        },
    )
