"""The course side's LTI pages: the content picker of a deep-linking launch, and the demo
course's stand-in for a launch. Thin: forms, the registry and lti's protocol modules."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_http_methods, require_POST

from lti import deep_link_relay
from lti.access import grant_launch, sign_in
from lti.deep_linking import response_jwt
from lti.dynamic_registration import tool_urls
from lti.http import platform_url_ok
from lti.middleware import allow_form_action
from lti.models import Registration, Role
from lti.views import AUTH_BACKEND, DEEP_LINK_SESSION_KEY, refuse, tool_base_url

from .access import landing
from .deep_linking import content_item, score_maximum_of
from .demo import demo_member, ensure_demo_placement
from .errors import ActivityNotLoaded
from .forms import DeepLinkForm
from .models import Regrade

DEMO_COOKIE = "gcq-demo"
DEMO_COOKIE_AGE = 30 * 24 * 3600


def render_error(request: HttpRequest, message: str, status: int) -> HttpResponse:
    """The site's page that says what went wrong (templates/error.html), with the status
    that says it to machines; the activities' pages refuse with it."""
    return render(request, "error.html", {"message": message}, status=status)


@xframe_options_exempt
@require_http_methods(["GET", "POST"])
def deep_link(request: HttpRequest, token: str) -> HttpResponse:
    pending = request.session.get(DEEP_LINK_SESSION_KEY, {}).get(token)
    if pending is None:
        return refuse(
            request,
            _(
                "This content selection has expired, or your browser blocks this tool's "
                "cookies inside the LMS page (Safari does by default). Open the tool again "
                "from your course's activity picker; if this page comes back, allow the "
                "tool's cookies or add the activity from another browser."
            ),
            status=404,
        )
    form = DeepLinkForm(request.POST or None)
    registration = Registration.objects.filter(
        pk=pending["registration_id"], is_active=True
    ).first()
    if registration is None:
        return refuse(
            request, _("This platform's registration was removed; ask your administrator.")
        )
    if not platform_url_ok(pending["return_url"], registration.issuer):
        return refuse(request, _("The LMS gave a return address that is not http(s)."))
    if request.method == "POST" and form.is_valid():
        kind, slug = form.chosen()
        item = content_item(
            kind,
            slug,
            title=form.cleaned_data["title"],
            launch_url=tool_urls(tool_base_url(request))["launch"],
            max_attempts=form.cleaned_data["max_attempts"],
            grading_method=form.cleaned_data["grading_method"],
            score_maximum=score_maximum_of(kind, slug),
            kind_data=form.cleaned_data,
        )
        signed = response_jwt(
            registration=registration,
            deployment_id=pending["deployment_id"],
            content_items=[item],
            data=pending.get("data"),
        )
        links = dict(request.session[DEEP_LINK_SESSION_KEY])
        links.pop(token, None)
        request.session[DEEP_LINK_SESSION_KEY] = links
        if pending.get("return_channel"):
            return _send_to_dialog(request, pending, signed)
        response = render(
            request,
            "lti/deep_link_return.html",
            {"return_url": pending["return_url"], "jwt": signed},
        )
        allow_form_action(response, pending["return_url"])  # the form posts to the LMS
        return response
    if not form.is_bound:
        form.initial["title"] = _("Gradient checkpointing quiz")
    return render(
        request,
        "activities/deep_link.html",
        {"form": form},
        status=400 if form.is_bound else 200,
    )


def _send_to_dialog(request: HttpRequest, pending: dict, signed: str) -> HttpResponse:
    """This window was opened from the LMS dialog's iframe (a browser that blocks the tool's
    cookie there): the answer goes back to that iframe, which posts it to the LMS, so the
    LMS's return page runs in its dialog (lti.deep_link_relay)."""
    if not deep_link_relay.deliver(
        pending["return_channel"], return_url=pending["return_url"], jwt=signed
    ):
        return refuse(
            request,
            _(
                "Your course's page stopped waiting for this choice: it was closed, or it "
                "waited too long. Open the tool again from your course's activity picker."
            ),
            status=410,
        )
    return render(request, "lti/deep_link_sent.html")


@require_POST
def demo_launch(request: HttpRequest) -> HttpResponse:
    """Stands in for an LMS launch into the demo course: the browser's demo user (a new one
    the first time), signed in."""
    if not settings.DEMO_MODE:
        raise Http404("The demo is turned off on this server.")
    role = Role.STAFF if request.POST.get("role") == Role.STAFF else Role.LEARNER
    activity = "lab" if request.POST.get("activity") == "lab" else "quiz"
    cookie = f"{DEMO_COOKIE}-{role}"
    returning = request.get_signed_cookie(cookie, default=None, salt=DEMO_COOKIE)
    try:
        placement = ensure_demo_placement(activity)
        membership = demo_member(role, translation.get_language(), returning)
    except ActivityNotLoaded as error:
        return refuse(request, error.message, status=error.status_code)
    sign_in(request, membership.user, AUTH_BACKEND)
    grant_launch(request, membership)
    response = redirect(landing(placement, membership).url)
    # The same browser comes back as the same demo student (or instructor), with their
    # attempts: the cookie names the user, signed so that no one can name another.
    response.set_signed_cookie(
        cookie,
        str(membership.user_id),
        salt=DEMO_COOKIE,
        max_age=DEMO_COOKIE_AGE,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )
    return response


def report_recomputation(request: HttpRequest, regrade: Regrade | None) -> None:
    """Tell the instructor how many grades a change of the grading rules changed."""
    if regrade is None:
        return
    count = regrade.grades_changed
    messages.success(
        request,
        ngettext(
            "Every grade was recomputed by the new rules: %(count)d grade changed.",
            "Every grade was recomputed by the new rules: %(count)d grades changed.",
            count,
        )
        % {"count": count},
    )
