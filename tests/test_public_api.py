"""Public faces: every package's ``__all__`` names what it exports, and what models see is snapshotted."""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

from master_agent.capabilities import TenantCapabilities, TenantRecord
from master_agent.capabilities.tools import ToolContext
from master_agent.domains.retail import RETAIL
from master_agent.runtime.context import new_context_box
from master_agent.runtime.loop import LoopLimits, sub_agent_tool_schema
from master_agent.runtime.turn_prompt import system_prompt
from master_agent.settings import Settings

PACKAGES = [
    "master_agent",
    "master_agent.capabilities",
    "master_agent.capabilities.tools",
    "master_agent.domains",
    "master_agent.evolution",
    "master_agent.models",
    "master_agent.runtime",
    "master_agent.runtime.middleware",
    "master_agent.storage",
]
SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    # dir(), not vars(): a package may load a public name on first use (PEP 562 ``__getattr__``).
    public = {
        key
        for key in dir(module)
        if not key.startswith("_") and not isinstance(getattr(module, key), type(module))
    }
    assert exported == public - {"annotations"}


def _check_snapshot(name: str, value: Any) -> None:
    path = SNAPSHOTS / name
    text = json.dumps(value, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.write_text(text)
    assert path.exists(), f"no snapshot {name}; create it with UPDATE_SNAPSHOTS=1"
    assert path.read_text() == text, f"{name} changed; rerun with UPDATE_SNAPSHOTS=1 and review the diff"


def _retail_tools() -> dict[str, Any]:
    context = ToolContext(pool=None, database_uri="", tenant_id="t", data_schema=None, settings=Settings())  # type: ignore[arg-type]
    return RETAIL.build_tools(context)


def test_tool_schemas_the_retail_agents_see() -> None:
    tools = _retail_tools()
    seen: dict[str, list[Any]] = {}
    for spec in [RETAIL.master, *RETAIL.sub_agents.values()]:
        schemas = []
        for name in spec["tools"]:
            if name in tools:
                schemas.append(convert_to_openai_tool(tools[name]))
            else:
                schemas.append(sub_agent_tool_schema(RETAIL.sub_agents[name]))
        seen[spec["name"]] = schemas
    _check_snapshot("retail_tool_schemas.json", seen)


def test_master_system_prompt() -> None:
    capabilities = TenantCapabilities(
        tenant=TenantRecord(tenant_id="t", name="t", tier="enterprise", capability_version=1),
        master=RETAIL.master,
        sub_agents=RETAIL.sub_agents,
        tools=_retail_tools(),
    )
    limits = LoopLimits(max_depth=5, max_iterations=10, subagent_timeout_s=300)
    goal = "Increase Store 5's accessory attach rate by 20% within 60 days"
    box = new_context_box(goal, {}, {"max_iterations": 10, "depth": 0, "max_depth": 5})
    prompt = system_prompt(
        capabilities.master, 0, limits.max_iterations, {"goal": goal, "max_iterations": 10}, box
    )
    _check_snapshot("master_system_prompt.json", prompt.splitlines())
