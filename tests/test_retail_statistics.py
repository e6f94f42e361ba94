"""The retail tools' statistics, computed without ``scipy.stats``, give scipy.stats' numbers: on random
samples of many sizes, with ties, perfect and constant relations, and proportions near 0 and 1."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

from master_agent.domains.retail import analytics


@pytest.fixture(scope="module")
def stats() -> Any:
    """scipy.stats, imported when this module runs rather than when the suite is collected (every worker
    of ``make test`` collects this module; one runs it)."""
    from scipy import stats

    return stats


def _scipy(test: Any, *args: Any, **kwargs: Any) -> Any:
    """scipy.stats' answer; its warnings on degenerate samples are its own, not the code's under test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return test(*args, **kwargs)


@pytest.mark.parametrize("seed", range(12))
def test_correlation_matches_scipy(seed: int, stats: Any) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    x = rng.normal(size=n).round(int(rng.integers(0, 3)))  # rounding makes ties
    y = (0.4 * x + rng.normal(size=n)).round(1)
    ours = analytics.correlation(list(x), list(y))
    pearson, spearman = stats.pearsonr(x, y), stats.spearmanr(x, y)
    assert ours["pearson_r"] == pytest.approx(round(float(pearson.statistic), 4), abs=1e-4)
    assert ours["pearson_p"] == pytest.approx(float(pearson.pvalue), rel=1e-6, abs=1e-12)
    assert ours["spearman_rho"] == pytest.approx(round(float(spearman.statistic), 4), abs=1e-4)
    assert ours["spearman_p"] == pytest.approx(float(spearman.pvalue), rel=1e-6, abs=1e-12)


def test_correlation_edges() -> None:
    perfect = analytics.correlation([1, 2, 3, 4], [2, 4, 6, 8])
    assert perfect["pearson_r"] == 1.0 and perfect["pearson_p"] == 0.0 and perfect["spearman_p"] == 0.0
    assert analytics.correlation([1, 1, 1], [1, 2, 3])["pearson_p"] == 1.0
    with pytest.raises(ValueError):
        analytics.correlation([1, 2], [1, 2])


@pytest.mark.parametrize("seed", range(12))
def test_welch_matches_scipy(seed: int, stats: Any) -> None:
    rng = np.random.default_rng(100 + seed)
    a = rng.normal(0.0, float(rng.uniform(0.5, 3)), size=int(rng.integers(2, 30)))
    b = rng.normal(0.5, float(rng.uniform(0.5, 3)), size=int(rng.integers(2, 30)))
    ours = analytics.welch_t_test(list(a), list(b))
    theirs = stats.ttest_ind(a, b, equal_var=False)
    assert ours["t"] == pytest.approx(round(float(theirs.statistic), 4), abs=1e-4)
    assert ours["p_value"] == pytest.approx(float(theirs.pvalue), rel=1e-6)
    assert ours["df"] == pytest.approx(round(float(theirs.df), 2), abs=1e-2)


@pytest.mark.parametrize(
    ("hits_a", "n_a", "hits_b", "n_b"), [(30, 400, 12, 380), (1, 50, 0, 60), (49, 50, 45, 50), (5, 5, 0, 7)]
)
def test_welch_on_proportions_matches_scipy(hits_a: int, n_a: int, hits_b: int, n_b: int, stats: Any) -> None:
    ours = analytics.welch_t_test_proportions(hits_a, n_a, hits_b, n_b)
    raw_a = np.array([1.0] * hits_a + [0.0] * (n_a - hits_a))
    raw_b = np.array([1.0] * hits_b + [0.0] * (n_b - hits_b))
    theirs = _scipy(stats.ttest_ind, raw_a, raw_b, equal_var=False)
    assert ours["t"] == pytest.approx(round(float(theirs.statistic), 4), abs=1e-4)
    assert ours["p_value"] == pytest.approx(float(theirs.pvalue), rel=1e-6, abs=1e-300)


def test_welch_without_spread_is_undefined_as_scipy_says(stats: Any) -> None:
    same = analytics.welch_t_test([2.0, 2.0], [2.0, 2.0])
    assert math.isnan(same["t"]) and math.isnan(same["p_value"])
    assert math.isnan(float(_scipy(stats.ttest_ind, [2.0, 2.0], [2.0, 2.0], equal_var=False).pvalue))


@pytest.mark.parametrize(("baseline", "expected"), [(0.05, 0.06), (0.3, 0.25), (0.5, 0.55), (0.01, 0.03)])
def test_sample_size_uses_the_normal_quantiles(baseline: float, expected: float, stats: Any) -> None:
    z_alpha, z_beta = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    pooled = (baseline + expected) / 2
    numerator = (
        z_alpha * math.sqrt(2 * pooled * (1 - pooled))
        + z_beta * math.sqrt(baseline * (1 - baseline) + expected * (1 - expected))
    ) ** 2
    assert analytics.two_proportion_sample_size(baseline, expected) == math.ceil(
        numerator / (expected - baseline) ** 2
    )
