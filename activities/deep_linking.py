"""Deep Linking's content item for any activity kind: an ltiResourceLink with a line item,
so the LMS creates a graded activity; the custom parameters come back in every launch of
the link and configure the placement (activities.services.place_from_launch)."""

from __future__ import annotations

from typing import Any

from . import registry
from .services import CUSTOM_ACTIVITY, CUSTOM_GRADING_METHOD, CUSTOM_MAX_ATTEMPTS


def content_item(
    kind: registry.ActivityKind,
    slug: str,
    *,
    title: str,
    launch_url: str,
    max_attempts: int,
    grading_method: str,
    score_maximum: int,
    kind_data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The item for one activity; the kind adds what its own picker fields carry."""
    key = f"{kind.key}:{slug}"
    item: dict[str, Any] = {
        "type": "ltiResourceLink",
        "title": title,
        "url": launch_url,
        "custom": {
            CUSTOM_ACTIVITY: key,
            CUSTOM_MAX_ATTEMPTS: str(max_attempts),
            CUSTOM_GRADING_METHOD: grading_method,
        },
        "lineItem": {
            "scoreMaximum": score_maximum,
            "label": title,
            "resourceId": key,
            "tag": kind.line_item_tag,
        },
    }
    return kind.deep_link_item(item, kind_data or {})


def score_maximum_of(kind: registry.ActivityKind, slug: str) -> int:
    """The activity's score maximum before any link places it (a line item needs it)."""
    activity = kind.find(slug)
    if activity is None:
        raise registry.UnknownActivity(f"{kind.key}:{slug}")
    return int(kind.score_maximum_of(activity))
