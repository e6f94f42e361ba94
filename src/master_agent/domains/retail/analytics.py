"""Statistics the retail tools run (SciPy), free of any I/O so they are tested directly. SciPy is
imported where it is used: importing scipy.stats costs about a second, paid by every command otherwise."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def correlation(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    """Pearson and Spearman correlation of two equal-length samples (n >= 3)."""
    from scipy import stats

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
    pearson = stats.pearsonr(xa, ya)
    spearman = stats.spearmanr(xa, ya)
    return {
        "pearson_r": round(float(pearson.statistic), 4),
        "pearson_p": float(pearson.pvalue),
        "spearman_rho": round(float(spearman.statistic), 4),
        "spearman_p": float(spearman.pvalue),
        "n": len(x),
    }


def welch_t_test(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Welch's unequal-variance t-test of mean(a) vs mean(b)."""
    from scipy import stats

    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least two values in each group")
    result = stats.ttest_ind(np.asarray(a, float), np.asarray(b, float), equal_var=False)
    return {
        "mean_a": float(np.mean(a)),
        "mean_b": float(np.mean(b)),
        "t": round(float(result.statistic), 4),
        "p_value": float(result.pvalue),
        "df": round(float(result.df), 2),
    }


def welch_t_test_proportions(hits_a: int, n_a: int, hits_b: int, n_b: int) -> dict[str, float]:
    """Welch's t-test on two groups of 0/1 outcomes given as counts (same result as on the raw rows)."""
    from scipy import stats

    if n_a < 2 or n_b < 2:
        raise ValueError("Welch's t-test needs at least two values in each group")
    mean_a, mean_b = hits_a / n_a, hits_b / n_b
    std_a = math.sqrt(mean_a * (1 - mean_a) * n_a / (n_a - 1))
    std_b = math.sqrt(mean_b * (1 - mean_b) * n_b / (n_b - 1))
    result = stats.ttest_ind_from_stats(mean_a, std_a, n_a, mean_b, std_b, n_b, equal_var=False)
    return {
        "mean_a": mean_a,
        "mean_b": mean_b,
        "t": round(float(result.statistic), 4),
        "p_value": float(result.pvalue),
        "df": round(float(getattr(result, "df", n_a + n_b - 2)), 2),
    }


def two_proportion_sample_size(
    baseline: float, expected: float, *, alpha: float = 0.05, power: float = 0.8
) -> int:
    """Observations per arm to detect ``baseline`` -> ``expected`` with a two-sided z-test."""
    from scipy import stats

    if not (0 < baseline < 1 and 0 < expected < 1) or baseline == expected:
        raise ValueError("baseline and expected must be different proportions in (0, 1)")
    z_alpha = stats.norm.ppf(1 - alpha / 2)
    z_beta = stats.norm.ppf(power)
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
