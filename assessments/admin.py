from django.contrib import admin

from activities.admin import ActivityAdmin, ReadOnlyAdmin, wording_form

from .activity import QUIZ
from .models import Attempt, Option, Question, Quiz, QuizVersion, Response


@admin.register(Quiz)
class QuizAdmin(ActivityAdmin):
    kind = QUIZ
    list_display = ["slug", "current_version", "max_attempts", "grading_method"]
    list_editable = ["max_attempts", "grading_method"]


class QuestionInline(admin.TabularInline):
    model = Question
    fields = ["position", "key", "source_language"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(QuizVersion)
class QuizVersionAdmin(admin.ModelAdmin):
    """A version's title and introduction can be corrected here (decision 53); versions are
    made by loading content (load_quiz), which numbers them and fills in their questions."""

    form = wording_form("title", "intro")
    list_display = ["quiz", "number", "content_hash", "created_at"]
    readonly_fields = ["quiz", "number", "content_hash", "created_at"]
    inlines = [QuestionInline]

    def has_add_permission(self, request) -> bool:
        return False


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

    form = wording_form("text", "explanation")
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
class AttemptAdmin(ReadOnlyAdmin):
    """Read-only here, as grades are (decision 28): an attempt is the record of the grade it
    counts towards, and is made, numbered, scored and regraded by the services, which keep the
    grade and its sync with it. A deleted or edited attempt left the grade it made behind."""

    list_display = ["public_id", "user", "placement", "number", "state", "score", "started_at"]
    list_filter = ["state"]
    list_select_related = ["user", "placement"]
    readonly_fields = ["public_id", "option_order"]
    inlines = [ResponseInline]
