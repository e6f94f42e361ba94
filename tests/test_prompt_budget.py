"""The prompt budget: what gives way, in which order, and that every tool call sent stays answered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from master_agent.errors import ConfigError, PromptBudgetError
from master_agent.models.budget import MIN_TOOL_CHARS, estimate_tokens, fit_prompt, make_token_counter
from master_agent.runtime.context import compact_context_box, new_context_box, render_context_box
from master_agent.settings import Settings


def turn(n: int, result: str) -> list[AnyMessage]:
    call = {"name": "measure", "args": {"city_id": n}, "id": f"c{n}", "type": "tool_call"}
    return [AIMessage(content="", tool_calls=[call]), ToolMessage(content=result, tool_call_id=f"c{n}")]


def tokens(systems: list[str], messages: list[AnyMessage]) -> int:
    return fit_prompt(systems, messages, budget=10**9, count=estimate_tokens).tokens


def answered(messages: list[AnyMessage]) -> bool:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return calls == results


def test_a_prompt_within_budget_is_sent_as_it_is() -> None:
    history = [HumanMessage(content="goal"), *turn(1, "x" * 500)]
    fitted = fit_prompt(["system"], history, budget=10_000, count=estimate_tokens)
    assert fitted.trimmed == () and fitted.messages[1:] == history


def test_older_tool_results_give_way_first_and_the_latest_is_kept() -> None:
    history = [HumanMessage(content="goal"), *turn(1, "a" * 9000), *turn(2, "b" * 9000), *turn(3, "c" * 3000)]
    full = tokens(["system"], history)
    fitted = fit_prompt(["system"], history, budget=full - 3000, count=estimate_tokens)
    sent = fitted.messages
    assert fitted.tokens <= full - 3000
    assert "trimmed" in str(sent[3].content) and "trimmed" in str(sent[5].content)
    assert sent[7].content == "c" * 3000  # the latest turn's result, whole
    assert str(sent[3].content).startswith("a" * MIN_TOOL_CHARS)
    assert answered(sent[1:])
    assert history[2].content == "a" * 9000  # the caller's messages are untouched


def test_then_the_context_box_then_the_oldest_turns() -> None:
    box = new_context_box("goal", {"notes": "n" * 3000}, {"max_iterations": 5})
    systems = [render_context_box(box), render_context_box(compact_context_box(box))]
    history = [HumanMessage(content="goal"), *turn(1, "a" * 600), *turn(2, "b" * 600), *turn(3, "c" * 600)]
    small = tokens(systems[1:], history[:1] + history[5:])
    fitted = fit_prompt(systems, history, budget=small + 50, count=estimate_tokens)
    assert fitted.messages[0].content == systems[1]
    assert "context box compacted" in fitted.trimmed
    assert any("oldest turns left out" in item for item in fitted.trimmed)
    assert fitted.messages[1].content == "goal"  # the goal always stays
    assert answered(fitted.messages[1:]) and fitted.tokens <= small + 50


def test_over_budget_at_its_smallest_the_prompt_is_refused_naming_the_budget() -> None:
    history = [HumanMessage(content="g" * 30_000)]
    with pytest.raises(PromptBudgetError, match="MASTER_AGENT_PROMPT_TOKENS=1000") as refused:
        fit_prompt(["system", "sys"], history, budget=1000, count=estimate_tokens, fixed_tokens=200)
    assert refused.value.parts == {"system prompt": 5, "tool schemas": 200, "goal and latest turn": 10004}
    assert refused.value.tokens == sum(refused.value.parts.values())


def test_compact_box_keeps_keys_and_cuts_long_values() -> None:
    box = new_context_box("Raise Store 5's rate", {"long": "x" * 5000, "short": 3}, {})
    box["blockers"] = [f"blocker {i}" for i in range(10)]
    compact = compact_context_box(box)
    assert set(compact["data"]["context"]) == {"long", "short"} and compact["data"]["context"]["short"] == 3
    assert len(compact["data"]["context"]["long"]) < 300
    assert compact["blockers"] == ["blocker 7", "blocker 8", "blocker 9"]
    assert compact["entities"] == box["entities"]


def test_tokenizer_settings(tmp_path: Path) -> None:
    local = Settings(model="openai:gemma", openai_base_url="http://127.0.0.1:8080/v1")
    assert make_token_counter(local) is estimate_tokens
    with pytest.raises(ConfigError, match="MASTER_AGENT_TOKENIZER"):
        make_token_counter(local.with_overrides(tokenizer=f"file:{tmp_path / 'missing.json'}"))


def test_model_timeouts_and_retries_suit_the_server() -> None:
    hosted = Settings(model="openai:gpt-4o-mini", openai_api_key="sk-test")
    local = Settings(model="openai:gemma", openai_base_url="http://localhost:8080/v1")
    assert (hosted.model_timeout_s(), hosted.model_max_retries()) == (60.0, 3)
    assert (local.model_timeout_s(), local.model_max_retries()) == (300.0, 1)
    chosen = local.with_overrides(openai_timeout_s=20, openai_max_retries=0)
    assert (chosen.model_timeout_s(), chosen.model_max_retries()) == (20.0, 0)
    with pytest.raises(ConfigError, match="MASTER_AGENT_MAX_TOKENS"):
        Settings.from_env({"MASTER_AGENT_MAX_TOKENS": "0"})


def test_a_json_result_gives_way_as_json_keeping_its_keys_and_types() -> None:
    envelope = {
        "status": "success",
        "data": {"statement": "s" * 2000, "risks": [{"risk": "r" * 500, "likelihood": 0.3}] * 3, "n": 4},
        "note": "配件附加率",
    }
    history = [
        HumanMessage(content="goal"),
        *turn(1, json.dumps(envelope, ensure_ascii=False)),
        *turn(2, "latest"),
    ]
    full = tokens(["system"], history)
    fitted = fit_prompt(["system"], history, budget=full - 500, count=estimate_tokens)
    shrunk = json.loads(str(fitted.messages[3].content))
    assert shrunk["status"] == "success" and shrunk["data"]["n"] == 4
    assert [set(risk) for risk in shrunk["data"]["risks"]] == [{"risk", "likelihood"}] * 3
    assert shrunk["data"]["statement"].endswith("…") and len(shrunk["data"]["statement"]) < 2000
    assert "_trimmed" in shrunk and fitted.tokens <= full - 500
    assert "配件附加率" in str(fitted.messages[3].content)  # not escaped into six characters each
