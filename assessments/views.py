"""Student pages of the quiz. Thin: access checks here, domain work in services and
selectors, and every refusal is a page that says what went wrong."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from gradesync.selectors import gradebook
from lti.access import launch_required, member_placement, staff_placement
from lti.dynamic_registration import tool_urls
from lti.forms import PlacementSettingsForm
from lti.models import ResourceLink, Role
from lti.services import update_placement
from lti.views import tool_base_url

from . import selectors, services
from .errors import AssessmentError
from .models import Attempt


def render_error(request: HttpRequest, message: str, status: int) -> HttpResponse:
    return render(request, "error.html", {"message": message}, status=status)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return render_error(
        request,
        _(
            "Your form could not be accepted because its security token is missing or "
            "expired (or your browser blocks this site's cookies). Reload the page and try again."
        ),
        403,
    )


def _own_attempt(request: HttpRequest, public_id: Any) -> Attempt:
    return get_object_or_404(selectors.attempts_of(request.user), public_id=public_id)


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "home.html",
        {"demo_mode": settings.DEMO_MODE, "tool_urls": tool_urls(tool_base_url(request))},
    )


@require_GET
@launch_required
def placement(request: HttpRequest, placement_id: int) -> HttpResponse:
    found, role = member_placement(request, placement_id, "quiz")
    overview = selectors.placement_overview(
        user=request.user, placement=found, language=get_language()
    )
    return render(
        request,
        "assessments/placement.html",
        {"overview": overview, "is_staff": role == Role.STAFF},
    )


def _render_manage(
    request: HttpRequest, placement: ResourceLink, form: PlacementSettingsForm, status: int = 200
) -> HttpResponse:
    context = {
        "form": form,
        "placement": placement,
        "gradebook": gradebook(placement),
    }
    return render(request, "assessments/manage.html", context, status=status)


@require_http_methods(["GET", "POST"])
@launch_required
def manage(request: HttpRequest, placement_id: int) -> HttpResponse:
    """The instructor's view of a placement: its settings (re-point it at another activity,
    attempts, grading method) and the class's grades so far."""
    found = staff_placement(request, placement_id, "quiz")
    if request.method == "GET":
        policy = selectors.attempt_policy(found)
        initial = {
            "quiz": found.quiz,
            "title": found.title,
            "max_attempts": policy.max_attempts,
            "grading_method": policy.grading_method,
        }
        return _render_manage(request, found, PlacementSettingsForm(initial=initial))
    form = PlacementSettingsForm(request.POST)
    if not form.is_valid():
        return _render_manage(request, found, form, status=400)
    update_placement(found, **form.cleaned_data)
    return redirect("assessments:manage", placement_id=found.pk)


@require_POST
@launch_required
def start_attempt(request: HttpRequest, placement_id: int) -> HttpResponse:
    found, _role = member_placement(request, placement_id, "quiz")
    try:
        attempt = services.start_or_resume_attempt(
            user=request.user, placement=found, language=get_language()
        )
    except AssessmentError as error:
        return render_error(request, error.message, error.status_code)
    return redirect("assessments:attempt", public_id=attempt.public_id)


@require_GET
@launch_required
def attempt_page(request: HttpRequest, public_id: Any) -> HttpResponse:
    attempt = _own_attempt(request, public_id)
    if attempt.is_finished:
        return redirect("assessments:summary", public_id=attempt.public_id)
    view = selectors.attempt_view(attempt, get_language())
    return render(
        request,
        "assessments/question.html",
        {"view": view, "question": view.current_question},
    )


@require_POST
@launch_required
def answer(request: HttpRequest, public_id: Any) -> HttpResponse:
    try:
        answered = services.submit_answer(
            user=request.user,
            attempt_public_id=public_id,
            question_id=request.POST.get("question"),
            option_id=request.POST.get("option"),
        )
    except Attempt.DoesNotExist:
        raise Http404("No such attempt of this user.") from None
    except AssessmentError as error:
        return render_error(request, error.message, error.status_code)
    return redirect("assessments:feedback", public_id=public_id, position=answered.position)


@require_GET
@launch_required
def feedback(request: HttpRequest, public_id: Any, position: int) -> HttpResponse:
    attempt = _own_attempt(request, public_id)
    view = selectors.attempt_view(attempt, get_language())
    question = view.question_at(position)
    if question is None:
        raise Http404(_("This quiz has no question %(position)s.") % {"position": position})
    if not question.answered:
        return redirect("assessments:attempt", public_id=attempt.public_id)
    return render(
        request,
        "assessments/feedback.html",
        {"view": view, "question": question, "finished": attempt.is_finished},
    )


@require_GET
@launch_required
def summary(request: HttpRequest, public_id: Any) -> HttpResponse:
    attempt = _own_attempt(request, public_id)
    if not attempt.is_finished:
        return redirect("assessments:attempt", public_id=attempt.public_id)
    view = selectors.attempt_view(attempt, get_language())
    return render(request, "assessments/summary.html", {"view": view})
