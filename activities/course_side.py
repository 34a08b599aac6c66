"""The course side as lti.course sees it: what a launch places, and where it lands."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from lti.course import Landing
from lti.errors import LaunchError
from lti.models import Membership, ResourceLink

from . import registry
from .access import landing
from .errors import ActivityNotLoaded
from .services import place_from_launch


class ActivitiesCourseSide:
    def place(self, link: ResourceLink, custom: dict[str, Any]) -> None:
        try:
            place_from_launch(link, custom)
        except ActivityNotLoaded as error:
            raise LaunchError(error.message, status=error.status_code) from error

    def landing(self, link: ResourceLink, membership: Membership) -> Landing:
        return landing(link, membership)

    def manage_url(self, link: ResourceLink) -> str:
        return registry.kind_of(link).manage_url(link)

    def deep_linking_url(self, token: str) -> str:
        return reverse("activities:deep-link", args=[token])
