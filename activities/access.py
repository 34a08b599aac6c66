"""Which placement a request may reach, and as whom (on lti.access's launched courses)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.utils.translation import gettext as _

from lti.access import placement_in_launch
from lti.course import Landing
from lti.models import Membership, ResourceLink, Role

from . import registry
from .errors import OutsideLaunch
from .selectors import placed_kind


def member_placement(
    request: HttpRequest, placement_id: int, activity: str | None = None
) -> tuple[ResourceLink, Role]:
    """The placement with the session's role in its course; refused unless this session
    was launched into that course, and not found when it places another kind than
    ``activity`` (a registry key: "quiz", "lab")."""
    # Only the asked kind's relations: each kind's joins and columns cost the ORM time to
    # build on every page that checks a placement (the start, the activity's page).
    kinds = registry.kinds() if activity is None else [registry.kind(activity)]
    related = ("placement", *(name for kind in kinds for name in kind.select_related))
    found = placement_in_launch(request, placement_id, related)
    if found is None:
        raise PermissionDenied(OutsideLaunch().message)
    if activity is not None and not registry.places(found[0], activity):
        raise Http404(
            _("This activity is not a %(kind)s.") % {"kind": registry.kind(activity).label}
        )
    return found


def staff_placement(
    request: HttpRequest, placement_id: int, activity: str | None = None
) -> ResourceLink:
    placement, role = member_placement(request, placement_id, activity)
    if role != Role.STAFF:
        raise PermissionDenied(_("Only the course's instructors can manage this activity."))
    return placement


def landing(placement: ResourceLink, membership: Membership) -> Landing:
    """Where a launch into the placement lands: for the course's staff the activity's
    dashboard; for a student their work in progress there (a quiz's attempt, at the question
    they were on, with its page), else the activity's page."""
    # The launch's link comes without its placement: its kind in a statement of its own.
    kind = registry.placed_kind_of(placement.pk, placed_kind(placement.pk))
    if membership.role == Role.STAFF:
        return Landing(kind.dashboard_url(placement))
    return kind.resume(placement, membership.user_id) or Landing(kind.student_url(placement))
