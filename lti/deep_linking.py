"""Deep Linking 2.0: the signed LtiDeepLinkingResponse that places an activity in a course."""

from __future__ import annotations

import secrets
import time
from typing import Any

import jwt

from assessments.models import Quiz
from assessments.selectors import version_layout
from labs.models import Lab

from . import claims as c
from .keys import signing_key
from .models import Registration
from .services import (
    CUSTOM_ACTIVITY,
    CUSTOM_GRADING_METHOD,
    CUSTOM_LATE_PENALTY,
    CUSTOM_LATE_POLICY,
    CUSTOM_MAX_ATTEMPTS,
)

RESPONSE_LIFETIME_SECONDS = 600


def quiz_content_item(
    quiz: Quiz, *, title: str, launch_url: str, max_attempts: int, grading_method: str
) -> dict[str, Any]:
    """An ltiResourceLink with a line item, so the LMS creates a graded activity; the
    custom parameters come back in every launch of the link and configure the placement."""
    return {
        "type": "ltiResourceLink",
        "title": title,
        "url": launch_url,
        "custom": {
            CUSTOM_ACTIVITY: f"quiz:{quiz.slug}",
            CUSTOM_MAX_ATTEMPTS: str(max_attempts),
            CUSTOM_GRADING_METHOD: grading_method,
        },
        "lineItem": {
            "scoreMaximum": version_layout(quiz.current_version_id).question_count,
            "label": title,
            "resourceId": f"quiz:{quiz.slug}",
            "tag": c.LINEITEM_TAG,
        },
    }


def lab_content_item(
    lab: Lab,
    *,
    title: str,
    launch_url: str,
    max_attempts: int,
    grading_method: str,
    schedule: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Like the quiz's (the lab's runs are graded out of 100), with its schedule: in the
    custom parameters for the first launch to set up, and as Deep Linking's ``available``
    and ``submission`` windows so the LMS shows the dates too."""
    from labs.grading import LAB_SCORE_MAXIMUM

    schedule = schedule or {}
    moments = {
        name: schedule[name].isoformat()
        for name in ("opens_at", "due_at", "closes_at")
        if schedule.get(name)
    }
    item: dict[str, Any] = {
        "type": "ltiResourceLink",
        "title": title,
        "url": launch_url,
        "custom": {
            CUSTOM_ACTIVITY: f"lab:{lab.slug}",
            CUSTOM_MAX_ATTEMPTS: str(max_attempts),
            CUSTOM_GRADING_METHOD: grading_method,
            **moments,
            CUSTOM_LATE_POLICY: str(schedule.get("late_policy") or "accept"),
            CUSTOM_LATE_PENALTY: str(schedule.get("late_penalty_percent") or 0),
        },
        "lineItem": {
            "scoreMaximum": int(LAB_SCORE_MAXIMUM),
            "label": title,
            "resourceId": f"lab:{lab.slug}",
            "tag": c.LINEITEM_TAG,
        },
    }
    available = {
        key: moments[name]
        for key, name in (("startDateTime", "opens_at"), ("endDateTime", "closes_at"))
        if name in moments
    }
    if available:
        item["available"] = available
    if "due_at" in moments:
        item["submission"] = {"endDateTime": moments["due_at"]}
    return item


def response_jwt(
    *,
    registration: Registration,
    deployment_id: str,
    content_items: list[dict[str, Any]],
    data: str | None,
) -> str:
    now = int(time.time())
    payload: dict[str, Any] = {
        "iss": registration.client_id,
        "aud": registration.issuer,
        "iat": now,
        "exp": now + RESPONSE_LIFETIME_SECONDS,
        "nonce": secrets.token_urlsafe(16),
        c.DEPLOYMENT_ID: deployment_id,
        c.MESSAGE_TYPE: c.DEEP_LINKING_RESPONSE,
        c.VERSION: c.LTI_VERSION,
        c.DL_CONTENT_ITEMS: content_items,
    }
    if data is not None:
        payload[c.DL_DATA] = data
    key = signing_key()
    return jwt.encode(payload, key.private_key_pem, algorithm="RS256", headers={"kid": key.kid})
