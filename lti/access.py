"""What the current browser session may reach: the courses it was launched into, with
the role of that launch. A page of a course the session was not launched into is refused
even for a user who is a member there, so a session never widens beyond its launches."""

from __future__ import annotations

from collections.abc import Iterable
from functools import wraps
from typing import Any

from django.contrib import auth
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.crypto import constant_time_compare
from django.utils.translation import gettext as _

from . import handoff
from .models import Membership, ResourceLink, Role

SESSION_KEY = "lti_launched_contexts"


def sign_in(request: HttpRequest, user: User, backend: str) -> None:
    """Signs the browser in as ``user``, unless its session is that sign-in already: the same
    user, by the same backend, with the password it was made with (a student opening the
    activity again from the same browser). Django's login would only write the session again
    (a statement and a cache write on each such launch) and rotate its CSRF token, which
    belongs to this same sign-in."""
    session = request.session
    if (
        session.get(auth.SESSION_KEY) == user._meta.pk.value_to_string(user)
        and session.get(auth.BACKEND_SESSION_KEY) == backend
        and constant_time_compare(
            session.get(auth.HASH_SESSION_KEY, ""), user.get_session_auth_hash()
        )
    ):
        request.user = user
        return
    auth.login(request, user, backend=backend)


def grant_launch(request: HttpRequest, membership: Membership) -> None:
    """The session may reach the membership's course with its role (written only when that
    changes it)."""
    launched = request.session.get(SESSION_KEY, {})
    context = str(membership.context_id)
    if launched.get(context) != membership.role:
        request.session[SESSION_KEY] = {**launched, context: membership.role}


def launched_contexts(request: HttpRequest) -> dict[int, Role]:
    """Every course this session was launched into, with the role of that launch."""
    session = getattr(request, "session", None)
    launched = session.get(SESSION_KEY, {}) if session is not None else {}
    return {int(context_id): Role(role) for context_id, role in launched.items()}


def lms_still_active(context: str) -> Q:
    """The course (at the ``context`` path) still comes from a turned-on LMS: its deployment
    and registration are active. The demo course has no LMS, so nothing to turn off."""
    return Q(**{f"{context}__deployment__isnull": True}) | Q(
        **{
            f"{context}__deployment__is_active": True,
            f"{context}__deployment__registration__is_active": True,
        }
    )


def _lesser(launched: Role, current: Role) -> Role:
    """A session is staff only while both its launch and the membership now say so: a
    roster that demotes a teacher takes effect, and a session never widens beyond its
    launch."""
    return Role.STAFF if launched == current == Role.STAFF else Role.LEARNER


def granted_contexts(request: HttpRequest) -> dict[int, Role]:
    """The courses this session was launched into that it may still reach, each with its
    role there (one statement). A course drops out when the membership was ended or removed
    (by the roster) or its platform or deployment was turned off: the session's next
    request has lost it, not the session's end, days later."""
    launched = launched_contexts(request)
    if not launched or not request.user.is_authenticated:
        return {}
    current = _current_memberships(request.user, launched).values_list("context_id", "role")
    return {context_id: _lesser(launched[context_id], Role(role)) for context_id, role in current}


def still_member(user: User, context_id: int) -> bool:
    """Whether the user may still reach the course, as ``granted_contexts`` decides for each
    course a session was launched into."""
    return _current_memberships(user, [context_id]).exists()


def _current_memberships(user: User, context_ids: Iterable[int]) -> QuerySet[Membership]:
    return Membership.objects.filter(lms_still_active("context")).filter(
        user=user, context_id__in=context_ids, is_active=True
    )


def placement_in_launch(
    request: HttpRequest, placement_id: int, related: tuple[str, ...] = ()
) -> tuple[ResourceLink, Role] | None:
    """The placement (with ``related`` fetched in the same query) and the session's role in
    its course, or None when the session was not launched into that course, or may no
    longer reach it (as ``granted_contexts`` decides, in the same query)."""
    if not request.user.is_authenticated:
        return None
    placement = (
        ResourceLink.objects.select_related("context", *related)
        .filter(lms_still_active("context"))
        .filter(
            pk=placement_id,
            context__memberships__user=request.user,
            context__memberships__is_active=True,
        )
        .annotate(member_role=F("context__memberships__role"))
        .first()
    )
    if placement is None:
        return None
    launched = launched_contexts(request).get(placement.context_id)
    if launched is None:
        return None
    return placement, _lesser(launched, Role(placement.member_role))


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
