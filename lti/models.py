"""Where a learner meets an activity: the LMS course (context), the link placed in it
(resource link) and the user's roles in that course (membership).

Named after the LTI 1.3 claims they mirror. The registration and deployment that a
launch arrives through join these models with the LTI launch itself; the demo course
of the local run has none.
"""

from django.conf import settings
from django.db import models


class Context(models.Model):
    """A course in the LMS (the LTI `context` claim)."""

    context_id = models.CharField(max_length=255, help_text="The platform's context id.")
    title = models.CharField(max_length=255, blank=True)
    label = models.CharField(max_length=255, blank=True)
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["context_id"], name="lti_context_unique_id"),
        ]

    def __str__(self) -> str:
        return self.title or self.context_id


class ResourceLink(models.Model):
    """One placement of an activity in a course (the LTI `resource_link` claim)."""

    context = models.ForeignKey(Context, on_delete=models.CASCADE, related_name="resource_links")
    resource_link_id = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True)
    quiz = models.ForeignKey(
        "assessments.Quiz", on_delete=models.PROTECT, related_name="placements"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["context", "resource_link_id"], name="lti_resource_link_unique_id"
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.resource_link_id


class Role(models.TextChoices):
    LEARNER = "learner", "Learner"
    STAFF = "staff", "Staff"


class Membership(models.Model):
    """A user's role in a course, as the last launch stated it."""

    context = models.ForeignKey(Context, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lti_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.LEARNER)
    roles = models.JSONField(default=list, blank=True, help_text="Role URIs as the LMS sent them.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["context", "user"], name="lti_membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.context} ({self.role})"
