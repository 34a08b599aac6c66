from django.conf import settings
from django.contrib.auth import login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from .services import DemoUnavailable, enrol_demo_learner


@require_POST
def demo_launch(request: HttpRequest) -> HttpResponse:
    """Stands in for an LMS launch in the demo course: a new demo student, signed in."""
    if not settings.DEMO_MODE:
        raise Http404("The demo is turned off on this server.")
    try:
        user, placement = enrol_demo_learner()
    except DemoUnavailable as error:
        return render(request, "error.html", {"message": str(error)}, status=503)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect("assessments:placement", placement_id=placement.pk)
