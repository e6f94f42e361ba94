"""Chart.js configurations of the console's charts (the library ships in ``static/vendor``): the page
embeds one as JSON and ``console.js`` draws it. Each chart's numbers are also in a table beside it."""

from __future__ import annotations

from typing import Any

from master_agent.evolution.calibration import Reliability
from master_agent.evolution.outcomes import OutcomeCheck, expected_by
from master_agent.service.console.present import is_money_name, is_ratio_name

MEASURED_COLOUR = "#1f5fbf"
EXPECTED_COLOUR = "#2e8b57"
BASELINE_COLOUR = "#6b6b6b"
TARGET_COLOUR = "#c0392b"
CALIBRATED_COLOUR = "#d35400"


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


#: Chart.js formats an axis's ticks (and the tooltips) with these ``Intl.NumberFormat`` options: a share of 1
#: reads as a percentage, not as a fraction.
PERCENT_TICKS = {"format": {"style": "percent", "maximumFractionDigits": 1}}


def value_ticks(metric: str, currency: str) -> dict[str, Any]:
    """How the value axis of ``metric`` is labelled: percentages for a rate, money for an amount."""
    if is_ratio_name(metric):
        return PERCENT_TICKS
    if is_money_name(metric):
        return {"format": {"style": "currency", "currency": currency, "maximumFractionDigits": 0}}
    return {}


def _line(label: str, points: list[dict[str, float]], colour: str, **extra: Any) -> dict[str, Any]:
    return {
        "label": label,
        "data": points,
        "borderColor": colour,
        "backgroundColor": colour,
        "showLine": True,
        "pointRadius": 0,
        "borderWidth": 2,
        **extra,
    }


def outcome_chart(
    expected: dict[str, Any], checks: list[OutcomeCheck], currency: str = "USD"
) -> dict[str, Any]:
    """The measured metric at each checkpoint against the baseline, the expected trajectory (a straight
    line from the baseline to the expected value by the deadline) and the target."""
    baseline = _number(expected.get("baseline"))
    target = _number(expected.get("target"))
    promised = _number(expected.get("expected"))
    days = sorted({check.checkpoint_day for check in checks})
    horizon = int(_number(expected.get("timeline_days")) or (days[-1] if days else 0)) or 1
    last_day = max([horizon, *days])
    datasets: list[dict[str, Any]] = [
        {
            "label": "Measured",
            "data": [
                {"x": check.checkpoint_day, "y": check.measured}
                for check in sorted(checks, key=lambda c: c.checkpoint_day)
                if check.measured is not None
            ],
            "borderColor": MEASURED_COLOUR,
            "backgroundColor": MEASURED_COLOUR,
            "showLine": True,
            "pointRadius": 6,
            "pointHoverRadius": 8,
            "borderWidth": 2,
        }
    ]
    if baseline is not None and promised is not None:
        trajectory = [{"x": 0.0, "y": baseline}] + [
            {"x": float(day), "y": expected_by(day, horizon, baseline, promised)} for day in days
        ]
        datasets.append(_line("Expected trajectory", trajectory, EXPECTED_COLOUR, borderDash=[6, 4]))
    if baseline is not None:
        datasets.append(
            _line("Baseline", [{"x": 0, "y": baseline}, {"x": last_day, "y": baseline}], BASELINE_COLOUR)
        )
    if target is not None:
        datasets.append(
            _line(
                "Target",
                [{"x": 0, "y": target}, {"x": last_day, "y": target}],
                TARGET_COLOUR,
                borderDash=[2, 3],
            )
        )
    metric = str(expected.get("metric") or "metric")
    return {
        "type": "scatter",
        "data": {"datasets": datasets},
        "options": {
            "animation": False,
            "responsive": True,
            "maintainAspectRatio": False,
            "scales": {
                "x": {"type": "linear", "min": 0, "title": {"display": True, "text": "day after delivery"}},
                "y": {
                    "title": {"display": True, "text": metric.replace("_", " ")},
                    "ticks": value_ticks(metric, currency),
                },
            },
            "plugins": {"legend": {"position": "bottom"}},
        },
    }


def reliability_chart(reliability: Reliability) -> dict[str, Any]:
    """Predicted confidence against observed success, per confidence bin, raw and calibrated; the
    diagonal is perfect calibration. A point's size follows how many predictions it holds."""

    def points(bins: list[Any]) -> list[dict[str, float]]:
        return [{"x": b.mean_predicted, "y": b.observed, "n": b.count} for b in bins]

    most = max([b.count for b in [*reliability.raw, *reliability.calibrated]] or [1])

    def radii(bins: list[Any]) -> list[float]:
        return [4 + 8 * b.count / most for b in bins]

    return {
        "type": "scatter",
        "data": {
            "datasets": [
                {
                    "label": "Raw confidence",
                    "data": points(reliability.raw),
                    "borderColor": MEASURED_COLOUR,
                    "backgroundColor": MEASURED_COLOUR,
                    "pointRadius": radii(reliability.raw),
                    "showLine": True,
                    "clip": False,  # a point at 1.0 is drawn whole, not cut at the top edge
                },
                {
                    "label": "Calibrated confidence",
                    "data": points(reliability.calibrated),
                    "borderColor": CALIBRATED_COLOUR,
                    # Hollow and drawn over the raw points: a calibrated point where a raw one lies shows both.
                    "backgroundColor": "rgba(0, 0, 0, 0)",
                    "pointBorderWidth": 3,
                    "pointRadius": [r + 4 for r in radii(reliability.calibrated)],
                    "pointStyle": "rectRot",
                    "showLine": True,
                    "clip": False,
                },
                _line(
                    "Perfect calibration",
                    [{"x": 0, "y": 0}, {"x": 1, "y": 1}],
                    BASELINE_COLOUR,
                    borderDash=[4, 4],
                ),
            ]
        },
        "options": {
            "animation": False,
            "responsive": True,
            "maintainAspectRatio": False,
            "scales": {
                "x": {
                    "min": 0,
                    "max": 1,
                    "title": {"display": True, "text": "predicted confidence"},
                    "ticks": PERCENT_TICKS,
                },
                "y": {
                    "min": 0,
                    "max": 1,
                    "title": {"display": True, "text": "observed success rate"},
                    "ticks": PERCENT_TICKS,
                },
            },
            "plugins": {"legend": {"position": "bottom"}},
        },
    }
