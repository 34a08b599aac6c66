"""From the launch's role URIs to what the user may do in the course."""

from __future__ import annotations

from .claims import CONTEXT_ROLE_PREFIXES, STAFF_ROLE_NAMES
from .models import Role


def context_role_names(roles: list[str]) -> set[str]:
    """Short names of the context roles: full URIs (as Moodle sends in launches), sub-role
    URIs (…membership/Instructor#TeachingAssistant) and bare short names (as in NRPS).
    Institution and system roles are not roles in the course and are left out."""
    names = set()
    for role in roles:
        if not isinstance(role, str):
            continue
        if "://" not in role:
            names.add(role)
            continue
        for prefix in CONTEXT_ROLE_PREFIXES:
            if role.startswith(prefix):
                names.add(role.rsplit("#", 1)[-1] if "#" in role else role[len(prefix) :])
    return names


def course_role(roles: list[str]) -> Role:
    """Staff for Instructor, TeachingAssistant, ContentDeveloper or Administrator of the
    context; otherwise a learner's rights (unknown or no roles get nothing extra)."""
    return Role.STAFF if context_role_names(roles) & STAFF_ROLE_NAMES else Role.LEARNER
