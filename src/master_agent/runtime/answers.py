"""What a loop's last message means as an answer: the JSON object it carries, the confidence it may
claim, and its shape under the agent's output schema. Shared by the agent loop and the deep-agent
runtime (so neither imports the other)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from pydantic import BaseModel, ValidationError

from master_agent.capabilities import AgentSpec
from master_agent.models.schemas import model_schema


def progress_keys(spec: AgentSpec) -> list[str]:
    if "progress_keys" in spec:
        return list(spec["progress_keys"])
    schema = model_schema(spec["output_schema"])
    return [key for key in schema.get("required", []) if key != "confidence"]


def parse_final_answer(message: AnyMessage | None) -> dict[str, Any]:
    """The JSON object of a final model answer (tolerates a fenced block or surrounding prose)."""
    if not isinstance(message, AIMessage) or message.tool_calls:
        return {}
    text = message.content if isinstance(message.content, str) else json.dumps(message.content)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return {}
    try:
        answer = json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return {}
    return answer if isinstance(answer, dict) else {}


def final_confidence(answer: dict[str, Any], reported: float, has_reports: bool) -> float:
    """The answer's confidence: what its calls reported, capped by what the answer itself claims (the
    claim alone when no call reported any), within 0..1."""
    confidence = reported
    claimed = answer.get("confidence")
    if isinstance(claimed, int | float):
        confidence = min(reported, float(claimed)) if has_reports else float(claimed)
    return max(0.0, min(1.0, confidence))


def shape_answer(
    schema: type[BaseModel], answer: dict[str, Any], findings: dict[str, Any], confidence: float
) -> tuple[dict[str, Any], list[str]]:
    """The final answer shaped by the output schema (fields it lacks taken from what the calls found,
    ``confidence`` set) and, when it is incomplete, the limitation saying what is missing."""
    fields = schema.model_fields
    output = {key: value for key, value in answer.items() if key in fields}
    for key in fields:
        if key not in output and key in findings:
            output[key] = findings[key]
    if "confidence" in fields:
        output["confidence"] = confidence
    try:
        return schema.model_validate(output).model_dump(mode="json"), []
    except ValidationError as invalid:
        bad = {str(item["loc"][0]) for item in invalid.errors() if item["loc"]}
    # A value failing the schema (a model may break a limit its portable schema did not carry) is never
    # handed on as if checked: what the calls found takes its place, else it is left out.
    repaired = {key: value for key, value in output.items() if key not in bad}
    repaired.update(
        {key: findings[key] for key in bad if key in findings and findings[key] != output.get(key)}
    )
    try:
        return schema.model_validate(repaired).model_dump(mode="json"), []
    except ValidationError as still:
        failing = {str(item["loc"][0]) for item in still.errors() if item["loc"]}
    kept = {key: value for key, value in repaired.items() if key not in failing}
    return kept, [f"incomplete answer: {', '.join(sorted(bad | failing))} missing or invalid"]
