"""A launch posted again by the browser that made it: where that launch landed.

Without JavaScript the address bar keeps the launch's address after a launch answered with
its page (decision 60), and a reload posts the launch again, its state and nonce spent. The
launch's response leaves a signed mark of its state and the page it landed on, under the
launch's path only; a spent launch whose state the browser's mark names is sent to that page
(fetched as any page is, with the session's checks) instead of refused. Nothing is granted:
the mark proves only that this browser made the launch, and a launch replayed by anyone
else, or with a mark not signed here, is refused as before."""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.utils.crypto import constant_time_compare
from django.utils.http import url_has_allowed_host_and_scheme

from .oidc import cookie_options

SPENT_LAUNCH_COOKIE = "lti_spent_launch"
_SALT = "lti.spent_launch"
_PATH = "/lti/launch/"


def mark(response: HttpResponse, state: str, landed_at: str) -> None:
    """Leaves the mark of the launch with ``state``, which landed at ``landed_at`` (a path of
    the tool's), for as long as the session it signed in may live."""
    response.set_cookie(
        SPENT_LAUNCH_COOKIE,
        signing.dumps({"state": state, "to": landed_at}, salt=_SALT, compress=True),
        max_age=settings.SESSION_COOKIE_AGE,
        path=_PATH,
        **cookie_options(),
    )


def landing_of(request: HttpRequest, state: str) -> str | None:
    """Where this browser's launch with ``state`` landed, when the browser holds its mark."""
    value = request.COOKIES.get(SPENT_LAUNCH_COOKIE)
    if not value or not state:
        return None
    try:
        spent = signing.loads(value, salt=_SALT, max_age=settings.SESSION_COOKIE_AGE)
    except signing.BadSignature:
        return None
    if not isinstance(spent, dict) or not constant_time_compare(str(spent.get("state")), state):
        return None
    landed_at = spent.get("to")
    if not isinstance(landed_at, str) or not landed_at.startswith("/"):
        return None
    # Only ever a path of this tool's: the mark is ours, but a redirect checks anyway.
    if not url_has_allowed_host_and_scheme(landed_at, allowed_hosts=None):
        return None
    return landed_at
