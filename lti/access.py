"""What the current browser session may reach: the courses it was launched into, with
the role of that launch. A page of a course the session was not launched into is refused
even for a user who is a member there, so a session never widens beyond its launches."""

from __future__ import annotations

from django.http import HttpRequest

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
    request: HttpRequest, placement_id: int
) -> tuple[ResourceLink, Role] | None:
    """The placement and the session's role in its course, or None when the session was
    not launched into that course (or the membership is gone)."""
    if not request.user.is_authenticated:
        return None
    placement = (
        ResourceLink.objects.select_related("context", "quiz", "quiz__current_version")
        .filter(pk=placement_id, context__memberships__user=request.user)
        .first()
    )
    if placement is None:
        return None
    role = launched_role(request, placement.context_id)
    return (placement, role) if role else None
