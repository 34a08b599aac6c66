from django.contrib import admin

from .models import Context, Membership, ResourceLink


@admin.register(Context)
class ContextAdmin(admin.ModelAdmin):
    list_display = ["title", "context_id", "is_demo", "created_at"]
    search_fields = ["title", "context_id"]


@admin.register(ResourceLink)
class ResourceLinkAdmin(admin.ModelAdmin):
    list_display = ["title", "resource_link_id", "context", "quiz"]
    list_select_related = ["context", "quiz"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "context", "role", "updated_at"]
    list_filter = ["role"]
    list_select_related = ["user", "context"]
