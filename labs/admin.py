from django.contrib import admin

from .models import Lab, LabRun, LabSchedule


@admin.register(Lab)
class LabAdmin(admin.ModelAdmin):
    list_display = ["slug", "model_kind", "blocks", "width", "batch", "budget_bytes"]


@admin.register(LabSchedule)
class LabScheduleAdmin(admin.ModelAdmin):
    list_display = ["placement", "opens_at", "due_at", "closes_at", "late_policy"]


@admin.register(LabRun)
class LabRunAdmin(admin.ModelAdmin):
    list_display = ["public_id", "placement", "user", "number", "status", "score", "device"]
    list_filter = ["status", "device"]
    readonly_fields = ["result"]
