"""Statistics the retail tools run, free of any I/O so they are tested directly. The tests are SciPy's
(Pearson, Spearman, Welch, the normal quantile), computed from ``scipy.special``'s Student-t and normal
functions: ``scipy.stats`` costs a second of imports and ~45 MiB in every serving process that answers a
goal, for the same numbers (``tests/test_retail_statistics.py`` compares them with ``scipy.stats``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.special import ndtri, stdtr


def _two_sided_p(t: float, df: float) -> float:
    """The two-sided p-value of ``t`` under Student's t with ``df`` degrees of freedom."""
    if math.isnan(t):
        return math.nan
    # An infinite t (two groups without spread, different means) is certain whatever the df.
    return 0.0 if math.isinf(t) else float(2 * stdtr(df, -abs(t)))


def _pearson(xa: np.ndarray[Any, Any], ya: np.ndarray[Any, Any]) -> tuple[float, float]:
    """Pearson's r and its two-sided p-value (r's null distribution is Student's t with n - 2 df)."""
    dx, dy = xa - xa.mean(), ya - ya.mean()
    r = float(np.clip((dx @ dy) / math.sqrt(float(dx @ dx) * float(dy @ dy)), -1.0, 1.0))
    if abs(r) == 1.0:
        return r, 0.0
    n = len(xa)
    return r, _two_sided_p(r * math.sqrt((n - 2) / (1 - r * r)), n - 2)


def _ranks(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Ranks from 1, ties given their average rank."""
    _, position, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks: np.ndarray[Any, Any] = (ends - (counts - 1) / 2)[position]
    return ranks


def _welch(
    mean_a: float, var_a: float, n_a: int, mean_b: float, var_b: float, n_b: int
) -> tuple[float, float, float]:
    """Welch's t, its degrees of freedom (Welch-Satterthwaite) and its two-sided p-value."""
    share_a, share_b = var_a / n_a, var_b / n_b
    spread = share_a + share_b
    with np.errstate(divide="ignore", invalid="ignore"):
        t = float(np.divide(mean_a - mean_b, np.sqrt(spread)))
        df = float(np.divide(spread**2, share_a**2 / (n_a - 1) + share_b**2 / (n_b - 1)))
    return t, df, _two_sided_p(t, df)


def correlation(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    """Pearson and Spearman correlation of two equal-length samples (n >= 3)."""
    if len(x) != len(y) or len(x) < 3:
        raise ValueError("correlation needs two samples of the same length, at least 3 each")
    xa, ya = np.asarray(x, float), np.asarray(y, float)
    if np.ptp(xa) == 0 or np.ptp(ya) == 0:
        return {
            "pearson_r": 0.0,
            "pearson_p": 1.0,
            "spearman_rho": 0.0,
            "spearman_p": 1.0,
            "n": len(x),
        }
    pearson_r, pearson_p = _pearson(xa, ya)
    # Spearman's rho is Pearson's r of the ranks, with the same t approximation for its p-value.
    spearman_rho, spearman_p = _pearson(_ranks(xa), _ranks(ya))
    return {
        "pearson_r": round(pearson_r, 4),
        "pearson_p": pearson_p,
        "spearman_rho": round(spearman_rho, 4),
        "spearman_p": spearman_p,
        "n": len(x),
    }


def welch_t_test(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Welch's unequal-variance t-test of mean(a) vs mean(b)."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least two values in each group")
    aa, ba = np.asarray(a, float), np.asarray(b, float)
    mean_a, mean_b = float(aa.mean()), float(ba.mean())
    t, df, p = _welch(mean_a, float(aa.var(ddof=1)), len(aa), mean_b, float(ba.var(ddof=1)), len(ba))
    return {"mean_a": mean_a, "mean_b": mean_b, "t": round(t, 4), "p_value": p, "df": round(df, 2)}


def welch_t_test_proportions(hits_a: int, n_a: int, hits_b: int, n_b: int) -> dict[str, float]:
    """Welch's t-test on two groups of 0/1 outcomes given as counts (same result as on the raw rows)."""
    if n_a < 2 or n_b < 2:
        raise ValueError("Welch's t-test needs at least two values in each group")
    mean_a, mean_b = hits_a / n_a, hits_b / n_b
    var_a = mean_a * (1 - mean_a) * n_a / (n_a - 1)
    var_b = mean_b * (1 - mean_b) * n_b / (n_b - 1)
    t, df, p = _welch(mean_a, var_a, n_a, mean_b, var_b, n_b)
    return {"mean_a": mean_a, "mean_b": mean_b, "t": round(t, 4), "p_value": p, "df": round(df, 2)}


def two_proportion_sample_size(
    baseline: float, expected: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Observations per arm to detect ``baseline`` -> ``expected`` with a two-sided z-test."""
    if not (0 < baseline < 1 and 0 < expected < 1) or baseline == expected:
        raise ValueError("baseline and expected must be different proportions in (0, 1)")
    z_alpha = float(ndtri(1 - alpha / 2))
    z_beta = float(ndtri(power))
    pooled = (baseline + expected) / 2
    numerator = (
        z_alpha * math.sqrt(2 * pooled * (1 - pooled))
        + z_beta * math.sqrt(baseline * (1 - baseline) + expected * (1 - expected))
    ) ** 2
    needed: int = math.ceil(numerator / (expected - baseline) ** 2)
    return needed


def minimum_detectable_lift(
    baseline: float, per_arm: int, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """Smallest absolute lift over ``baseline`` detectable with ``per_arm`` observations per arm."""
    low, high = 1e-5, 1 - baseline - 1e-5
    for _ in range(60):
        mid = (low + high) / 2
        if two_proportion_sample_size(baseline, baseline + mid, alpha=alpha, power=power) > per_arm:
            low = mid
        else:
            high = mid
    return high


def confidence_from_p(p_value: float, effect_strength: float) -> float:
    """A bounded confidence from significance and effect size (both in [0, 1])."""
    significance = 1 - min(max(p_value, 0.0), 1.0)
    return round(min(0.97, max(0.05, 0.6 * significance + 0.4 * min(abs(effect_strength), 1.0))), 4)


def rank_candidates(
    candidates: Sequence[dict[str, Any]], *, driver: str, budget: float, timeline_days: int
) -> list[dict[str, Any]]:
    """Score interventions: evidence-weighted mid lift, favouring ones that address ``driver``;
    drop those over budget or too slow to show an effect within half the timeline."""
    ranked = []
    for item in candidates:
        feasible = item["cost"] <= budget and item["weeks_to_effect"] * 7 <= timeline_days / 2
        mid_lift = (item["lift_low_points"] + item["lift_high_points"]) / 2
        fit = 1.2 if driver in item["addresses"] else 0.6
        score = round(item["evidence_strength"] * mid_lift * fit, 4) if feasible else 0.0
        ranked.append({**item, "expected_lift_points": mid_lift, "score": score, "feasible": feasible})
    ranked.sort(key=lambda entry: (-entry["score"], entry["cost"], entry["intervention_id"]))
    return ranked
