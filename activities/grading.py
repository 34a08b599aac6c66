"""The grade rules every activity shares: how a grade is computed from what counts, and the
one rounding rule for every grade the tool stores, shows, exports and posts to the LMS
(docs/decisions.md §27)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from django.utils.formats import number_format

from .models import GradingMethod

# Grades carry two decimals, rounded half up: 84.375 is 84.38 on every page, in the API,
# in CSV and as the score posted to the LMS.
GRADE_DECIMALS = 2
GRADE_QUANTUM = Decimal(1).scaleb(-GRADE_DECIMALS)


def round_grade(value: Decimal | int | float | str) -> Decimal:
    """The grade rounded by the one rule (a float is read through its shortest repr)."""
    number = value if isinstance(value, Decimal) else Decimal(str(value))
    return number.quantize(GRADE_QUANTUM, rounding=ROUND_HALF_UP)


def format_grade(value: Decimal | int | float | str | None) -> str:
    """The grade as people read it: the rule's decimals in the page's number format
    (a decimal comma in Russian); the number is the same in every language."""
    if value is None:
        return "—"
    return number_format(round_grade(value), GRADE_DECIMALS)


def plain_grade(value: Decimal | None) -> str:
    """The grade for machines (CSV): the rule's decimals with a decimal point."""
    return "" if value is None else f"{round_grade(value):.{GRADE_DECIMALS}f}"


@dataclass(frozen=True)
class ComputedGrade:
    """A grade as a fraction of the maximum, with what it came from: how many attempts or
    runs counted, and the number of the one that gave it (None for an average)."""

    fraction: Decimal
    counted: int
    counted_number: int | None


def grade_fraction(method: str, fractions_by_number: list[Decimal]) -> Decimal:
    """The grade, as a fraction of the maximum, from the fractions of each finished attempt
    in order, by the grading method."""
    computed = grade_by_method(method, list(enumerate(fractions_by_number, 1)))
    assert computed is not None, "a grade needs at least one attempt"
    return computed.fraction


def grade_by_method(
    method: str, finished: Sequence[tuple[int, Decimal]], limit: int = 0
) -> ComputedGrade | None:
    """The grade from the finished attempts, as (number, fraction) in order of number, by
    the grading method; with an attempt limit (0: none) only the attempts it allows count, so
    attempts made before the limit was lowered stop counting. None when nothing counts."""
    counting = [row for row in finished if not limit or row[0] <= limit]
    if not counting:
        return None
    if method == GradingMethod.AVERAGE:
        fractions = [fraction for _number, fraction in counting]
        return ComputedGrade(sum(fractions) / len(fractions), len(counting), None)
    if method == GradingMethod.FIRST:
        number, fraction = counting[0]
    elif method == GradingMethod.LAST:
        number, fraction = counting[-1]
    else:  # the highest; the earliest of equal ones
        number, fraction = max(counting, key=lambda row: (row[1], -row[0]))
    return ComputedGrade(fraction, len(counting), number)
