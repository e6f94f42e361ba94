"""A domain pack for the crash test: the retail pack, with every tool completion recorded in a table
and one tool deep inside a sub-agent slowed down so the test can kill the process while it runs.

Loaded into the CLI subprocess through ``MASTER_AGENT_DOMAIN_PACKS=tests.durability_pack``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg
from langchain_core.tools import BaseTool, StructuredTool
from psycopg_pool import AsyncConnectionPool

from master_agent.capabilities import DomainPack, register_domain_pack
from master_agent.capabilities.tools import ToolContext
from master_agent.domains.retail import RETAIL

TENANT = "crash-shop"
SLOW_TOOL = "staff_attach_correlations"  # runs in data_analysis, under research: depth 2
SLOW_SECONDS = 4.0
#: Tools that fail once, as a dropped database connection fails them (the outage test adds names).
LOSE_CONNECTION_ONCE: set[str] = set()

CREATE_RUNS = """
CREATE TABLE IF NOT EXISTS crash_tool_runs (
    id bigserial PRIMARY KEY, tool text NOT NULL, phase text NOT NULL, args jsonb NOT NULL,
    at timestamptz NOT NULL DEFAULT now()
)
"""


def _wrap(tool: BaseTool, pool: AsyncConnectionPool[Any]) -> BaseTool:
    async def run(**kwargs: Any) -> Any:
        args = json.dumps(kwargs, default=str, sort_keys=True)
        if tool.name in LOSE_CONNECTION_ONCE:
            LOSE_CONNECTION_ONCE.discard(tool.name)
            raise psycopg.errors.AdminShutdown("terminating connection due to administrator command")
        if tool.name == SLOW_TOOL:
            async with pool.connection() as conn:
                await conn.execute(
                    "INSERT INTO crash_tool_runs (tool, phase, args) VALUES (%s, 'started', %s)",
                    (tool.name, args),
                )
            await asyncio.sleep(SLOW_SECONDS)
        result = await tool.ainvoke(kwargs)
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO crash_tool_runs (tool, phase, args) VALUES (%s, 'completed', %s)",
                (tool.name, args),
            )
        return result

    return StructuredTool.from_function(
        coroutine=run, name=tool.name, description=tool.description, args_schema=tool.args_schema
    )


def build_tools(context: ToolContext) -> dict[str, BaseTool]:
    return {name: _wrap(tool, context.pool) for name, tool in RETAIL.build_tools(context).items()}


async def install(pool: AsyncConnectionPool[Any], tenant_id: str) -> None:
    await RETAIL.install(pool, TENANT)
    async with pool.connection() as conn:
        await conn.execute(CREATE_RUNS)
        await conn.execute("UPDATE tenants SET domain = 'retail-crash' WHERE tenant_id = %s", (TENANT,))


register_domain_pack(
    DomainPack(
        name="retail-crash",
        master=RETAIL.master,
        sub_agents=RETAIL.sub_agents,
        build_tools=build_tools,
        install=install,
        hidden_columns=RETAIL.hidden_columns,
    )
)
