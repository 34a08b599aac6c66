"""The activity registry: what the course side, the dashboards, grade sync and the API need
from each kind of activity a placement can hold.

Each activity app (assessments: the quiz; labs: the labs) registers one ``ActivityKind`` in
its AppConfig.ready(). A placed resource link's ``activities.Placement`` stores its kind's
key, and the kind's own row (``assessments.QuizPlacement``, ``labs.LabPlacement``) says
which activity. Code outside an activity app asks the registry (``kind_of(link)``)
instead of branching on quiz or lab, so a new kind is one registration: nothing in lti/,
in grade sync or in the pages that list activities changes (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django import forms
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import QuerySet
from django.utils.functional import Promise

from lti.course import Landing
from lti.models import ResourceLink


def _no_fields() -> dict[str, forms.Field]:
    return {}


def _no_check(_form: forms.Form, _data: dict[str, Any]) -> None:
    return None


def _nothing_more(_link: ResourceLink, _custom: dict[str, Any]) -> None:
    return None


def _nothing_to_apply(_link: ResourceLink, _plan: Any) -> None:
    return None


def _no_work_in_progress(_link: ResourceLink, _user_id: int) -> None:
    return None


def _item_as_is(item: dict[str, Any], _data: dict[str, Any]) -> dict[str, Any]:
    return item


@dataclass(frozen=True)
class ActivityKind:
    """One kind of activity. ``key`` prefixes its activities in deep linking's custom
    parameter and AGS resourceId (``quiz:gradient-checkpointing``)."""

    key: str
    label: str | Promise
    # The AGS line item's tag for the LMS's gradebook column.
    line_item_tag: str
    # The activities an instructor can place, slug -> title in the current language.
    offered: Callable[[], dict[str, str]]
    # Every activity of the kind an instructor can place (the API's catalogue).
    catalogue: Callable[[], list[Any]]
    # The loaded activity with this slug, or None.
    find: Callable[[str], Any]
    # Record, in the kind's own row, that the (saved) resource link places the activity.
    attach: Callable[[ResourceLink, Any], None]
    # The activity the link places.
    activity_of: Callable[[ResourceLink], Any]
    slug_of: Callable[[Any], str]
    # The activity's title in a language ("en", "ru").
    title_of: Callable[[Any, str], str]
    score_maximum_of: Callable[[Any], Decimal]
    student_url: Callable[[ResourceLink], str]
    manage_url: Callable[[ResourceLink], str]
    dashboard_url: Callable[[ResourceLink], str]
    # Every student's grade by the placement's rules in force, as (planned grades, rescored
    # attempts, now right, now wrong): (link, apply_key, user_id). Regrades and refreshes use it.
    plan_grades: Callable[..., Any]
    # The grading method in force on the placement.
    grading_method: Callable[[ResourceLink], str]
    # Lock (select_for_update) the placement's attempts or runs: what a grade comes from.
    lock_work: Callable[[ResourceLink], None]
    # Whether a staff regrade re-marks the work against the activity's current key.
    regrade_applies_key: bool
    # The placement's work, what grades come from: a queryset of rows with ``user_id`` and
    # ``number`` (a quiz's attempts, a lab's runs), and those of some students as the
    # gradebook lists them, by student.
    work: Callable[[ResourceLink], QuerySet]
    tries: Callable[[ResourceLink, list[int]], dict[int, list[Any]]]
    # ResourceLink's relation to the activity it places ("quiz_placement__quiz"), and the rules
    # in force at a link that its grades follow (the attempt limit and grading method, after
    # the placement's own settings): a change of an activity's defaults regrades the links
    # whose rules it changes.
    activity_relation: str
    rules: Callable[[ResourceLink], Any]
    # The management command that loads this kind's activities.
    load_command: str
    # Relations of ResourceLink that pages of this kind read (fetched with the placement;
    # the course side's "placement" always is).
    select_related: tuple[str, ...] = ()
    # Deep linking: the kind's own fields of the picker, their cross-checks, and what the
    # content item carries for them.
    deep_link_fields: Callable[[], dict[str, forms.Field]] = field(default=_no_fields)
    clean_deep_link: Callable[[forms.Form, dict[str, Any]], None] = field(default=_no_check)
    deep_link_item: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]] = field(
        default=_item_as_is
    )
    # Apply what a recomputation's plan changes in the kind's own work before the grades
    # are written (a quiz's re-marked responses and attempt scores).
    apply_plan: Callable[[ResourceLink, Any], None] = field(default=_nothing_to_apply)
    # How the gradebook names a grading method for this kind (a lab's "Best run"), where
    # it differs from GradingMethod's labels.
    method_labels: dict[str, Any] = field(default_factory=dict)
    # After a launch placed it: set up what the custom parameters carry (a lab's schedule).
    placed_from_launch: Callable[[ResourceLink, dict[str, Any]], None] = field(
        default=_nothing_more
    )
    # Where a launch of the student (link, user_id) lands instead of ``student_url`` while
    # they have work in progress (a quiz's attempt, with its page for the launch to answer
    # with), or None.
    resume: Callable[[ResourceLink, int], Landing | None] = field(default=_no_work_in_progress)


_kinds: dict[str, ActivityKind] = {}


class UnknownActivity(LookupError):
    """No registered kind places this link (or has this key)."""


def register(kind: ActivityKind) -> ActivityKind:
    """Register a kind (once per key: AppConfig.ready() may run again in tests)."""
    _kinds[kind.key] = kind
    return kind


def unregister(key: str) -> None:
    _kinds.pop(key, None)


def kinds() -> list[ActivityKind]:
    return list(_kinds.values())


def kind(key: str) -> ActivityKind:
    try:
        return _kinds[key]
    except KeyError:
        raise UnknownActivity(key) from None


def kind_of(link: ResourceLink) -> ActivityKind:
    """The kind of activity the resource link places: its Placement's stored key."""
    try:
        key = link.placement.kind
    except ObjectDoesNotExist:
        key = None
    return placed_kind_of(link.pk, key)


def placed_kind_of(link_id: int, key: str | None) -> ActivityKind:
    """The kind whose key a resource link's placement stores (None: it places nothing)."""
    if key is None:
        raise UnknownActivity(f"resource link {link_id} places no activity")
    return kind(key)


def places(link: ResourceLink, key: str) -> bool:
    """Whether the resource link places an activity of the kind ``key``."""
    try:
        return kind_of(link).key == key
    except UnknownActivity:
        return False


def slug(link: ResourceLink) -> str:
    """The placed activity's slug."""
    found = kind_of(link)
    return found.slug_of(found.activity_of(link))


def title(link: ResourceLink, language: str) -> str:
    """The placed activity's own title in a language."""
    found = kind_of(link)
    return found.title_of(found.activity_of(link), language)


def score_maximum(link: ResourceLink) -> Decimal:
    """The most a student can score on the placed activity."""
    found = kind_of(link)
    return found.score_maximum_of(found.activity_of(link))
