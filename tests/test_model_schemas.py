"""JSON schemas sent to model servers: compact forms accept what the original accepts, the portable form
drops what grammar servers choke on (``MASTER_AGENT_SCHEMA_MODE``), and what a server answers through
it is still checked against the full pydantic model on our side. The structured-output exchanges go
through the real openai client (recorded responses, ``tests/recordings/lending_underwriting.json``)."""

from __future__ import annotations

import json
from typing import Any, Literal

import httpx2
import jsonschema
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, ValidationError

from master_agent.domains.lending.workers import OPINION_PROMPT, UnderwritingOpinion
from master_agent.models.chat import describe_model_failure
from master_agent.models.schemas import (
    MAX_PORTABLE_ENUM,
    PORTABLE_DROPPED,
    compact_schema,
    lean_schema,
    openai_tool,
    portable_schema,
)
from master_agent.runtime.loop import shape_answer
from master_agent.settings import Settings
from tests.model_exchanges import Script, load_recordings

FACTS = "Credit score: 780. Pre-approved limit: Rs 2,00,000. Requested: Rs 1,00,000 over 24 months."


class Item(BaseModel):
    title: str = Field(min_length=1, description="A property named like the keyword.")
    count: int | None = Field(default=None, ge=0, le=10)


class Shape(BaseModel):
    code: str = Field(pattern=r"^[A-Z]{3}$", max_length=3)
    when: str | None = Field(default=None, json_schema_extra={"format": "date"})
    kind: Literal[tuple(f"k{i}" for i in range(MAX_PORTABLE_ENUM + 1))]  # type: ignore[valid-type]
    items: list[Item] = Field(max_length=5)


def keywords(schema: Any) -> set[str]:
    """Every key at any depth (property names included)."""
    if isinstance(schema, dict):
        return set(schema) | {key for value in schema.values() for key in keywords(value)}
    if isinstance(schema, list):
        return {key for value in schema for key in keywords(value)}
    return set()


def test_compact_schema_accepts_exactly_what_the_original_accepts() -> None:
    full = Shape.model_json_schema()
    compact = compact_schema(full)
    assert '"title": "Shape"' not in json.dumps(compact) and len(json.dumps(compact)) < len(json.dumps(full))
    assert "title" in compact["$defs"]["Item"]["properties"]  # the property named "title" stays
    assert compact["properties"]["when"]["type"] == ["string", "null"]
    good = {"code": "ABC", "when": None, "kind": "k3", "items": [{"title": "x", "count": None}]}
    bad = [
        {**good, "code": "abcd"},
        {**good, "items": [{"title": ""}]},
        {**good, "items": [{"title": "x", "count": 11}]},
        {**good, "kind": "zz"},
    ]
    for schema in (full, compact):
        jsonschema.validate(good, schema)
        for value in bad:
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(value, schema)


def test_portable_schema_drops_grammar_hazards_and_notes_them() -> None:
    portable = portable_schema(Shape.model_json_schema())
    assert not keywords(portable) & {*PORTABLE_DROPPED, "enum"} - {"title"}
    assert "title" in portable["$defs"]["Item"]["properties"]
    code = portable["properties"]["code"]
    assert (
        code["type"] == "string" and "maxLength 3" in code["description"] and "pattern" in code["description"]
    )
    assert "one of 65 values" in portable["properties"]["kind"]["description"]
    assert portable["properties"]["items"]["items"] == {"$ref": "#/$defs/Item"}
    lean = lean_schema(Shape.model_json_schema())
    assert "description" not in keywords(lean["$defs"]["Item"]["properties"]["title"])


def grammar_server(body: dict[str, Any]) -> Exception | None:
    """A server that compiles each tool schema into a grammar and dies on length limits, as
    llama-cpp-python's did on ``maxLength: 2000`` (the connection drops without an answer)."""
    if keywords([tool["function"]["parameters"] for tool in body.get("tools") or []]) & {
        "maxLength",
        "pattern",
    }:
        return httpx2.RemoteProtocolError("Server disconnected without sending a response.")
    return None


def opinion_model(settings: Settings, script: Script, mode: str) -> Any:
    local = settings.with_overrides(schema_mode=mode)
    return script.chat_model(local).with_structured_output(UnderwritingOpinion, method="function_calling")


PROMPT = [SystemMessage(content=OPINION_PROMPT), HumanMessage(content=FACTS)]


async def test_portable_mode_gets_an_opinion_from_a_server_that_crashes_on_max_length(
    settings: Settings,
) -> None:
    recorded = load_recordings("lending_underwriting")
    script = Script(["agree_approved"], refuse=grammar_server, recorded=recorded)
    opinion = await opinion_model(settings, script, "portable").ainvoke(PROMPT)
    assert isinstance(opinion, UnderwritingOpinion) and opinion.decision == "APPROVED"
    sent = script.requests[0]["tools"][0]["function"]["parameters"]
    assert sent["properties"]["reason"] == {"type": "string", "description": "(maxLength 2000)"}

    strict = Script(["agree_approved"], refuse=grammar_server, recorded=recorded)
    with pytest.raises(Exception) as failure:
        await opinion_model(settings, strict, "strict").ainvoke(PROMPT)
    assert (
        strict.requests[0]["tools"][0]["function"]["parameters"]["properties"]["reason"]["maxLength"] == 2000
    )
    assert "could not be reached" in describe_model_failure(failure.value)


async def test_an_answer_past_the_dropped_limit_is_refused_by_the_full_model(settings: Settings) -> None:
    script = Script(["reason_too_long"], recorded=load_recordings("lending_underwriting"))
    with pytest.raises(ValidationError, match="at most 2000 characters"):
        await opinion_model(settings, script, "portable").ainvoke(PROMPT)


def test_schema_mode_follows_the_endpoint_unless_set() -> None:
    hosted = Settings(model="openai:gpt-4o-mini", openai_api_key="sk-test")
    compatible = Settings(model="openai:qwen", openai_base_url="http://10.0.0.5:8000/v1")
    assert (hosted.model_schema_mode(), compatible.model_schema_mode()) == ("strict", "portable")
    assert Settings.from_env({"MASTER_AGENT_SCHEMA_MODE": "portable"}).model_schema_mode() == "portable"
    with pytest.raises(Exception, match="MASTER_AGENT_SCHEMA_MODE"):
        Settings.from_env({"MASTER_AGENT_SCHEMA_MODE": "loose"})


class Risk(BaseModel):
    risk: str
    likelihood: float = Field(ge=0, le=1)


class Plan(BaseModel):
    summary: str = Field(max_length=40)
    risks: list[Risk]
    confidence: float = 0.0


def test_a_final_answer_breaking_the_full_schema_is_never_handed_on_unchecked() -> None:
    answer = {"summary": "s" * 100, "risks": ["staff turnover"]}  # past maxLength; a string, not a Risk
    found = {"risks": [{"risk": "staff turnover", "likelihood": 0.3}]}
    data, limitations = shape_answer(Plan, answer, found, 0.7)
    assert "summary" not in data and data["risks"] == found["risks"]  # the calls' value replaces it
    assert limitations == ["incomplete answer: risks, summary missing or invalid"]
    data, limitations = shape_answer(Plan, {**answer, "summary": "ok"}, found, 0.7)
    assert data == {"summary": "ok", "risks": found["risks"], "confidence": 0.7} and limitations == []


def _item_tool(name: str, description: str, args_schema: Any = Item) -> StructuredTool:
    return StructuredTool.from_function(
        lambda **_: "ok", name=name, description=description, args_schema=args_schema
    )


def test_a_tools_openai_form_is_langchains_for_each_tool_of_one_argument_class() -> None:
    """Written once per argument class, name and description, each tool still gets its own form: two
    tools over ``Item`` differ by name and description, and a form changed by its caller is not what the
    next caller reads."""
    first, renamed, redescribed = (
        _item_tool("look", "Looks."),
        _item_tool("peek", "Looks."),
        _item_tool("look", "Peeks."),
    )
    for tool in (first, renamed, redescribed, _item_tool("look", "Looks.")):
        assert openai_tool(tool) == convert_to_openai_tool(tool)
    openai_tool(first)["function"]["parameters"]["properties"].clear()
    assert openai_tool(first) == convert_to_openai_tool(first)
    as_json = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert openai_tool(_item_tool("ask", "Asks.", as_json)) == convert_to_openai_tool(
        _item_tool("ask", "Asks.", as_json)
    )
