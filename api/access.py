"""Who the API caller is and which courses they reach, from an LTI session or a token.

- A session reaches the courses it was launched into, with that launch's role.
- A course token reaches its one course as staff (read, or read-write). A site-wide token
  (created by a superuser) reaches every course. Authentication has already refused a token
  whose creator is inactive, no longer staff of its course or no longer a superuser.
Learners see only their own rows; nothing crosses courses."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q
from rest_framework.request import Request

from lti.access import granted_contexts
from lti.models import Role

from .models import ApiToken


@dataclass(frozen=True)
class ApiScope:
    user: AbstractBaseUser
    staff_contexts: frozenset[int] | None  # None: every course (site-wide token)
    learner_contexts: frozenset[int]
    can_write: bool
    token: ApiToken | None = None

    def is_staff_of(self, context_id: int) -> bool:
        return self.staff_contexts is None or context_id in self.staff_contexts

    def may_write(self, context_id: int) -> bool:
        return self.can_write and self.is_staff_of(context_id)

    def rows(self, context_field: str, user_field: str | None = None) -> Q:
        """A filter for rows of reachable courses: all rows of staff courses, and the
        caller's own rows of learner courses."""
        if self.staff_contexts is None:
            return Q()
        visible = Q(**{f"{context_field}__in": self.staff_contexts})
        if user_field and self.learner_contexts:
            visible |= Q(**{f"{context_field}__in": self.learner_contexts, user_field: self.user})
        return visible

    def contexts(self, context_field: str = "pk") -> Q:
        if self.staff_contexts is None:
            return Q()
        return Q(**{f"{context_field}__in": self.staff_contexts | self.learner_contexts})


NOTHING = frozenset()


def scope_for(request: Request) -> ApiScope:
    token = request.auth if isinstance(request.auth, ApiToken) else None
    if token is not None:
        contexts = None if token.context_id is None else frozenset({token.context_id})
        return ApiScope(request.user, contexts, NOTHING, token.can_write, token)
    launched = granted_contexts(request)
    staff = frozenset(pk for pk, role in launched.items() if role == Role.STAFF)
    learner = frozenset(pk for pk, role in launched.items() if role != Role.STAFF)
    return ApiScope(request.user, staff, learner, can_write=True)
