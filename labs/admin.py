from django.contrib import admin
from django.http import HttpRequest

from activities.admin import ActivityAdmin, wording_form

from .activity import LAB
from .models import Lab, LabRun, LabSchedule


@admin.register(Lab)
class LabAdmin(ActivityAdmin):
    kind = LAB
    # Its wording can be corrected here, as a quiz's can (decision 53).
    editable_fields = ("title", "instructions", "max_runs", "grading_method")
    form = wording_form("title", "instructions")
    list_display = ["slug", "model_kind", "blocks", "width", "batch", "budget_bytes"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shown, not edited (deleting stays possible, so that deleting a user or a placement
    can take their rows with it)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(LabSchedule)
class LabScheduleAdmin(ReadOnlyAdmin):
    """Read-only here: the course's instructors set the schedule on the lab's manage page,
    where a change regrades the class (late runs follow the due time in force)."""

    list_display = ["placement", "opens_at", "due_at", "closes_at", "late_policy"]


@admin.register(LabRun)
class LabRunAdmin(ReadOnlyAdmin):
    """Read-only here: runs are made, measured and graded by the lab's services."""

    list_display = ["public_id", "placement", "user", "number", "status", "score", "device"]
    list_filter = ["status", "device"]
