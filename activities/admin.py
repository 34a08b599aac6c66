from django import forms
from django.contrib import admin
from django.db import transaction
from django.db.models import Model
from django.http import HttpRequest

from . import registry
from .content import ContentError, texts_by_language
from .models import ChangeCause, Grade, GradeChange, GradeOverride, Placement, Regrade
from .services import change_activity_defaults, recompute_placement


@admin.register(Placement)
class PlacementAdmin(admin.ModelAdmin):
    """What each resource link places and its policy. Links are placed by launches and deep
    linking; here an administrator changes the policy, which regrades the placement at once
    (as the instructor's settings page does)."""

    list_display = [
        "resource_link",
        "context",
        "kind",
        "activity",
        "max_attempts",
        "grading_method",
    ]
    list_filter = ["kind"]
    list_select_related = ["resource_link__context"]
    search_fields = ["resource_link__title", "resource_link__resource_link_id"]
    fields = ["resource_link", "kind", "activity", "max_attempts", "grading_method"]
    readonly_fields = ["resource_link", "kind", "activity"]

    @admin.display(description="course")
    def context(self, placement: Placement) -> str:
        return str(placement.resource_link.context)

    @admin.display(description="activity")
    def activity(self, placement: Placement) -> str:
        try:
            return registry.slug(placement.resource_link)
        except registry.UnknownActivity:
            return f"{placement.kind} (not installed)"

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @transaction.atomic
    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        if form.changed_data:
            recompute_placement(
                placement=obj.resource_link, actor=request.user, cause=ChangeCause.SETTINGS
            )


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


class ActivityAdmin(admin.ModelAdmin):
    """An activity (a quiz, a lab): its content is loaded from its file by its kind's load
    command, which keeps versions and measured references in step with it, so the admin
    shows it. What ``editable_fields`` names is changed here: the defaults a placement
    follows, whose change regrades the placements whose rules it changes (as their own
    settings do), and wording the activity's own row holds."""

    kind: registry.ActivityKind
    editable_fields: tuple[str, ...] = ("max_attempts", "grading_method")

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> list[str]:
        return [
            field.name
            for field in self.model._meta.fields
            if field.editable and not field.primary_key and field.name not in self.editable_fields
        ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def save_model(
        self, request: HttpRequest, obj: Model, form: forms.ModelForm, change: bool
    ) -> None:
        fields = {name: form.cleaned_data[name] for name in form.changed_data}
        change_activity_defaults(self.kind, obj, actor=request.user, **fields)


class WordingForm(forms.ModelForm):
    """The admin form of a row with wording (JSON: a text per language) that may be
    corrected there, named in ``wording``: each is checked as a content file's is
    (activities.content.texts_by_language), since pages read a text per language from it."""

    wording: tuple[str, ...] = ()

    def clean(self) -> dict:
        cleaned = super().clean()
        for name in self.wording:
            if name in cleaned:  # not read-only, and a JSON value
                try:
                    cleaned[name] = texts_by_language(cleaned[name], name)
                except ContentError as error:
                    self.add_error(name, str(error))
        return cleaned


def wording_form(*names: str) -> type[WordingForm]:
    """A ``WordingForm`` checking the fields ``names``, for a ModelAdmin's ``form``."""
    return type("WordingForm", (WordingForm,), {"wording": names})
