from django.contrib import admin

from .models import (
    Attempt,
    Grade,
    GradeChange,
    GradeOverride,
    Option,
    Question,
    Quiz,
    QuizVersion,
    Regrade,
    Response,
)
from .services import change_quiz_defaults


@admin.register(Quiz)
class QuizAdmin(admin.ModelAdmin):
    list_display = ["slug", "current_version", "max_attempts", "grading_method"]
    list_editable = ["max_attempts", "grading_method"]

    def save_model(self, request, obj, form, change) -> None:
        """A changed default regrades the placements that follow it (decisions §28)."""
        if not change:
            return super().save_model(request, obj, form, change)
        fields = {name: form.cleaned_data[name] for name in form.changed_data}
        change_quiz_defaults(obj, actor=request.user, **fields)
        return None


class QuestionInline(admin.TabularInline):
    model = Question
    fields = ["position", "key", "source_language"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(QuizVersion)
class QuizVersionAdmin(admin.ModelAdmin):
    list_display = ["quiz", "number", "content_hash", "created_at"]
    readonly_fields = ["quiz", "number", "content_hash", "created_at"]
    inlines = [QuestionInline]


class OptionInline(admin.TabularInline):
    model = Option
    fields = ["position", "key", "text", "is_correct"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Question)
class QuestionAdmin(admin.ModelAdmin):
    """Wording can be corrected here; a version's questions, their order and their options
    never change (attempts, grades and the per-process version layout rely on it: an edited
    quiz file becomes a new version)."""

    list_display = ["version", "position", "key"]
    readonly_fields = ["version", "position", "key", "source_language"]
    inlines = [OptionInline]

    def has_add_permission(self, request) -> bool:
        return False


class ResponseInline(admin.TabularInline):
    model = Response
    fields = ["question", "option", "is_correct", "answered_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Attempt)
class AttemptAdmin(admin.ModelAdmin):
    list_display = ["public_id", "user", "placement", "number", "state", "score", "started_at"]
    list_filter = ["state"]
    list_select_related = ["user", "placement"]
    readonly_fields = ["public_id", "option_order"]
    inlines = [ResponseInline]


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
