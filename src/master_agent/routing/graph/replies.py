"""What the front door answers: an agent's result as text, its hand-offs, the paused flows, and a handler's
result as an envelope."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from master_agent.capabilities import DomainPack
from master_agent.capabilities.envelope import Status, SubAgentEnvelope
from master_agent.routing.graph.state import FrontDoorState
from master_agent.runtime.proposals import HOW_TO_ANSWER
from master_agent.runtime.verification import Check


def _paused_lines(state: FrontDoorState) -> list[str]:
    return [
        f'Paused: {flow["goal"]!r} (say "resume" or "never mind" with a word of it).'
        for flow in state.get("suspended") or []
    ]


def _envelope(
    status: Status, data: dict[str, Any], limitations: list[str], verification: Sequence[Check] = ()
) -> dict[str, Any]:
    """A front-door handler's result in the envelope every agent returns (its status and band settled
    the same way): a handler's answer is its evidence, so it is certain or it is not an answer."""
    return SubAgentEnvelope(
        status=status,
        data=data,
        confidence=1.0 if status == "success" else 0.0,
        limitations=limitations,
        verification=[check.model_dump() for check in verification],
    ).model_dump(mode="json")


def _handoff_lines(handoff: dict[str, Any]) -> list[str]:
    kind = handoff.get("kind")
    if kind == "preview":
        proposal = handoff.get("proposal") or {}
        preview = proposal.get("preview") or {}
        lines = [f"Preview (not done yet, high risk): {proposal.get('tool')}."]
        for key, value in (preview.get("detail") or proposal.get("args") or {}).items():
            shown = f"{len(value)}: {', '.join(map(str, value))}" if isinstance(value, list) else value
            lines.append(f"  {key}: {shown}")
        lines.append(HOW_TO_ANSWER)
        return lines
    if kind == "question":
        return [f"Question: {handoff.get('question')}"]
    return [
        f"Failed: {handoff.get('explanation')}",
        f"What you can do: {handoff.get('what_you_can_do')}",
    ]


def _solution_text(
    status: str, solution: dict[str, Any], envelope: dict[str, Any], pack: DomainPack | None = None
) -> str:
    confidence = float(envelope.get("confidence") or 0.0)
    band = envelope.get("confidence_band")
    lines = [f"Status: {status}" + (f" ({band}, confidence {confidence:.2f})." if band else ".")]
    handoff = envelope.get("handoff")
    if isinstance(handoff, dict):
        lines.extend(_handoff_lines(handoff))
    if pack is not None and pack.describe_answer is not None:
        lines.extend(pack.describe_answer(solution))
    strategy = solution.get("strategy") or {}
    if isinstance(strategy, dict) and strategy.get("name"):
        lines.append(f"Strategy: {strategy['name']}.")
    outcome = solution.get("expected_outcome")
    if isinstance(outcome, dict):
        lines.append("Expected outcome: " + json.dumps(outcome, default=str))
    for limitation in envelope.get("limitations") or []:
        said = isinstance(handoff, dict) and (
            limitation == handoff.get("explanation")
            or limitation.startswith(("waiting for your", "needs your", "what you can do"))
        )
        if not said:
            lines.append(f"Limitation: {limitation}")
    checks = envelope.get("verification") or []
    if checks:
        counts = Counter(str(check.get("verdict")) for check in checks)
        lines.append(
            f"Checked {len(checks)} claims before answering: "
            + ", ".join(
                f"{counts[verdict]} {verdict}"
                for verdict in ("backed", "weak", "unbacked")
                if counts[verdict]
            )
            + "."
        )
    if envelope.get("error") and not isinstance(handoff, dict):
        lines.append(f"Error: {envelope['error']}")
    if len(lines) == 1:
        lines.append(json.dumps(solution, default=str)[:2000])
    return "\n".join(lines)
