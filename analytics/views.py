"""Instructor dashboards: only staff of the course (by the launch's role) see them."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.utils.text import slugify
from django.utils.translation import get_language
from django.views.decorators.http import require_GET

from activities import registry
from activities.access import staff_placement
from activities.selectors import activity_title
from lti.access import launch_required

from . import selectors
from .charts import lab_charts, quiz_charts
from .exports import stream_csv
from .forms import DashboardFilterForm

# The exports of each activity kind whose dashboard lives here (the quiz's and the labs').
EXPORTS = {"quiz": ("responses", "attempts", "grades"), "lab": ("runs", "grades")}


@require_GET
@launch_required
def dashboard(request: HttpRequest, placement_id: int) -> HttpResponse:
    placement = staff_placement(request, placement_id)
    context = {"placement": placement, "title": activity_title(placement, get_language())}
    kind = registry.kind_of(placement).key
    if kind not in EXPORTS:
        raise Http404("This activity has no dashboard here.")
    if kind == "lab":
        lab = selectors.lab_dashboard(placement)
        context.update(dashboard=lab, charts=lab_charts(lab))
        return render(request, "analytics/lab_dashboard.html", context)
    form = DashboardFilterForm(request.GET or None)
    if form.is_bound and not form.is_valid():
        context["form"] = form
        return render(request, "analytics/quiz_dashboard.html", context, status=400)
    quiz = selectors.quiz_dashboard(placement, form.rules(), get_language())
    context.update(form=form, dashboard=quiz, charts=quiz_charts(quiz))
    return render(request, "analytics/quiz_dashboard.html", context)


@require_GET
@launch_required
def export(request: HttpRequest, placement_id: int, kind: str) -> StreamingHttpResponse:
    placement = staff_placement(request, placement_id)
    offered = EXPORTS.get(registry.kind_of(placement).key, ())
    if kind not in offered:
        raise Http404("No such export for this activity.")
    # Named in the title's own script (a Russian course's titles are Cyrillic), as RFC 6266's
    # filename* carries it.
    named = slugify(placement.title or placement.resource_link_id, allow_unicode=True)
    name = f"{named or f'activity-{placement.pk}'}-{kind}.csv"
    return StreamingHttpResponse(
        stream_csv(kind, placement),
        content_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": content_disposition_header(True, name)},
    )
