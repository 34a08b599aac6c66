from django.contrib import admin

from .models import Grade, GradeChange, GradeOverride, Regrade


class ReadOnlyAdmin(admin.ModelAdmin):
    """Grades change only through the services (audited, synced): the admin shows them."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Grade)
class GradeAdmin(ReadOnlyAdmin):
    list_display = [
        "user",
        "placement",
        "score_given",
        "score_maximum",
        "grading_method",
        "is_overridden",
        "updated_at",
    ]
    list_filter = ["is_overridden"]
    list_select_related = ["user", "placement"]


@admin.register(GradeChange)
class GradeChangeAdmin(ReadOnlyAdmin):
    """The audit trail: who changed which grade, when, from what to what, and why."""

    list_display = [
        "created_at",
        "placement",
        "user",
        "cause",
        "previous_score",
        "new_score",
        "is_overridden",
        "actor",
    ]
    list_filter = ["cause"]
    list_select_related = ["placement", "user", "actor"]
    search_fields = ["user__username", "reason"]


@admin.register(GradeOverride)
class GradeOverrideAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "grade", "previous_score", "score_given", "created_by"]
    list_select_related = ["grade__user", "grade__placement", "created_by"]


@admin.register(Regrade)
class RegradeAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "placement", "cause", "attempts_changed", "grades_changed"]
    list_filter = ["cause"]
    list_select_related = ["placement", "created_by"]
