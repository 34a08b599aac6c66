from decimal import Decimal

from django import template

from activities import registry
from activities.grading import format_grade
from activities.models import GradingMethod

register = template.Library()


@register.filter
def grade(value: Decimal | int | float | None) -> str:
    """A grade by the one rounding rule, in the page's number format (docs/decisions.md §27)."""
    return format_grade(value)


@register.filter
def method_label(method: str | None, kind: str = "") -> str:
    """The grading method as the placement's kind of activity (its registry key) names it."""
    if not method:
        return ""
    if kind and method in registry.kind(kind).method_labels:
        return str(registry.kind(kind).method_labels[method])
    return str(GradingMethod(method).label) if method in GradingMethod.values else method
