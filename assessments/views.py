"""Student pages of the quiz. Thin: access checks here, domain work in services and
selectors, and every refusal is a page that says what went wrong."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from activities import selectors as grade_selectors
from activities.access import member_placement, staff_placement
from activities.errors import DomainError, OutsideLaunch
from activities.views import render_error, report_recomputation
from lti.access import launch_required, launched_contexts
from lti.models import ResourceLink, Role

from . import frames, selectors, services
from .forms import PlacementSettingsForm
from .models import Attempt


def _own_attempt(request: HttpRequest, public_id: Any) -> selectors.AttemptView:
    """The user's attempt, reached as its activity's pages are: from a session launched into
    its course, while that launch's membership and LMS are still there."""
    view = selectors.own_attempt_view(request.user, public_id, get_language())
    if view is None:
        raise Http404("No such attempt of this user.")
    _check_reached(request, view)
    return view


def _check_reached(request: HttpRequest, view: selectors.AttemptView) -> None:
    if not view.course.reachable_from(launched_contexts(request)):
        raise PermissionDenied(OutsideLaunch().message)


# The activity's page lists this many of a student's latest attempts unless asked for all
# (?attempts=all): a quiz with unlimited attempts may have hundreds.
LISTED_ATTEMPTS = 10


@require_GET
@launch_required
def placement(request: HttpRequest, placement_id: int) -> HttpResponse:
    found, role = member_placement(request, placement_id, "quiz")
    overview = selectors.placement_overview(
        user=request.user,
        placement_id=found.pk,
        language=get_language(),
        listed=None if request.GET.get("attempts") == "all" else LISTED_ATTEMPTS,
    )
    return render(
        request,
        "assessments/placement.html",
        {"overview": overview, "placement": found, "is_staff": role == Role.STAFF},
    )


def _render_manage(
    request: HttpRequest, placement: ResourceLink, form: PlacementSettingsForm, status: int = 200
) -> HttpResponse:
    context = {
        "form": form,
        "placement": placement,
        "title": grade_selectors.activity_title(placement, get_language()),
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
            "quiz": selectors.placed_quiz(found),
            "title": found.title,
            "max_attempts": policy.max_attempts,
            "grading_method": policy.grading_method,
        }
        return _render_manage(request, found, PlacementSettingsForm(initial=initial))
    form = PlacementSettingsForm(request.POST)
    if not form.is_valid():
        return _render_manage(request, found, form, status=400)
    regrade = services.change_quiz_settings(found, actor=request.user, **form.cleaned_data)
    messages.success(request, _("Settings saved."))
    report_recomputation(request, regrade)
    return redirect("assessments:manage", placement_id=found.pk)


@require_http_methods(["GET", "POST"])
@launch_required
def start_attempt(request: HttpRequest, placement_id: int) -> HttpResponse:
    if request.method == "GET":
        # The start's address, where a browser without JavaScript shows the question the POST
        # returned: bookmarked or restored, it leads to the activity's page.
        return redirect("assessments:placement", placement_id=placement_id)
    try:
        started = services.start_or_resume_attempt(
            user=request.user,
            placement_id=placement_id,
            launched_courses=list(launched_contexts(request)),
            language=get_language(),
        )
    except DomainError as error:
        return render_error(request, error.message, error.status_code)
    # Answered by the attempt's question, which names its own address (as an answer and a
    # launch are, decisions 57 and 60): one request fewer per attempt. Posted again (a
    # reload), the start resumes the same attempt and answers with the same page. Either is in
    # progress.
    return render_question(request, started)


@require_GET
@launch_required
def attempt_page(request: HttpRequest, public_id: Any) -> HttpResponse:
    """The attempt's current question, or its results once it is finished."""
    view = _own_attempt(request, public_id)
    if view.attempt.is_finished:
        return redirect("assessments:summary", public_id=public_id)
    return render_question(request, view)


def render_question(request: HttpRequest, view: selectors.AttemptView) -> HttpResponse:
    """The page of an attempt in progress at its current question; also a launch's answer
    where it lands there (decision 60), naming this page's address for the browser to show
    and reload."""
    question = view.current_question
    if question is None:  # the last answer finishes the attempt in its own transaction
        raise Http404("This attempt has no question left to answer.")
    return HttpResponse(frames.question_page(view, question, get_token(request)))


@require_http_methods(["GET", "POST"])
@launch_required
def answer(request: HttpRequest, public_id: Any) -> HttpResponse:
    if request.method == "GET":
        # The answer's address, where a browser without JavaScript shows the page the POST
        # returned: bookmarked, restored or shared, it leads to where the attempt is now.
        return redirect("assessments:attempt", public_id=public_id)
    try:
        answered = services.submit_answer(
            user=request.user,
            launched_courses=list(launched_contexts(request)),
            attempt_public_id=public_id,
            question_id=request.POST.get("question"),
            option_id=request.POST.get("option"),
            language=get_language(),
        )
    except Attempt.DoesNotExist:
        raise Http404("No such attempt of this user.") from None
    except DomainError as error:
        return render_error(request, error.message, error.status_code)
    # The answer's own response is its page (decision 57): its feedback with the next question
    # under it, or after the last the results, opening with that answer's feedback. One
    # request per answer; the page names its own address, which a reload fetches.
    if answered.finished:
        return _summary_page(
            request, public_id, answered.position, answered.view, answered.overview
        )
    return _feedback_page(request, public_id, answered.position, answered.view)


@require_GET
@launch_required
def feedback(request: HttpRequest, public_id: Any, position: int) -> HttpResponse:
    return _feedback_page(request, public_id, position)


def _feedback_page(
    request: HttpRequest,
    public_id: Any,
    position: int,
    view: selectors.AttemptView | None = None,
) -> HttpResponse:
    """The feedback on the answer at ``position``, from ``view`` where the answer just read
    the attempt (decision 79)."""
    view = view or _own_attempt(request, public_id)
    attempt = view.attempt
    question = view.question_at(position)
    if question is None:
        raise Http404(_("This quiz has no question %(position)s.") % {"position": position})
    if not question.answered:
        return redirect("assessments:attempt", public_id=attempt.public_id)
    # The next question's form is on the same page, under the feedback: one page and one
    # click per answer, for the student and the server.
    return HttpResponse(frames.feedback_page(view, question, get_token(request)))


@require_GET
@launch_required
def summary(request: HttpRequest, public_id: Any) -> HttpResponse:
    # Right after the last answer (?answered=N): that answer's feedback first.
    try:
        answered = int(request.GET.get("answered", ""))
    except ValueError:
        answered = None
    return _summary_page(request, public_id, answered)


def _summary_page(
    request: HttpRequest,
    public_id: Any,
    answered: int | None,
    view: selectors.AttemptView | None = None,
    overview: selectors.PlacementOverview | None = None,
) -> HttpResponse:
    """The results of the finished attempt, from ``view`` and ``overview`` where the last
    answer's statement read the attempt and its finish the rest (decisions 86 and 87), or
    else from one read of both (decision 89)."""
    if view is None or overview is None:
        found = selectors.own_results(request.user, public_id, get_language())
        if found is None:
            raise Http404("No such attempt of this user.")
        view, overview = found
        _check_reached(request, view)
    if not view.attempt.is_finished:
        return redirect("assessments:attempt", public_id=public_id)
    just_answered = None if answered is None else view.question_at(answered)
    return HttpResponse(frames.results_page(view, overview, just_answered, get_token(request)))
