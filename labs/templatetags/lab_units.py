from django import template
from django.utils.formats import number_format

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
def percent(value: float | None) -> str:
    if value is None:
        return "—"
    return number_format(value * 100, 1)
