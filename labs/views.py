"""Lab pages. Thin: access checks here, domain work in services and selectors."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from activities.access import member_placement, staff_placement
from activities.errors import DomainError
from activities.selectors import grade_of
from activities.texts import localized
from activities.views import report_recomputation
from lti.access import launch_required, placement_in_launch
from lti.models import ResourceLink, Role

from . import selectors, services
from .charts import run_chart
from .forms import PolicyForm, ScheduleForm
from .models import LabRun, LatePolicy, RunStatus
from .selectors import SubmissionWindow


def _policy_form(placement: ResourceLink, data: Any = None) -> PolicyForm:
    lab = selectors.placed_lab(placement)
    return PolicyForm(data, blocks=lab.blocks, op_kinds=selectors.op_kinds_of(lab))


def _render_placement(
    request: HttpRequest,
    placement: ResourceLink,
    role: Role,
    form: PolicyForm,
    status: int = 200,
    estimate: selectors.PolicyEstimate | None = None,
    estimated: bool = False,
) -> HttpResponse:
    lab = selectors.placed_lab(placement)
    language = get_language()
    rules = selectors.lab_policy(placement)
    runs = list(selectors.runs_of(request.user, placement))
    policy = form.cleaned_data.get("policy") if form.is_bound and form.is_valid() else None
    context = {
        "placement": placement,
        "lab": lab,
        "title": localized(lab.title, language),
        "instructions": selectors.instructions_html(localized(lab.instructions, language)),
        "estimate": estimate,
        "estimated": estimated,
        "policy_json": selectors.policy_json(policy) if policy is not None else "",
        "rules": rules,
        "window": selectors.submission_window(rules, timezone.now()),
        "SubmissionWindow": SubmissionWindow,
        "LatePolicy": LatePolicy,
        "form": form,
        "blocks": range(lab.blocks),
        "runs": runs,
        "runs_left": selectors.runs_left(rules, runs),
        "is_staff": role == Role.STAFF,
        "grade": grade_of(request.user.pk, placement.pk),
    }
    return render(request, "labs/placement.html", context, status=status)


@require_GET
@launch_required
def placement(request: HttpRequest, placement_id: int) -> HttpResponse:
    found, role = member_placement(request, placement_id, "lab")
    return _render_placement(request, found, role, _policy_form(found))


@require_POST
@launch_required
def estimate(request: HttpRequest, placement_id: int) -> HttpResponse:
    """What the grading cost model says the policy being built will measure: JSON for the
    workbench's script (``Accept: application/json``), else the lab page with the estimate
    (the form's "Estimate" button without JavaScript). Nothing is stored or queued."""
    found, role = member_placement(request, placement_id, "lab")
    form = _policy_form(found, request.POST)
    wants_json = "application/json" in request.headers.get("Accept", "")
    if not form.is_valid():
        if wants_json:
            errors = [str(error) for errors in form.errors.values() for error in errors]
            return JsonResponse({"errors": errors}, status=400)
        return _render_placement(request, found, role, form, status=400)
    policy = form.cleaned_data["policy"]
    figures = selectors.policy_estimate(selectors.placed_lab(found), policy)
    if not wants_json:
        return _render_placement(request, found, role, form, estimate=figures, estimated=True)
    return JsonResponse(
        {
            "policy": selectors.policy_json(policy),
            "estimate": None if figures is None else asdict(figures),
            "within_budget": None if figures is None else figures.within_budget,
            "html": render_to_string(
                "labs/_estimate.html", {"estimate": figures, "estimated": True}, request
            ),
        }
    )


@require_POST
@launch_required
def submit(request: HttpRequest, placement_id: int) -> HttpResponse:
    found, role = member_placement(request, placement_id, "lab")
    form = _policy_form(found, request.POST)
    if not form.is_valid():
        return _render_placement(request, found, role, form, status=400)
    try:
        run = services.submit_run(
            placement=found, user=request.user, policy=form.cleaned_data["policy"]
        )
    except DomainError as error:
        form.add_error(None, error.message)
        return _render_placement(request, found, role, form, status=error.status_code)
    return redirect("labs:run", public_id=run.public_id)


@require_GET
@launch_required
def run_page(request: HttpRequest, public_id: Any) -> HttpResponse:
    """A run's place in the queue, then its result; the student's own, or any run of a
    course where this session has the staff role."""
    run = get_object_or_404(
        LabRun.objects.select_related(
            "placement__lab_placement__lab", "placement__context", "user"
        ),
        public_id=public_id,
    )
    found = placement_in_launch(request, run.placement_id)
    if found is None:
        raise PermissionDenied(
            _("Open this run from the course it belongs to (launch the lab there first).")
        )
    if run.user_id != request.user.pk and found[1] != Role.STAFF:
        raise PermissionDenied(_("This run is not yours."))
    result = run.result or {}
    context = {
        "run": run,
        "title": localized(selectors.placed_lab(run.placement).title, get_language()),
        "queue_position": selectors.queue_position(run),
        "report": selectors.run_report(run),
        "chart": run_chart(result) if result else None,
        "is_pending": run.status in (RunStatus.QUEUED, RunStatus.RUNNING),
        "RunStatus": RunStatus,
        "optimal_policy": selectors.optimal_policy(
            run.placement, timezone.now(), staff=found[1] == Role.STAFF
        ),
    }
    return render(request, "labs/run.html", context)


def _render_manage(
    request: HttpRequest, placement: ResourceLink, form: ScheduleForm, status: int = 200
) -> HttpResponse:
    lab = selectors.placed_lab(placement)
    context = {
        "placement": placement,
        "lab": lab,
        "title": localized(lab.title, get_language()),
        "form": form,
        "runs": selectors.placement_runs(placement)[:200],
    }
    return render(request, "labs/manage.html", context, status=status)


@require_http_methods(["GET", "POST"])
@launch_required
def manage(request: HttpRequest, placement_id: int) -> HttpResponse:
    """The instructor's view: the schedule and late policy, the class's runs and grades."""
    found = staff_placement(request, placement_id, "lab")
    schedule = services.ensure_schedule(found)
    if request.method == "GET":
        return _render_manage(request, found, ScheduleForm(instance=schedule))
    form = ScheduleForm(request.POST, instance=schedule)
    if not form.is_valid():
        return _render_manage(request, found, form, status=400)
    try:
        change = services.update_schedule(found, actor=request.user, **form.cleaned_data)
    except DomainError as error:
        form.add_error(None, error.message)
        return _render_manage(request, found, form, status=error.status_code)
    messages.success(request, _("Settings saved."))
    report_recomputation(request, change.regrade)
    return redirect("labs:manage", placement_id=found.pk)
