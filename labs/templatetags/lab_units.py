from decimal import ROUND_HALF_UP, Decimal

from django import template
from django.utils.formats import number_format

from activities.grading import format_grade
from labs.selectors import policy_json as policy_json_text

register = template.Library()


@register.filter
def mebibytes(value: int | None) -> str:
    """Bytes as MiB with two decimals, in the page's number format."""
    if value is None:
        return "—"
    return number_format(value / 2**20, 2)


@register.filter
def gigaflops(value: int | None) -> str:
    if value is None:
        return "—"
    return number_format(value / 1e9, 3)


@register.filter
def percent(value: Decimal | float | None) -> str:
    """A share from 0 to 1 as a percentage with one decimal, rounded half up (never cut)."""
    if value is None:
        return "—"
    share = (Decimal(str(value)) * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return number_format(share, 1)


@register.filter
def score_percent(value: Decimal | float | None) -> str:
    """A lab score from 0 to 1 as a percentage by the grades' one rounding rule (two
    decimals, half up: 2/3 is 66.67), in the page's number format: the lab grade shows the
    same digits out of 100."""
    if value is None:
        return "—"
    return format_grade(Decimal(str(value)) * 100)


@register.filter
def policy_json(policy: object) -> str:
    """A policy as indented JSON, as the student writes it (never Python's repr)."""
    return policy_json_text(policy)
