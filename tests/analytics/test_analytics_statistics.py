"""Moodle's quiz statistics from frequency tables: against values worked out by hand on a
small data set, and against numpy/scipy on per-attempt arrays of a random one."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats as scipy_stats

from analytics.statistics import (
    UPPER_LOWER_FRACTION,
    effective_weights,
    group_share,
    item_statistics,
    quiz_statistics,
)


def tables(matrix: list[tuple[int, ...]]):
    """What the SQL returns: totals {T: n} and per question {(x, T): n}."""
    totals = Counter(sum(row) for row in matrix)
    items = [Counter((row[i], sum(row)) for row in matrix) for i in range(len(matrix[0]))]
    return dict(totals), [dict(table) for table in items]


def compute(matrix, options=4):
    totals, items = tables(matrix)
    questions = len(items)
    partial = [
        item_statistics(totals, table, options=options, questions=questions, effective_weight=None)
        for table in items
    ]
    weights = effective_weights([s.covariance_with_total for s in partial])
    variances = [
        None if s.standard_deviation is None else (s.standard_deviation / 100) ** 2 for s in partial
    ]
    return quiz_statistics(totals, variances, questions), partial, weights


# Five attempts at three one-mark questions. Totals T = 3, 2, 1, 0, 1.
SMALL = [(1, 1, 1), (1, 1, 0), (1, 0, 0), (0, 0, 0), (0, 1, 0)]


def test_test_statistics_by_hand():
    test, _items, _weights = compute(SMALL)
    assert test.attempts == 5
    assert test.maximum == 3
    assert test.mean == pytest.approx(7 / 5)
    assert test.median == 1
    # Σ(T − 1.4)² = 2.56 + 0.36 + 0.16 + 1.96 + 0.16 = 5.2, over P − 1 = 4: 1.3.
    assert test.standard_deviation == pytest.approx(math.sqrt(13 / 10))
    # m3 = Σd³/5 = (4.096 + 0.216 − 0.064 − 2.744 − 0.064)/5 = 0.288;
    # k3 = 25·0.288/(4·3) = 0.6; skewness = k3 / k2^1.5 = 0.6 / 1.3^1.5.
    assert test.skewness == pytest.approx(0.6 / 1.3**1.5)
    # m2 = 1.04, m4 = (6.5536 + 0.1296 + 0.0256 + 3.8416 + 0.0256)/5 = 2.1152;
    # k4 = 25·(6·2.1152 − 12·1.04²)/(4·3·2) = −0.3; kurtosis = −0.3 / 1.3² = −30/169.
    assert test.kurtosis == pytest.approx(-30 / 169)
    # Item variances 3/10, 3/10, 1/5; CIC = 100·3/2·(1 − 0.8/1.3) = 750/13.
    assert test.internal_consistency == pytest.approx(750 / 13)
    # ER = 100·√(1 − CIC/100) = 100·√(11/26); SE = ER/100·SD = √(11/26 · 13/10) = √(11/20).
    assert test.error_ratio == pytest.approx(100 * math.sqrt(11 / 26))
    assert test.standard_error == pytest.approx(math.sqrt(11 / 20))


def test_question_statistics_by_hand():
    _test, (q1, q2, q3), weights = compute(SMALL, options=4)
    assert (q1.facility, q3.facility) == (pytest.approx(60), pytest.approx(20))
    assert q1.standard_deviation == pytest.approx(100 * math.sqrt(3 / 10))
    assert q1.random_guess_score == 25
    assert q1.intended_weight == pytest.approx(100 / 3)
    # C(x1, T) = (Σx·T − Σx·ΣT/P)/(P − 1) = (6 − 3·7/5)/4 = 9/20; C(x3, T) = (3 − 7/5)/4 = 2/5.
    assert q1.covariance_with_total == pytest.approx(9 / 20)
    assert q3.covariance_with_total == pytest.approx(2 / 5)
    root = math.sqrt(9 / 20)
    assert weights[0] == pytest.approx(100 * root / (2 * root + math.sqrt(2 / 5)))
    assert sum(weights) == pytest.approx(100)
    # Rest of test for q1: X = (2, 1, 0, 0, 1), V(X) = 0.7; C(x, X) = 9/20 − 3/10 = 3/20.
    assert q1.discrimination_index == pytest.approx(100 * (3 / 20) / math.sqrt(0.3 * 0.7))
    # C_max pairs the three 1s with the three largest X (2, 1, 1): (4 − 3·0.8)/4 = 2/5.
    assert q1.discriminative_efficiency == pytest.approx(100 * (3 / 20) / (2 / 5))
    assert q3.discriminative_efficiency == pytest.approx(100)
    assert q1.point_biserial == pytest.approx((9 / 20) / math.sqrt(0.3 * 1.3))
    # Top 27% of 5 is 1.35 attempts: T=3 (right) and 0.35 of T=2 (right) → 1.0.
    # Bottom: T=0 (wrong) and 0.35 of T=1 (one of two right) → 0.175/1.35.
    assert q1.upper_lower_difference == pytest.approx(1 - 0.175 / 1.35)
    assert q3.upper_lower_difference == pytest.approx(1 / 1.35)
    assert q2 == q1  # q2's answers have q1's pattern against the totals


def test_edges_do_not_divide_by_zero():
    test, items, _ = compute([(1, 0)])
    assert test.attempts == 1
    assert test.standard_deviation is None
    assert items[0].discrimination_index is None
    test, items, weights = compute([(1, 1), (1, 1), (1, 1)])  # no variance at all
    assert test.standard_deviation == 0
    assert test.internal_consistency is None
    assert items[0].discrimination_index is None
    assert weights == [None, None]
    empty = quiz_statistics({}, [], 8)
    assert empty.attempts == 0
    assert empty.mean is None


def test_against_numpy_and_scipy_on_random_data():
    rng = np.random.default_rng(11)
    students, questions = 400, 8
    ability = rng.normal(size=(students, 1))
    difficulty = rng.uniform(-1.5, 1.5, size=(1, questions))
    matrix = rng.random((students, questions)) < 1 / (1 + np.exp(-(ability - difficulty)))
    matrix = matrix.astype(int)
    test, items, weights = compute([tuple(row) for row in matrix], options=4)
    totals = matrix.sum(axis=1)

    assert test.mean == pytest.approx(totals.mean())
    assert test.median == pytest.approx(np.median(totals))
    assert test.standard_deviation == pytest.approx(totals.std(ddof=1))
    assert test.skewness == pytest.approx(scipy_stats.skew(totals, bias=False))
    assert test.kurtosis == pytest.approx(scipy_stats.kurtosis(totals, bias=False))
    item_variances = matrix.var(axis=0, ddof=1)
    alpha = questions / (questions - 1) * (1 - item_variances.sum() / totals.var(ddof=1))
    assert test.internal_consistency == pytest.approx(100 * alpha)
    assert test.standard_error == pytest.approx(math.sqrt(1 - alpha) * totals.std(ddof=1))

    covariances = [np.cov(matrix[:, i], totals, ddof=1)[0, 1] for i in range(questions)]
    expected_weights = np.sqrt(covariances) / np.sqrt(covariances).sum() * 100
    assert weights == pytest.approx(list(expected_weights))
    for i, stats in enumerate(items):
        x = matrix[:, i]
        rest = totals - x
        assert stats.facility == pytest.approx(100 * x.mean())
        assert stats.standard_deviation == pytest.approx(100 * x.std(ddof=1))
        assert stats.discrimination_index == pytest.approx(100 * np.corrcoef(x, rest)[0, 1])
        best = np.cov(np.sort(x), np.sort(rest), ddof=1)[0, 1]
        assert stats.discriminative_efficiency == pytest.approx(
            100 * np.cov(x, rest, ddof=1)[0, 1] / best
        )
        assert stats.point_biserial == pytest.approx(np.corrcoef(x, totals)[0, 1])
        upper = _group_mean(x, totals, upper=True)
        lower = _group_mean(x, totals, upper=False)
        assert stats.upper_lower_difference == pytest.approx(upper - lower)


def _group_mean(x, totals, upper: bool) -> float:
    """Share right among the 27% of attempts with the highest totals (``upper``) or the
    lowest, ties at the edge weighted in proportion (computed per attempt, not from the
    frequency tables)."""
    size = UPPER_LOWER_FRACTION * len(x)
    weights = np.zeros(len(x))
    remaining = size
    for value in sorted(set(totals), reverse=upper):
        members = np.flatnonzero(totals == value)
        take = min(remaining, len(members))
        weights[members] = take / len(members)
        remaining -= take
        if remaining <= 0:
            break
    return float((weights * x).sum() / size)


def test_group_share_counts_ties_in_proportion():
    totals = {0: 2, 1: 2, 2: 2}
    chosen = {2: 1, 1: 2}
    assert group_share(totals, chosen, 0.5, upper=True) == pytest.approx((1 + 1 * 2 / 2) / 3)
    assert group_share(totals, chosen, 0.5, upper=False) == pytest.approx((0 + 1) / 3)
