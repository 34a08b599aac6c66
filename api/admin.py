from django.contrib import admin

from .models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
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
    readonly_fields = ["prefix", "key_hash", "created_at", "last_used_at"]
