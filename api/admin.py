from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from .models import ApiToken
from .tokens import revoke_token


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are made through the API (api.tokens.create_token, which shows the value once
    and stores its hash), where the course and rights are checked against the creator's. Here
    they are shown, renamed, revoked and deleted; a revocation is not undone."""

    list_display = [
        "name",
        "prefix",
        "context",
        "can_write",
        "created_by",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["can_write"]
    readonly_fields = [
        "prefix",
        "key_hash",
        "context",
        "can_write",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    ]
    actions = ["revoke_tokens"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        tokens = list(queryset.filter(revoked_at=None))
        for token in tokens:
            revoke_token(token)
        self.message_user(request, f"{len(tokens)} token(s) revoked.", messages.SUCCESS)
