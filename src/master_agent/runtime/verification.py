"""One verification step before an agent answers: each claim the answer makes, checked.

Every agent loop runs it in ``finalize`` (the deepagents harness through the same envelope), whatever
its pack: it reads conventions of the answer, not a domain. A check is a claim, the evidence this run
holds for it and a verdict:

- ``backed``: the evidence holds (a test below its threshold, a target the expected value reaches, the
  entity the request named);
- ``weak``: the evidence exists but does not hold at the usual threshold (a driver with p = 0.30):
  reported as weak, and the confidence is held below the COMPLETE band;
- ``unbacked``: the answer claims what the evidence contradicts, or answers another entity than the
  one asked about, or an action it was asked for (``{"requested", "done": false}``) is not confirmed
  done by its provider, or ran without a change the user asked of its draft (``not_applied``), or
  sent words that state another change of the request as made while it is not done (``states_undone``).

Any check that is not ``backed`` makes a ``success`` a ``partial`` (the limitation says which), and the
checks are recorded in the result (``verification``) so a user, the console and the tests see why.
An answer with no field filled and no tool called is no answer at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel

Verdict = Literal["backed", "weak", "unbacked"]

#: The significance threshold a statistical claim's test must meet.
SIGNIFICANCE = 0.05
#: The highest confidence an answer resting on weak evidence may report (below COMPLETE).
WEAK_CONFIDENCE_CAP = 0.6
_P_VALUE = re.compile(r"\bp\s*[=<]\s*(\d*\.\d+|\d+(?:e-?\d+)?)", re.I)


class Check(BaseModel):
    """One claim of an answer and what this run holds for it."""

    claim: str
    """Where in the answer, and what it says."""
    evidence: str
    """What the run produced for it (a test and its value, the measured and target values)."""
    verdict: Verdict


def verify_answer(answer: Mapping[str, Any], asked: Mapping[str, Any]) -> list[Check]:
    """The checks of ``answer`` against the values the request stated (``asked``: its entities)."""
    checks: list[Check] = []
    for path, node in _dicts(answer, ""):
        # A claim stands on its tests together: one significant test backs it ("r = -0.68, p = 0.02"
        # with a marginal second test); none significant makes it weak evidence.
        tests = [
            (f"{path}.{key}", text, float(found.group(1)))
            for key, value in node.items()
            for text in _own_strings(value)
            for found in _P_VALUE.finditer(text)
        ]
        if not tests:
            continue
        where, text, best = min(tests, key=lambda test: test[2])
        verdict: Verdict = "backed" if best <= SIGNIFICANCE else "weak"
        checks.append(
            Check(
                claim=f"{where}: {text[:160]}",
                evidence=f"p = {best:g} {'<=' if verdict == 'backed' else '>'} {SIGNIFICANCE}"
                + (f" (the best of {len(tests)} tests)" if len(tests) > 1 else ""),
                verdict=verdict,
            )
        )
    asked_window = asked.get("window")
    if isinstance(asked_window, Mapping) and asked_window.get("reading"):
        # The words did not settle the days (a holiday of a calendar the request did not name): the
        # answer over them rests on a guess, said as one, and claims nothing.
        first, last = _days(asked_window)
        checks.append(
            Check(
                claim=f"the days of {asked_window.get('label') or 'the window'}: {first} to {last}",
                evidence=f"a guess, not said in the request: {asked_window['reading']} "
                "(name the country or the dates to settle it)",
                verdict="weak",
            )
        )
    if isinstance(asked_window, Mapping) and {"start", "end"} <= set(asked_window):
        for path, node in _dicts(answer, ""):
            window = node.get("window")
            if isinstance(window, Mapping) and {"start", "end"} <= set(window):
                same = _days(window) == _days(asked_window)
                checks.append(
                    Check(
                        claim=f"{path}.window: {window.get('label') or window['start']}",
                        evidence=f"the request named {asked_window.get('label') or 'a window'} "
                        f"({asked_window['start']} to {asked_window['end']})",
                        verdict="backed" if same else "unbacked",
                    )
                )
    for path, node in _dicts(answer, ""):
        if "requested" in node and isinstance(node.get("done"), bool):
            # An action the user asked for is done only when its provider confirmed it (read back).
            checks.append(
                Check(
                    claim=f"{path}: {node['requested']} done",
                    evidence=str(node.get("confirmed_by") or "")
                    if node["done"]
                    else f"not done: {node.get('why') or 'no confirmation'}",
                    verdict="backed" if node["done"] else "unbacked",
                )
            )
            if node.get("states_undone"):
                checks.append(
                    Check(
                        claim=f"{path}: what it said is true",
                        evidence=f"it states a change as made that was not done ({node['states_undone']})",
                        verdict="unbacked",
                    )
                )
            asked_changes = node.get("not_applied")
            if isinstance(asked_changes, list) and asked_changes:
                # It ran, but not as the user last asked: a change asked of its draft was not applied.
                checks.append(
                    Check(
                        claim=f"{path}: {node['requested']} with the changes asked of its draft",
                        evidence="not applied: " + "; ".join(repr(str(text)) for text in asked_changes),
                        verdict="unbacked",
                    )
                )
        if "meets_target" in node and node["meets_target"] is not None:
            met = bool(node["meets_target"])
            checks.append(
                Check(
                    claim=f"{path}: the target {node.get('target')} is reached",
                    evidence=f"expected {node.get('expected')} from baseline {node.get('baseline')}",
                    verdict="backed" if met else "unbacked",
                )
            )
        for key, value in node.items():
            if (
                key.endswith("_id")
                and key in asked
                and isinstance(value, int | str)
                and not isinstance(value, bool)
            ):
                same = str(value) == str(asked[key])
                evidence = f"the request named {key} {asked[key]}"
                if same and any(check.evidence == evidence for check in checks):
                    continue  # one backed check per entity is enough
                checks.append(
                    Check(
                        claim=f"{path}.{key} = {value}",
                        evidence=evidence,
                        verdict="backed" if same else "unbacked",
                    )
                )
    return checks


def confirmed_actions(results: Iterable[Any]) -> list[dict[str, Any]]:
    """The action records (``{"requested", "done", ...}``) the run's tool results hold, in order."""
    found: list[dict[str, Any]] = []
    for result in results:
        if isinstance(result, str):
            try:
                result = json.loads(result)
            except json.JSONDecodeError:
                continue
        for _, node in _dicts(result, ""):
            if "requested" in node and isinstance(node.get("done"), bool):
                found.append(dict(node))
    return found


def requested_steps(asked: Mapping[str, Any], performed: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Each change a request of several steps asked for (``asked["actions"]``), as this run's tools
    left it: the last record a tool returned for it (done only when its provider confirmed it), else
    the request's own record (not done). None for a request of one step."""
    wanted = asked.get("actions")
    if not isinstance(wanted, list) or not wanted:
        return None
    steps: list[dict[str, Any]] = []
    for step in wanted:
        if not isinstance(step, Mapping):
            continue
        same = [record for record in performed if record.get("requested") == step.get("requested")]
        record = dict(same[-1]) if same else dict(step)
        told = step.get("tells")
        if (
            isinstance(told, int)
            and 0 <= told < len(steps)
            and record.get("done")
            and not steps[told].get("done")
        ):
            # A message that states an earlier change as made ("the design review moves to 1pm"),
            # sent while that change is not done: it told the reader something untrue.
            record["states_undone"] = steps[told].get("requested")
        steps.append(record)
    return steps


@dataclass(frozen=True)
class Verified:
    """What the verification step made of an answer before it is given."""

    data: dict[str, Any]
    """The answer, its confidence held below COMPLETE when a claim rests on weak evidence."""
    confidence: float
    checks: list[Check]
    limitations: list[str]
    """What the checks that failed mean, in a user's words (any makes a success partial)."""
    no_answer: str | None
    """Set when there is no answer at all: the result is an error, not a partial solution."""


def verify_before_answer(
    data: Mapping[str, Any],
    asked: Mapping[str, Any],
    confidence: float,
    *,
    model_finished: bool,
    tools_called: bool,
) -> Verified:
    """The step every agent loop, the deepagents harness and every front-door handler runs on its
    answer: its claims checked (``verify_answer``), weak evidence capping the confidence, and an
    answer with nothing in it told apart from a short one. Only the model's own "done" can be no
    answer at all: a stop rule (iterations, budget) ending a flow early leaves a partial answer."""
    checks = verify_answer(data, asked)
    answer = dict(data)
    if any(check.verdict == "weak" for check in checks):
        confidence = min(confidence, WEAK_CONFIDENCE_CAP)
        if "confidence" in answer:
            answer["confidence"] = confidence
    limitations = limitations_of(checks)
    no_answer: str | None = None
    if model_finished and is_empty_answer(answer):
        if tools_called:
            limitations.append("the answer is empty")
        else:
            no_answer = "the model gave no answer (no tool called, no field filled)"
    return Verified(answer, confidence, checks, limitations, no_answer)


def limitations_of(checks: list[Check]) -> list[str]:
    """What the failed checks mean for the answer, in a user's words."""
    lines = []
    for check in checks:
        if check.verdict == "weak":
            lines.append(f"weak evidence: {check.claim} ({check.evidence})")
        elif check.verdict == "unbacked":
            lines.append(f"not backed: {check.claim} ({check.evidence})")
    return lines


def is_empty_answer(answer: Mapping[str, Any]) -> bool:
    """No field of the answer holds anything (the confidence aside)."""
    return not any(value not in (None, "", [], {}) for key, value in answer.items() if key != "confidence")


def _own_strings(value: Any) -> list[str]:
    """The text a field holds itself (a string, or a list of strings), not its nested objects'."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def _dicts(node: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(node, Mapping):
        yield path or "answer", node
        for key, value in node.items():
            yield from _dicts(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _dicts(value, f"{path}[{index}]")


def _days(window: Mapping[str, Any]) -> tuple[str, str]:
    """A window's first and last calendar day (UTC): "this quarter so far" read a few seconds apart,
    on a running clock, is the same window."""
    start, end = (
        datetime.fromisoformat(str(window[key])).astimezone(UTC) - timedelta(microseconds=offset)
        for key, offset in (("start", 0), ("end", 1))
    )
    return start.date().isoformat(), end.date().isoformat()
