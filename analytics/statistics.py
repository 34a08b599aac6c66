"""Quiz statistics as Moodle's quiz statistics report defines them, computed from frequency
tables (what SQL's GROUP BY returns), never from every response.

Inputs, for the P attempts that count:

* ``totals``: {total score T: number of attempts};
* per question, ``items``: {(question score x, total T): number of attempts}, x being 0 or
  1 (every question here is one mark, right or wrong);
* per option, {total T: number of attempts that chose it}.

Variances and covariances divide by P − 1, as Moodle's do. The formulas are written out in
docs/analytics.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "ItemStatistics",
    "QuizStatistics",
    "group_share",
    "item_statistics",
    "quiz_statistics",
]

UPPER_LOWER_FRACTION = 0.27
THIRD = 1 / 3
MIN_ATTEMPTS_FOR_RELIABILITY = 3


@dataclass(frozen=True)
class QuizStatistics:
    attempts: int
    mean: float | None
    median: float | None
    standard_deviation: float | None
    skewness: float | None
    kurtosis: float | None
    internal_consistency: float | None  # Cronbach's alpha as a percentage (Moodle's CIC)
    error_ratio: float | None
    standard_error: float | None
    maximum: int


@dataclass(frozen=True)
class ItemStatistics:
    attempts: int
    facility: float | None  # mean score, percent of the question's maximum
    standard_deviation: float | None  # percent of the question's maximum
    random_guess_score: float | None
    intended_weight: float
    effective_weight: float | None
    discrimination_index: float | None  # r(question, rest of the test), percent
    discriminative_efficiency: float | None
    point_biserial: float | None  # r(question, total)
    upper_lower_difference: float | None  # share right in the top 27% minus the bottom 27%
    covariance_with_total: float | None


def _moments(totals: Mapping[int, int]) -> tuple[int, float, float, float, float]:
    """(P, mean, m2, m3, m4): central moments dividing by P."""
    count = sum(totals.values())
    mean = sum(t * n for t, n in totals.items()) / count
    central = [sum(n * (t - mean) ** k for t, n in totals.items()) / count for k in (2, 3, 4)]
    return count, mean, *central


def _median(totals: Mapping[int, int]) -> float:
    count = sum(totals.values())
    ordered = sorted(totals.items())

    def nth(index: int) -> int:  # 0-based
        seen = 0
        for value, n in ordered:
            seen += n
            if index < seen:
                return value
        raise IndexError(index)

    if count % 2:
        return float(nth(count // 2))
    return (nth(count // 2 - 1) + nth(count // 2)) / 2


def total_variance(totals: Mapping[int, int]) -> float | None:
    count = sum(totals.values())
    if count < 2:
        return None
    _count, _mean, m2, _m3, _m4 = _moments(totals)
    return m2 * count / (count - 1)


def quiz_statistics(
    totals: Mapping[int, int], item_variances: list[float | None], maximum: int
) -> QuizStatistics:
    """Moodle's test statistics. ``item_variances`` are V(x_i) of every question (for the
    coefficient of internal consistency)."""
    count = sum(totals.values())
    if count == 0:
        return QuizStatistics(0, None, None, None, None, None, None, None, None, maximum)
    _count, mean, m2, m3, m4 = _moments(totals)
    median = _median(totals)
    if count < 2:
        return QuizStatistics(count, mean, median, None, None, None, None, None, None, maximum)
    k2 = count * m2 / (count - 1)
    sd = math.sqrt(k2)
    skewness = kurtosis = None
    if count >= 3 and k2 > 0:
        k3 = count**2 * m3 / ((count - 1) * (count - 2))
        skewness = k3 / k2**1.5
    if count >= 4 and k2 > 0:
        k4 = (
            count**2
            * ((count + 1) * m4 - 3 * (count - 1) * m2**2)
            / ((count - 1) * (count - 2) * (count - 3))
        )
        kurtosis = k4 / k2**2
    cic = error_ratio = standard_error = None
    questions = len(item_variances)
    # Moodle leaves these out below three attempts (with two, α is 0 or undefined).
    if (
        count >= MIN_ATTEMPTS_FOR_RELIABILITY
        and questions >= 2
        and k2 > 0
        and all(v is not None for v in item_variances)
    ):
        cic = 100 * questions / (questions - 1) * (1 - sum(item_variances) / k2)
        if cic <= 100:
            error_ratio = 100 * math.sqrt(1 - cic / 100)
            standard_error = error_ratio / 100 * sd
    return QuizStatistics(
        count, mean, median, sd, skewness, kurtosis, cic, error_ratio, standard_error, maximum
    )


def group_share(
    totals: Mapping[int, int], chosen_by_total: Mapping[int, int], fraction: float, upper: bool
) -> float | None:
    """Share of the top (or bottom) ``fraction`` of attempts, ranked by total, that are in
    ``chosen_by_total``. Attempts tied at the group's edge count in proportion, which is
    the expected share under a random order of the ties."""
    count = sum(totals.values())
    size = fraction * count
    if size <= 0:
        return None
    remaining = size
    chosen = 0.0
    for total in sorted(totals, reverse=upper):
        take = min(remaining, totals[total])
        if take <= 0:
            break
        chosen += take * chosen_by_total.get(total, 0) / totals[total]
        remaining -= take
    return chosen / size


def item_statistics(
    totals: Mapping[int, int],
    items: Mapping[tuple[int, int], int],
    *,
    options: int,
    questions: int,
    effective_weight: float | None,
) -> ItemStatistics:
    """One question's statistics; ``effective_weight`` comes from all questions'
    covariances (see ``effective_weights``)."""
    count = sum(totals.values())
    right = {total: n for (x, total), n in items.items() if x == 1}
    sum_x = sum(right.values())
    intended = 100 / questions
    guess = 100 / options if options else None
    if count < 2:
        facility = 100 * sum_x / count if count else None
        return ItemStatistics(
            count, facility, None, guess, intended, None, None, None, None, None, None
        )
    sum_t = sum(t * n for t, n in totals.items())
    sum_t2 = sum(t * t * n for t, n in totals.items())
    variance_x = (sum_x - sum_x**2 / count) / (count - 1)
    variance_t = total_variance(totals)
    sum_xt = sum(t * n for t, n in right.items())
    covariance_xt = (sum_xt - sum_x * sum_t / count) / (count - 1)
    # The rest of the test, X = T − x.
    covariance_xr = covariance_xt - variance_x
    variance_r = variance_t - 2 * covariance_xt + variance_x
    # Whether x and X = T − x vary at all, decided in integers: the floating-point
    # variances of a constant are a rounding residue (1e-17), not zero, and a residue
    # would show as a discrimination index of 0.00 where Moodle shows none.
    sum_r = sum_t - sum_x
    sum_r2 = sum_t2 - 2 * sum_xt + sum_x  # Σ(T − x)², x² being x
    x_varies = count * sum_x - sum_x**2 > 0
    rest_varies = count * sum_r2 - sum_r**2 > 0
    discrimination = efficiency = point_biserial = None
    if x_varies and rest_varies:
        discrimination = 100 * covariance_xr / math.sqrt(variance_x * variance_r)
        best = _largest_covariance(totals, right, sum_x, count, sum_t)
        efficiency = 100 * covariance_xr / best if best > 0 else None
    if x_varies and variance_t > 0:
        point_biserial = covariance_xt / math.sqrt(variance_x * variance_t)
    upper = group_share(totals, right, UPPER_LOWER_FRACTION, upper=True)
    lower = group_share(totals, right, UPPER_LOWER_FRACTION, upper=False)
    return ItemStatistics(
        attempts=count,
        facility=100 * sum_x / count,
        standard_deviation=100 * math.sqrt(variance_x),
        random_guess_score=guess,
        intended_weight=intended,
        effective_weight=effective_weight,
        discrimination_index=discrimination,
        discriminative_efficiency=efficiency,
        point_biserial=point_biserial,
        upper_lower_difference=None if upper is None else upper - lower,
        covariance_with_total=covariance_xt,
    )


def _largest_covariance(
    totals: Mapping[int, int], right: Mapping[int, int], sum_x: int, count: int, sum_t: int
) -> float:
    """C_max(x, X): the covariance when the question's scores and the rest-of-test scores
    are paired in the same order, i.e. the ``sum_x`` right answers with the largest X."""
    rest: dict[int, int] = {}
    for total, n in totals.items():
        got = right.get(total, 0)
        if got:
            rest[total - 1] = rest.get(total - 1, 0) + got
        if n - got:
            rest[total] = rest.get(total, 0) + n - got
    remaining, top = sum_x, 0
    for value in sorted(rest, reverse=True):
        take = min(remaining, rest[value])
        top += take * value
        remaining -= take
        if not remaining:
            break
    mean_rest = (sum_t - sum_x) / count
    return (top - sum_x * mean_rest) / (count - 1)


def effective_weights(covariances: list[float | None]) -> list[float | None]:
    """Moodle: 100·√C(x_i, T) / Σ_j √C(x_j, T); a question whose score varies against the
    total (negative covariance) has none and is left out of the sum."""
    roots = [math.sqrt(c) if c is not None and c >= 0 else None for c in covariances]
    total = sum(r for r in roots if r is not None)
    return [None if r is None or total == 0 else 100 * r / total for r in roots]
