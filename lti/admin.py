from django.contrib import admin
from django.db import models

from .models import Context, Deployment, LtiUser, Membership, Registration, ResourceLink, ToolKey

# A platform's addresses typed without a scheme are HTTPS, as every LTI 1.3 platform is reached
# (and as Django 6 will assume); Django 5's forms still assume http.
HTTPS_URL_FIELDS = {models.URLField: {"assume_scheme": "https"}}


class DeploymentInline(admin.TabularInline):
    model = Deployment
    extra = 1
    fields = ["deployment_id", "title", "is_active"]


@admin.register(Registration)
class RegistrationAdmin(admin.ModelAdmin):
    formfield_overrides = HTTPS_URL_FIELDS
    list_display = ["__str__", "issuer", "client_id", "is_active", "updated_at"]
    list_filter = ["is_active", "product_family_code"]
    search_fields = ["issuer", "client_id", "title"]
    inlines = [DeploymentInline]


@admin.register(Deployment)
class DeploymentAdmin(admin.ModelAdmin):
    list_display = ["deployment_id", "registration", "is_active", "created_at"]
    list_filter = ["is_active"]
    list_select_related = ["registration"]


@admin.register(ToolKey)
class ToolKeyAdmin(admin.ModelAdmin):
    """Keys are rotated with `manage.py rotate_tool_keys`; the private key is never shown."""

    list_display = ["kid", "state", "created_at", "state_changed_at"]
    fields = ["kid", "state", "public_jwk", "created_at", "state_changed_at"]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(LtiUser)
class LtiUserAdmin(admin.ModelAdmin):
    list_display = ["name", "email", "sub", "registration", "updated_at"]
    search_fields = ["name", "email", "sub"]
    list_select_related = ["registration"]


@admin.register(Context)
class ContextAdmin(admin.ModelAdmin):
    formfield_overrides = HTTPS_URL_FIELDS
    list_display = ["title", "context_id", "deployment", "is_demo", "created_at"]
    search_fields = ["title", "context_id"]
    list_select_related = ["deployment"]


@admin.register(ResourceLink)
class ResourceLinkAdmin(admin.ModelAdmin):
    """The LTI claim only: what a link places, and by which rules, is the course side's
    (activities' Placement admin)."""

    formfield_overrides = HTTPS_URL_FIELDS

    list_display = ["title", "resource_link_id", "context", "created_at"]
    search_fields = ["title", "resource_link_id"]
    list_select_related = ["context"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "context", "role", "updated_at"]
    list_filter = ["role"]
    list_select_related = ["user", "context"]
