"""The seam between the LTI protocol and the course side.

lti/ validates launches and keeps the specification's objects (registrations, deployments,
contexts, resource links, memberships, keys); what a resource link *places* (a quiz, a lab,
any activity kind) belongs to the course side above it. The course side registers itself
here once (``activities`` does, in its AppConfig.ready()), so lti/ imports no activity app:
the arrows of the import graph point down to lti/, never up from it (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse

from .models import Membership, ResourceLink


@dataclass(frozen=True)
class Landing:
    """Where a launch lands: the page's address, and where the course side can render it in
    the launch's own response, the page as its own view renders it (decision 60)."""

    url: str
    page: Callable[[HttpRequest], HttpResponse] | None = None


class CourseSide(Protocol):
    def place(self, link: ResourceLink, custom: dict[str, Any]) -> None:
        """Set up the activity a new resource link places, from the launch's custom
        parameters (deep linking put them there), and save the link. Raises
        ``lti.errors.LaunchError`` when there is nothing it could place."""

    def landing(self, link: ResourceLink, membership: Membership) -> Landing:
        """Where a launch into the link lands for this member of its course (their role,
        and their work in progress there)."""

    def manage_url(self, link: ResourceLink) -> str:
        """The instructor's page of the link's activity."""

    def deep_linking_url(self, token: str) -> str:
        """The content picker for a deep-linking launch (its pending request is in the
        session under ``lti.views.DEEP_LINK_SESSION_KEY`` and ``token``)."""


_course_side: CourseSide | None = None


def register_course_side(course_side: CourseSide) -> None:
    global _course_side
    _course_side = course_side


def course_side() -> CourseSide:
    if _course_side is None:
        raise ImproperlyConfigured(
            "No course side is registered with lti (add 'activities' to INSTALLED_APPS)."
        )
    return _course_side
