from django.contrib import admin, messages

from .models import GradeSync, SyncState
from .services import retry_now


@admin.register(GradeSync)
class GradeSyncAdmin(admin.ModelAdmin):
    """The backlog: what waits, what failed and why."""

    list_display = [
        "user",
        "placement",
        "score_given",
        "state",
        "tries",
        "next_attempt_at",
        "last_error",
        "created_at",
    ]
    list_filter = ["state"]
    show_facets = admin.ShowFacets.ALWAYS  # the backlog: counts per state beside the filter
    list_select_related = ["user", "placement"]
    search_fields = ["user__username", "last_error"]
    readonly_fields = [field.name for field in GradeSync._meta.fields]
    actions = ["retry"]

    @admin.action(description="Retry now")
    def retry(self, request, queryset):
        count = sum(retry_now(sync) for sync in queryset.exclude(state=SyncState.SYNCED))
        messages.info(
            request,
            f"{count} deliveries queued (delivered, in-flight and superseded ones are left alone).",
        )

    def has_add_permission(self, request):
        return False
