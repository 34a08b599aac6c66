"""The instructor's gradebook of a placement, whatever kind it places (a quiz, a lab): every
student with their grade, how it was reached and its sync to the LMS; overrides and their
clearing; a regrade of the class from its preview. Thin: access checks here, the work in
activities' services and this app's selectors."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from activities import registry
from activities import selectors as grade_selectors
from activities import services as grade_services
from activities.access import staff_placement
from activities.errors import DomainError, PreviewOutdated
from activities.views import render_error
from gradesync.services import unsyncable_reason
from lti.access import launch_required
from lti.models import ResourceLink
from ops.text import holds_unstorable_text

from . import selectors
from .forms import ClearOverrideForm, OverrideForm

# The grades page's search reads this many characters (gradebook.selectors); the order and
# the page are shorter still. A longer value made the address back to the page one that the
# redirect refuses, after an override had been saved.
KEPT_CHARS = 100


def _kept(data: Any) -> dict[str, str]:
    """The grades page's search, order and page, carried through its forms."""
    return {key: str(data.get(key))[:KEPT_CHARS] for key in ("q", "sort", "page") if data.get(key)}


def _grades_url(placement: ResourceLink, data: Any) -> str:
    """The grades page with the search, order and page it was at."""
    kept = _kept(data)
    url = reverse("gradebook:grades", args=[placement.pk])
    return f"{url}?{urlencode(kept)}" if kept else url


def _refused_search(request: HttpRequest) -> HttpResponse | None:
    """The site's 400 page when the grades page's search holds what no database text can
    hold (a NUL; an unpaired surrogate, should one get through), before anything is read or
    changed; None when the search can be run."""
    data = request.GET if request.method == "GET" else request.POST
    if not holds_unstorable_text(str(data.get("q", ""))):
        return None
    return render_error(
        request,
        _(
            "The search contains a NUL character or text that is not valid Unicode. "
            "Remove it and search again."
        ),
        400,
    )


def _render_grades(
    request: HttpRequest, placement: ResourceLink, *, error: str = "", status: int = 200
) -> HttpResponse:
    data = request.GET if request.method == "GET" else request.POST
    table = selectors.grade_table(
        placement,
        search=str(data.get("q", "")),
        sort=str(data.get("sort", "name")),
        page=data.get("page", 1),
    )
    context = {
        "placement": placement,
        "title": grade_selectors.activity_title(placement, get_language()),
        "table": table,
        "manage_url": registry.kind_of(placement).manage_url(placement),
        "kept": _kept(data),
        "score_maximum": grade_selectors.placement_score_maximum(placement),
        "unsyncable_reason": unsyncable_reason(placement),
        "changes": grade_selectors.grade_changes(placement),
        "error": error,
    }
    return render(request, "gradebook/grades.html", context, status=status)


@require_GET
@launch_required
def grades(request: HttpRequest, placement_id: int) -> HttpResponse:
    """The instructor's gradebook of a placement (a quiz or a lab): every student, their
    attempts or runs, the grade and how it was reached, its sync state; overrides."""
    found = staff_placement(request, placement_id)
    refused = _refused_search(request)
    return refused if refused is not None else _render_grades(request, found)


def _form_error(form: OverrideForm | ClearOverrideForm) -> str:
    return " ".join(
        f"{form.fields[name].label or name}: {message}" if name != "__all__" else str(message)
        for name, errors in form.errors.items()
        for message in errors
    )


@require_POST
@launch_required
def override(request: HttpRequest, placement_id: int) -> HttpResponse:
    found = staff_placement(request, placement_id)
    if (refused := _refused_search(request)) is not None:
        return refused
    form = OverrideForm(request.POST)
    if not form.is_valid():
        return _render_grades(request, found, error=_form_error(form), status=400)
    data = form.cleaned_data
    user = grade_selectors.course_student(found, data["user"])
    if user is None:
        return _render_grades(
            request, found, error=_("No such student in this course."), status=404
        )
    try:
        grade_services.override_grade(
            placement=found,
            user=user,
            score_given=data["score_given"],
            reason=data["reason"],
            share_reason=data["share_reason"],
            actor=request.user,
        )
    except DomainError as error:
        return _render_grades(request, found, error=error.message, status=error.status_code)
    messages.success(request, _("The grade was overridden."))
    return redirect(_grades_url(found, request.POST))


@require_POST
@launch_required
def clear_override(request: HttpRequest, placement_id: int) -> HttpResponse:
    found = staff_placement(request, placement_id)
    if (refused := _refused_search(request)) is not None:
        return refused
    form = ClearOverrideForm(request.POST)
    if not form.is_valid():
        return _render_grades(request, found, error=_form_error(form), status=400)
    user = grade_selectors.course_student(found, form.cleaned_data["user"])
    if user is None:
        return _render_grades(
            request, found, error=_("No such student in this course."), status=404
        )
    try:
        grade_services.clear_override(
            placement=found,
            user=user,
            actor=request.user,
            reason=form.cleaned_data["reason"],
        )
    except DomainError as error:
        return _render_grades(request, found, error=error.message, status=error.status_code)
    messages.success(request, _("The override was cleared; the grade follows the rules again."))
    return redirect(_grades_url(found, request.POST))


def _render_preview(
    request: HttpRequest, placement: ResourceLink, *, error: str = "", status: int = 200
) -> HttpResponse:
    context = {
        "placement": placement,
        "title": grade_selectors.activity_title(placement, get_language()),
        "plan": grade_selectors.regrade_plan(
            placement, apply_key=registry.kind_of(placement).regrade_applies_key
        ),
        "error": error,
    }
    return render(request, "gradebook/regrade.html", context, status=status)


@require_http_methods(["GET", "POST"])
@launch_required
def regrade(request: HttpRequest, placement_id: int) -> HttpResponse:
    """GET: what a regrade of the whole class would change. POST: do exactly that (refused
    when it is no longer what the preview showed)."""
    found = staff_placement(request, placement_id)
    if request.method == "GET":
        return _render_preview(request, found)
    try:
        done = grade_services.regrade_placement(
            placement=found,
            actor=request.user,
            expected=str(request.POST.get("fingerprint", ""))[:64],
        )
    except PreviewOutdated as error:
        return _render_preview(request, found, error=error.message, status=error.status_code)
    messages.success(
        request,
        _("Regraded: %(attempts)d attempts and %(grades)d grades changed.")
        % {"attempts": done.attempts_changed, "grades": done.grades_changed},
    )
    return redirect("gradebook:grades", placement_id=found.pk)
