"""The first phase: intake, the intent (which playbook), the runtime target, the constraints, the playbook's
phases and the budgets."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from master_agent.capabilities import load_tenant
from master_agent.meta.broker import StateBroker
from master_agent.meta.design import BUILD_REQUEST
from master_agent.meta.graph.request import GLOBAL, MetaRequest, _constrain, parse_request
from master_agent.meta.graph.state import MetaState, _log, _resources, _tenant, _trace
from master_agent.meta.playbooks import (
    INTENTS,
    PLAYBOOKS,
    STANDARD_GLOBAL,
    STANDARD_ROLES,
    ConstraintPack,
    Intent,
)
from master_agent.meta.roles import Spent
from master_agent.meta.targets import find_target, system_artifacts
from master_agent.runtime.tenant_agents import agent_catalogue

_INTENT_WORDS: list[tuple[Intent, str]] = [
    ("incident", r"\b(incident|outage|paged|sev[ -]?\d|on[- ]call)\b"),
    ("debug", r"\b(debug|fix|broken|bug|failing|fails|crash(es)?|wrong)\b"),
    ("optimize", r"\b(optimi[sz]e|faster|cheaper|reduce (latency|cost)|improve)\b"),
    ("harden", r"\b(harden|secure|reliab|robust|guardrails?)\b"),
    ("evaluate", r"\b(evaluate|assess|benchmark|score|test)\b"),
]


#: Why ``intent_of`` picked a build when the words named no playbook and asked for no system.
DEFAULT = "default"
#: A request that asks for nothing else needs this many words a dictionary knows to say what is wanted.
MIN_WORDS = 2
_SYSTEM_NOUN = re.compile(r"\b(?:agents?|system|team|pipeline|workflow|bot|assistant)\b", re.I)


def says_what(text: str) -> bool:
    """Whether a request that names no playbook still says what is wanted: it names a system, declares
    an output, or has at least ``MIN_WORDS`` words WordNet knows ("Route invoices by amount" does;
    "x", "asdf" or "hello" do not, and are asked about rather than built)."""
    from master_agent.capabilities.tools.lexicon import wordnet
    from master_agent.meta.requirements import declared_fields

    if _SYSTEM_NOUN.search(text) or declared_fields(text):
        return True
    reader = wordnet()
    known = [w for w in re.findall(r"[a-z]{2,}", text.lower()) if reader.synsets(w)]
    return len(known) >= MIN_WORDS


_WANTS_SYSTEM = re.compile(
    r"\b(?:want|need|would like|put together|build|create|make|design|set up)\b.*"
    r"\b(?:agents?|system|team|pipeline|workflow)\b",
    re.I,
)


async def intake(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = parse_request(state["request"])
    resources = await _resources(config)
    thread_id = (config.get("configurable") or {}).get("thread_id")
    broker = await StateBroker.open_request(
        resources.database.pool,
        _tenant(config),
        request.text,
        resources.evolution.clock.now,
        thread_id=str(thread_id) if thread_id else None,
    )
    update: dict[str, Any] = {
        "request": request.model_dump(mode="json"),
        "request_id": str(broker.request_id),
        "status": "running",
        "artifacts": {},
        "loops": {},
        "review": [],
        "warnings": [],
        "left_undone": [],
        "active_promotions": [],
        "gates": {},
        "history": [],
        "routing_trace": [],
    }
    update["history"] = await _log({**state, **update}, config, "intake", "accepted", request.text[:200])  # type: ignore[typeddict-item]
    return update


def intent_of(text: str) -> tuple[Intent, str]:
    """The playbook a request's words ask for: a build when it opens by asking for a system to be
    built; otherwise the intent named first in the text (a build only when none is named)."""
    if BUILD_REQUEST.match(text):
        return "build", "asks for a system to be built"
    # The first sentence says what is asked; the rest describes the system ("... names a linked outage
    # ticket" in a build request is no incident).
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0]
    named = [(m.start(), name) for name, pattern in _INTENT_WORDS if (m := re.search(pattern, first, re.I))]
    if named:
        return min(named)[1], "named in its first sentence"
    if _WANTS_SYSTEM.search(first):
        return "build", "its first sentence asks for a system"
    found = [
        (match.start(), name, pattern)
        for name, pattern in _INTENT_WORDS
        if (match := re.search(pattern, text, re.I)) is not None
    ]
    if not found:
        return "build", DEFAULT
    _, intent, pattern = min(found)
    return intent, f"matched {pattern}"


async def classify_intent(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    if request.playbook is not None:
        intent, why = request.playbook, "asked for"
    else:
        intent, why = intent_of(request.text)
    if why == DEFAULT and not request.artifacts and not await asyncio.to_thread(says_what, request.text):
        # "meta run x": nothing says what to build or work on; asked, never built on a guess.
        problem = (
            f"the request {request.text[:80]!r} does not say what is wanted: describe the system "
            "('Build an agent system that ...') or name a playbook and its system ('Debug the ticket desk')"
        )
        if not request.autonomous:
            answer = interrupt(
                {
                    "kind": "meta_request",
                    "request_id": state["request_id"],
                    "questions": [problem],
                    "answers": [],
                }
            )
            text = str(answer.get("text") if isinstance(answer, dict) else answer or "").strip()
            if text and (intent_of(text)[1] != DEFAULT or await asyncio.to_thread(says_what, text)):
                request = request.model_copy(update={"text": text[:5000]})
                intent, why = intent_of(text)
                problem = ""
        if problem:
            return {
                "intent": intent,
                "status": "failed",
                "error": problem,
                "routing_trace": _trace(state, "classify_intent", "unclear", intent=intent, target=None),
            }
    assert intent in INTENTS
    update: dict[str, Any] = {"intent": intent, "request": request.model_dump(mode="json")}
    if intent != "build" and "SystemSpec" not in request.artifacts:
        # Work on an existing system: never a build in its place.
        resources = await _resources(config)
        pool = resources.database.pool
        target = await find_target(pool, _tenant(config), intent, request.text, request.name)
        if target.system is None and target.candidates and not request.autonomous:
            answer = interrupt(
                {
                    "kind": "meta_target",
                    "request_id": state["request_id"],
                    "questions": [target.problem],
                    "answers": list(target.candidates),
                }
            )
            chosen = str(answer.get("system") if isinstance(answer, dict) else answer)
            target = await find_target(pool, _tenant(config), intent, request.text, chosen)
        if target.system is None or target.request_id is None:
            return {
                **update,
                "status": "failed",
                "error": target.problem,
                "routing_trace": _trace(state, "classify_intent", why, intent=intent, target=None),
            }
        artifacts = await system_artifacts(pool, _tenant(config), target.request_id)
        request = request.model_copy(
            update={"artifacts": {**artifacts, **request.artifacts}, "name": target.system}
        )
        update["request"] = request.model_dump(mode="json")
        why = f"{why}; works on {target.system}"
    update["routing_trace"] = _trace(state, "classify_intent", why, intent=intent)
    return update


async def determine_runtime_target(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    given = request.artifacts.get("SystemSpec", {}).get("runtime_target")
    if request.runtime is not None:
        target, why = request.runtime, "asked for"
    elif given:
        target, why = given, "the given SystemSpec's"
    elif re.search(r"\bhybrid\b", request.text, re.I):
        target, why = "hybrid", "the request names a hybrid"
    elif re.search(r"\b(deep ?agents?|recursive|open-ended|unknown number of steps)\b", request.text, re.I):
        target, why = "deepagent", "open-ended work: recursion zone"
    else:
        target, why = "langgraph", "enumerable paths: graph zone"
    return {
        "runtime_target": target,
        "routing_trace": _trace(state, "determine_runtime_target", why, target=target),
    }


async def gather_constraints(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    resources = await _resources(config)
    tenant = await load_tenant(resources.database.pool, _tenant(config))
    catalogue = await agent_catalogue(resources, tenant)
    pack = ConstraintPack(
        tool_constraints={"available": sorted(catalogue.tools), "tables": list(catalogue.tables or ())}
    )
    _constrain(pack, request.constraints)
    return {"constraint_pack": pack.model_dump(mode="json")}


async def select_playbook(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    playbook = PLAYBOOKS[state["intent"]]  # type: ignore[index]
    missing = [name for name in playbook.requires if name not in request.artifacts]
    update: dict[str, Any] = {
        "playbook": playbook.name,
        "phases": [phase.model_dump() for phase in playbook.phases],
        "phase_index": 0,
    }
    if missing:
        update["status"] = "failed"
        update["left_undone"] = [f"the {playbook.name} playbook needs {', '.join(missing)}"]
    update["history"] = await _log(
        state, config, "select_playbook", playbook.name, "missing: " + ", ".join(missing) if missing else "ok"
    )
    return update


async def allocate_budgets(state: MetaState, config: RunnableConfig) -> dict[str, Any]:
    request = MetaRequest.model_validate(state["request"])
    per_role = {role: budget.model_dump() for role, budget in STANDARD_ROLES.items()}
    whole = STANDARD_GLOBAL.model_dump()
    for role, caps in request.budgets.items():
        (whole if role == GLOBAL else per_role[role]).update(caps)
    return {
        "budgets": {
            "global": whole,
            "per_role": per_role,
            "spent": {role: Spent().model_dump() for role in per_role},
            "reallocated": [],
        }
    }
