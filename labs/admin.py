from django.contrib import admin
from django.http import HttpRequest

from .models import Lab, LabRun, LabSchedule


@admin.register(Lab)
class LabAdmin(admin.ModelAdmin):
    list_display = ["slug", "model_kind", "blocks", "width", "batch", "budget_bytes"]


@admin.register(LabSchedule)
class LabScheduleAdmin(admin.ModelAdmin):
    """Read-only here: the course's instructors set the schedule on the lab's manage page,
    where a change regrades the class and re-marks late runs."""

    list_display = ["placement", "opens_at", "due_at", "closes_at", "late_policy"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(LabRun)
class LabRunAdmin(admin.ModelAdmin):
    list_display = ["public_id", "placement", "user", "number", "status", "score", "device"]
    list_filter = ["status", "device"]
    readonly_fields = ["result"]
