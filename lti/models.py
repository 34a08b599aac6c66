"""LTI 1.3 models, named after the specification's objects.

- ``Registration``: one tool registration on a platform (issuer + client id) with the
  platform's endpoints. ``Deployment``: a deployment id under it (LTI core §3.1.3).
- ``ToolKey``: our RSA signing keys, published in the JWKS, rotated in stages.
- ``Context`` (a course), ``ResourceLink`` (one placement of an activity in it),
  ``LtiUser`` (issuer + ``sub``) and ``Membership`` (a user's roles in a context),
  provisioned by launches. The demo course of the local run uses the same models
  without a deployment.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class Registration(models.Model):
    title = models.CharField(max_length=255, blank=True)
    issuer = models.URLField(max_length=500, help_text="The platform's `iss`, e.g. its wwwroot.")
    client_id = models.CharField(max_length=255, help_text="Our client id on that platform.")
    auth_login_url = models.URLField(max_length=500, help_text="OIDC authorization endpoint.")
    auth_token_url = models.URLField(max_length=500, help_text="OAuth2 token endpoint.")
    keyset_url = models.URLField(max_length=500, help_text="The platform's JWKS URL.")
    auth_audience = models.CharField(
        max_length=500,
        blank=True,
        help_text="Audience of our token requests, if not the token URL.",
    )
    product_family_code = models.CharField(max_length=100, blank=True)
    scopes = models.JSONField(default=list, blank=True, help_text="Scopes the platform granted.")
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "client_id"], name="lti_registration_unique"),
        ]

    def __str__(self) -> str:
        return self.title or f"{self.issuer} ({self.client_id})"


class Deployment(models.Model):
    registration = models.ForeignKey(
        Registration, on_delete=models.CASCADE, related_name="deployments"
    )
    deployment_id = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["registration", "deployment_id"], name="lti_deployment_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.registration} / {self.deployment_id}"


class ToolKeyState(models.TextChoices):
    NEXT = "next", _("Published, not yet signing")
    ACTIVE = "active", _("Signing")
    RETIRING = "retiring", _("Published, no longer signing")
    RETIRED = "retired", _("Withdrawn")


class ToolKey(models.Model):
    kid = models.CharField(max_length=64, unique=True)
    private_key_pem = models.TextField()
    public_jwk = models.JSONField()
    state = models.CharField(max_length=16, choices=ToolKeyState.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    state_changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["state"], condition=Q(state="active"), name="lti_one_active_key"
            ),
        ]
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.kid} ({self.state})"


class LtiUser(models.Model):
    """The platform's user (issuer + `sub`), linked to a Django user."""

    registration = models.ForeignKey(Registration, on_delete=models.CASCADE, related_name="users")
    sub = models.CharField(max_length=255)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lti_user"
    )
    name = models.CharField(max_length=255, blank=True)
    email = models.EmailField(blank=True)
    locale = models.CharField(max_length=35, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["registration", "sub"], name="lti_user_unique_sub"),
        ]

    def __str__(self) -> str:
        return self.name or self.sub


class Context(models.Model):
    """A course in the LMS (the LTI `context` claim)."""

    deployment = models.ForeignKey(
        Deployment, on_delete=models.CASCADE, null=True, blank=True, related_name="contexts"
    )
    context_id = models.CharField(max_length=255, help_text="The platform's context id.")
    title = models.CharField(max_length=255, blank=True)
    label = models.CharField(max_length=255, blank=True)
    is_demo = models.BooleanField(default=False)
    nrps_url = models.URLField(
        max_length=500, blank=True, help_text="Names and Role Provisioning: the memberships URL."
    )
    roster_synced_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["deployment", "context_id"], name="lti_context_unique_id"
            ),
            models.UniqueConstraint(
                fields=["context_id"],
                condition=Q(deployment__isnull=True),
                name="lti_context_unique_local_id",
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.context_id

    @property
    def display_title(self) -> str:
        """The course's name for pages: the LMS's title, or the demo course's name in the
        reader's language (the demo course has no LMS to name it)."""
        if self.is_demo:
            return str(_("Demo course"))
        return self.title or self.context_id

    @property
    def registration(self) -> Registration:
        """The registration of the LMS the course came from. Only a course launched from an
        LMS has one; the demo course's grades and roster go nowhere."""
        if self.deployment is None:
            raise ValueError(f"the course {self.pk} has no LMS (the demo course)")
        return self.deployment.registration


class ResourceLink(models.Model):
    """One placement of an activity in a course (the LTI `resource_link` claim). What it
    places, and by which rules, is the course side's business (``activities.Placement``)."""

    context = models.ForeignKey(Context, on_delete=models.CASCADE, related_name="resource_links")
    resource_link_id = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True)
    # From the launch's AGS endpoint claim: where grades go, and what we may do there.
    lineitem_url = models.URLField(max_length=500, blank=True)
    ags_lineitems_url = models.URLField(max_length=500, blank=True)
    ags_scopes = models.JSONField(default=list, blank=True)
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
    LEARNER = "learner", _("Learner")
    STAFF = "staff", _("Staff")


class Membership(models.Model):
    """A user's role in a course, as the last launch (or the NRPS roster) stated it."""

    context = models.ForeignKey(Context, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lti_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.LEARNER)
    roles = models.JSONField(default=list, blank=True, help_text="Role URIs as the LMS sent them.")
    is_active = models.BooleanField(default=True, help_text="Active on the last NRPS roster.")
    has_launched = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["context", "user"], name="lti_membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.context} ({self.role})"


class KeptInDatabase(models.Model):
    """A started login's state, or a launch's used nonce, kept here while the cache (Redis)
    cannot be reached (decision 29): launches go on through an outage. ``key`` is the
    SHA-256 of the cache key."""

    key = models.CharField(max_length=64, unique=True)
    data = models.JSONField(default=dict)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.key
