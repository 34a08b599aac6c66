"""Helpers for the browser launches of tests/lti (the fixtures are in its conftest)."""

from __future__ import annotations

from tests.lti_platform import Platform


def plain_http(settings) -> None:
    """The cookies of a tool served over plain HTTP (SECURE_COOKIES=0): SameSite=Lax."""
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = False
    settings.LANGUAGE_COOKIE_SECURE = False
    settings.SESSION_COOKIE_SAMESITE = settings.CSRF_COOKIE_SAMESITE = "Lax"
    settings.LANGUAGE_COOKIE_SAMESITE = "Lax"


def answer_as(moodle: Platform, *, user_id: str, roles: list[str], **claims) -> None:
    moodle.server.authorize = lambda params: moodle.authorize(
        params, user_id=user_id, roles=roles, locale="en", **claims
    )
