"""What the current browser session may reach: the courses it was launched into, with
the role of that launch. A page of a course the session was not launched into is refused
even for a user who is a member there, so a session never widens beyond its launches."""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _

from . import handoff
from .models import Membership, ResourceLink, Role

SESSION_KEY = "lti_launched_contexts"


def grant_launch(request: HttpRequest, membership: Membership) -> None:
    launched = dict(request.session.get(SESSION_KEY, {}))
    launched[str(membership.context_id)] = membership.role
    request.session[SESSION_KEY] = launched


def launched_contexts(request: HttpRequest) -> dict[int, Role]:
    """Every course this session was launched into, with the role of that launch."""
    session = getattr(request, "session", None)
    launched = session.get(SESSION_KEY, {}) if session is not None else {}
    return {int(context_id): Role(role) for context_id, role in launched.items()}


def launched_role(request: HttpRequest, context_id: int) -> Role | None:
    return launched_contexts(request).get(context_id)


def placement_in_launch(
    request: HttpRequest, placement_id: int, related: tuple[str, ...] = ()
) -> tuple[ResourceLink, Role] | None:
    """The placement (with ``related`` fetched in the same query) and the session's role in
    its course, or None when the session was not launched into that course (or the
    membership is gone)."""
    if not request.user.is_authenticated:
        return None
    placement = (
        ResourceLink.objects.select_related("context", *related)
        .filter(pk=placement_id, context__memberships__user=request.user)
        .first()
    )
    if placement is None:
        return None
    role = launched_role(request, placement.context_id)
    return (placement, role) if role else None


def launch_required(view: Any) -> Any:
    """Pages for users who arrived from their course (or the demo entry). The page a launch
    lands on offers a new window when the browser dropped the launch's cookie."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            blocked = _cookie_blocked(request)
            if blocked is not None:
                return blocked
            raise PermissionDenied(
                _("You are not signed in. Open this activity from your course in the LMS.")
            )
        if handoff.HANDOFF_PARAM in request.GET:
            handoff.drop(request.GET[handoff.HANDOFF_PARAM])  # the cookie came; not needed
        return view(request, *args, **kwargs)

    return wrapper


def _cookie_blocked(request: HttpRequest) -> HttpResponse | None:
    """For a launch's landing page that arrived without the launch's session (the browser
    blocks the tool's cookie in the LMS page): a page offering the activity in a new window.
    None for any other request."""
    token = request.GET.get(handoff.HANDOFF_PARAM, "")
    if not handoff.offered(token):
        return None
    return render(
        request,
        "lti/cookie_blocked.html",
        {
            "handoff_url": reverse("lti:handoff", args=[token]),
            "minutes": handoff.HANDOFF_SECONDS // 60,
        },
        status=403,
    )
