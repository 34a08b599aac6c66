"""Labs as an activity kind (activities.registry), registered in LabsConfig.ready()."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django import forms
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from activities.registry import ActivityKind
from activities.selectors import Try
from activities.texts import localized
from lti.models import ResourceLink

from .forms import LAB_METHOD_LABELS, validate_moment
from .grading import LAB_SCORE_MAXIMUM
from .models import Lab, LabPlacement, LabRun, LatePolicy

if TYPE_CHECKING:
    from .selectors import LabRules

SCHEDULE_FIELDS = ("opens_at", "due_at", "closes_at")
CUSTOM_LATE_POLICY = "late_policy"
CUSTOM_LATE_PENALTY = "late_penalty_percent"


def _offered() -> dict[str, str]:
    language = get_language()
    return {lab.slug: localized(lab.title, language) for lab in Lab.objects.all()}


def _attach(link: ResourceLink, lab: Lab) -> None:
    LabPlacement.objects.create(resource_link=link, lab=lab)


def _activity_of(link: ResourceLink) -> Lab:
    from .selectors import placed_lab

    return placed_lab(link)


def _moment(label) -> forms.DateTimeField:
    return forms.DateTimeField(
        label=label,
        required=False,
        validators=[validate_moment],
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )


def _deep_link_fields() -> dict[str, forms.Field]:
    """The lab's schedule in the content picker (optional: the lab's defaults otherwise)."""
    return {
        "opens_at": _moment(_("Lab opens at")),
        "due_at": _moment(_("Lab due at")),
        "closes_at": _moment(_("Lab closes at (late runs until then)")),
        "late_policy": forms.ChoiceField(
            label=_("Late runs"),
            choices=LatePolicy.choices,
            initial=LatePolicy.ACCEPT,
            required=False,
        ),
        "late_penalty_percent": forms.IntegerField(
            label=_("Late penalty (%)"), min_value=0, max_value=100, initial=0, required=False
        ),
    }


def _clean_deep_link(form: forms.Form, data: dict[str, Any]) -> None:
    if data.get("grading_method") not in LAB_METHOD_LABELS:
        form.add_error("grading_method", _("A lab is graded by its best run or its last run."))
    opens, due, closes = (data.get(name) for name in SCHEDULE_FIELDS)
    if opens and due and due < opens:
        form.add_error("due_at", _("The due time must come after the opening time."))
    if closes and ((due and closes < due) or (opens and closes < opens)):
        form.add_error(
            "closes_at", _("The closing time must come after the opening and due times.")
        )


def _deep_link_item(item: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The schedule in the custom parameters, for the first launch to set up, and as Deep
    Linking's ``available`` and ``submission`` windows so the LMS shows the dates too."""
    moments = {name: data[name].isoformat() for name in SCHEDULE_FIELDS if data.get(name)}
    item["custom"].update(
        {
            **moments,
            CUSTOM_LATE_POLICY: str(data.get("late_policy") or LatePolicy.ACCEPT),
            CUSTOM_LATE_PENALTY: str(data.get("late_penalty_percent") or 0),
        }
    )
    available = {
        key: moments[name]
        for key, name in (("startDateTime", "opens_at"), ("endDateTime", "closes_at"))
        if name in moments
    }
    if available:
        item["available"] = available
    if "due_at" in moments:
        item["submission"] = {"endDateTime": moments["due_at"]}
    return item


def _placed_from_launch(link: ResourceLink, custom: dict[str, Any]) -> None:
    from .services import schedule_from_custom

    schedule_from_custom(link, custom)


def _plan_grades(link: ResourceLink, _apply_key: bool, user_id: int | None):
    from .selectors import lab_plan

    return lab_plan(link, user_id), [], [], []


def _grading_method(link: ResourceLink) -> str:
    from .selectors import lab_policy

    return lab_policy(link).grading_method


def _lock_work(link: ResourceLink) -> None:
    list(LabRun.objects.select_for_update().filter(placement=link).values_list("pk"))


def _tries(link: ResourceLink, user_ids: list[int]) -> dict[int, list[Try]]:
    by_student: dict[int, list[Try]] = {}
    for student, number, status, score, is_late in (
        LabRun.objects.filter(placement=link, user_id__in=user_ids)
        .order_by("user_id", "number")
        .values_list("user_id", "number", "status", "score", "is_late")
    ):
        percent = None if score is None else score * 100
        by_student.setdefault(student, []).append(
            Try(number, status, percent, Decimal(100) if score is not None else None, is_late)
        )
    return by_student


def _rules(link: ResourceLink) -> LabRules:
    from .selectors import lab_policy

    return lab_policy(link)


LAB = ActivityKind(
    key="lab",
    label=_("lab"),
    line_item_tag="lab",
    offered=_offered,
    catalogue=lambda: list(Lab.objects.all()),
    find=lambda slug: Lab.objects.filter(slug=slug).first(),
    attach=_attach,
    activity_of=_activity_of,
    slug_of=lambda lab: lab.slug,
    title_of=lambda lab, language: localized(lab.title, language),
    score_maximum_of=lambda _lab: Decimal(LAB_SCORE_MAXIMUM),
    student_url=lambda link: reverse("labs:placement", args=[link.pk]),
    manage_url=lambda link: reverse("labs:manage", args=[link.pk]),
    dashboard_url=lambda link: reverse("analytics:dashboard", args=[link.pk]),
    plan_grades=_plan_grades,
    grading_method=_grading_method,
    lock_work=_lock_work,
    regrade_applies_key=False,
    work=lambda link: LabRun.objects.filter(placement=link),
    tries=_tries,
    activity_relation="lab_placement__lab",
    rules=_rules,
    method_labels=LAB_METHOD_LABELS,
    load_command="load_labs",
    select_related=("lab_placement__lab",),
    deep_link_fields=_deep_link_fields,
    clean_deep_link=_clean_deep_link,
    deep_link_item=_deep_link_item,
    placed_from_launch=_placed_from_launch,
)
