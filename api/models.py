"""API tokens for integrations: stored hashed, scoped to one course (or site-wide for
administrators), read or read-write, revocable."""

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, unique=True, help_text="Shown, to tell tokens apart.")
    key_hash = models.CharField(max_length=64, help_text="SHA-256 of the secret part.")
    context = models.ForeignKey(
        "lti.Context",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="api_tokens",
        help_text="The course it reaches; empty for a site-wide (administrator) token.",
    )
    can_write = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
