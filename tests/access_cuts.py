"""The ways the tool stops holding what a user's launch gave (lti.access.granted_contexts):
each a name, for a test's id, and the change an administrator or a roster makes."""

from __future__ import annotations

from collections.abc import Callable

from lti.models import Deployment, Membership, Registration, Role

Cut = tuple[str, Callable[[], object]]


def access_cuts(sub: str) -> list[Cut]:
    """Every cut of the launches of the platform user ``sub``."""

    def memberships():
        return Membership.objects.filter(user__lti_user__sub=sub)

    return [
        ("registration deactivated", lambda: Registration.objects.update(is_active=False)),
        ("deployment deactivated", lambda: Deployment.objects.update(is_active=False)),
        ("membership ended on the roster", lambda: memberships().update(is_active=False)),
        ("membership deleted", lambda: memberships().delete()),
    ]


def demotion(sub: str) -> Cut:
    return (
        "demoted to learner",
        lambda: Membership.objects.filter(user__lti_user__sub=sub).update(role=Role.LEARNER),
    )
