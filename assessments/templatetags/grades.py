from decimal import Decimal

from django import template

from assessments.grading import format_grade

register = template.Library()


@register.filter
def grade(value: Decimal | int | float | None) -> str:
    """A grade by the one rounding rule, in the page's number format (docs/decisions.md §27)."""
    return format_grade(value)


@register.filter
def method_label(method: str | None, is_lab: bool = False) -> str:
    """The grading method as the placement's kind of activity names it."""
    if not method:
        return ""
    if is_lab:
        from labs.forms import LAB_METHOD_LABELS

        return str(LAB_METHOD_LABELS.get(method, method))
    from assessments.models import GradingMethod

    return str(GradingMethod(method).label) if method in GradingMethod.values else method
