"""From the launch's role URIs to what the user may do in the course."""

from __future__ import annotations

from .claims import PRINCIPAL_CONTEXT_ROLE_PREFIX, STAFF_ROLE_NAMES, SUB_CONTEXT_ROLE_PREFIX
from .models import Role


def context_role_names(roles: list[str]) -> set[str]:
    """Short names of the principal context roles: full URIs (…membership#Instructor, as
    Moodle sends in launches), sub-role URIs and bare short names (as in NRPS). A sub-role
    (…membership/Instructor#TeachingAssistant, or Instructor#TeachingAssistant) names a kind
    of its principal role and gives that role's rights, never its own name's: a learner of
    the kind Instructor (Learner#Instructor, in the LIS vocabulary) is a learner. Institution
    and system roles are not roles in the course and are left out."""
    names = set()
    for role in roles:
        if not isinstance(role, str):
            continue
        if "://" not in role:
            names.add(role.split("#", 1)[0])
            continue
        if role.startswith(PRINCIPAL_CONTEXT_ROLE_PREFIX):
            names.add(role[len(PRINCIPAL_CONTEXT_ROLE_PREFIX) :])
        elif role.startswith(SUB_CONTEXT_ROLE_PREFIX):
            names.add(role[len(SUB_CONTEXT_ROLE_PREFIX) :].split("#", 1)[0])
    return names


def course_role(roles: list[str]) -> Role:
    """Staff for Instructor, TeachingAssistant, ContentDeveloper or Administrator of the
    context; otherwise a learner's rights (unknown or no roles get nothing extra)."""
    return Role.STAFF if context_role_names(roles) & STAFF_ROLE_NAMES else Role.LEARNER
