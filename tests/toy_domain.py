"""A made-up domain (city services) used to test the loop: the runtime must know nothing of retail."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel

from master_agent.capabilities import AgentSpec, TenantCapabilities, TenantRecord


class CityArgs(BaseModel):
    city_id: int


class AskArgs(BaseModel):
    question: str
    city_id: int


class MeasureOut(BaseModel):
    measurement: dict[str, Any]
    confidence: float


class Goal(BaseModel):
    goal: str


class Answer(BaseModel):
    measurement: dict[str, Any]
    confidence: float


CALLS: list[str] = []


async def measure(city_id: int) -> dict[str, Any]:
    CALLS.append(f"measure:{city_id}")
    return {"measurement": {"city_id": city_id, "queue_minutes": 12.5}, "confidence": 0.9}


async def linger(city_id: int) -> dict[str, Any]:
    await asyncio.sleep(5)
    return {"late": True}


async def explode(city_id: int) -> dict[str, Any]:
    raise RuntimeError("sensor offline")


def tools() -> dict[str, BaseTool]:
    made = [
        StructuredTool.from_function(
            coroutine=fn, name=fn.__name__, description=fn.__name__, args_schema=CityArgs
        )
        for fn in (measure, linger, explode)
    ]
    return {tool.name: tool for tool in made}


def spec(name: str, tool_names: list[str], **extra: Any) -> AgentSpec:
    return AgentSpec(
        name=name,
        description=f"{name} agent",
        system_prompt=f"You are {name}.",
        input_schema=AskArgs,
        output_schema=Answer,
        tools=tool_names,
        **extra,
    )


def capabilities(master: AgentSpec, sub_agents: list[AgentSpec]) -> TenantCapabilities:
    return TenantCapabilities(
        tenant=TenantRecord(tenant_id="demo-retail", name="toy", tier="enterprise", capability_version=1),
        master=master,
        sub_agents={s["name"]: s for s in sub_agents},
        tools=tools(),
    )
