"""Evolution tools an agent spec may list: search village knowledge, deploy a playbook, schedule the
tracking of a solution's outcome. They act for the tenant whose graph they were built into."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from master_agent.errors import InputError, ToolInputError
from master_agent.evolution.context import EvolutionContext
from master_agent.evolution.outcomes import schedule_checks
from master_agent.evolution.playbooks import PlaybookRefused, PlaybookSpec, deploy_playbook

DEPLOY_TOOL = "deploy_playbook"
#: The key a deployment adds to an agent's findings.
DEPLOYED_KEY = "deployed_playbook"


class KnowledgeSearchArgs(BaseModel):
    problem: str = Field(
        min_length=1, max_length=2000, description="The problem to find proven patterns for."
    )
    limit: int = Field(default=3, ge=1, le=10)


class DeployPlaybookArgs(BaseModel):
    playbook: PlaybookSpec


class TrackOutcomeArgs(BaseModel):
    expected_outcome: dict[str, Any] = Field(
        description="The solution's expected outcome with its metric_query, baseline, expected and timeline_days."
    )


def _solution_id(config: RunnableConfig) -> str | None:
    value = (config.get("configurable") or {}).get("solution_id")
    return str(value) if value else None


def build_evolution_tools(evolution: EvolutionContext, tenant_id: str) -> dict[str, BaseTool]:
    async def search_village_knowledge(problem: str, limit: int = 3) -> dict[str, Any]:
        found = await evolution.knowledge.search(tenant_id, problem, limit=limit)
        return {"patterns": [match.model_dump(mode="json") for match in found]}

    async def deploy_playbook_tool(playbook: PlaybookSpec, config: RunnableConfig) -> dict[str, Any]:
        try:
            deployed = await deploy_playbook(
                evolution, tenant_id, playbook.model_dump(mode="json"), solution_id=_solution_id(config)
            )
        except (PlaybookRefused, InputError) as error:
            raise ToolInputError(str(error)) from None
        return {
            DEPLOYED_KEY: {
                "playbook_id": str(deployed.playbook_id),
                "version": deployed.version,
                "status": deployed.status,
                "schedule": deployed.schedule,
            }
        }

    async def schedule_outcome_tracking(
        expected_outcome: dict[str, Any], config: RunnableConfig
    ) -> dict[str, Any]:
        solution_id = _solution_id(config)
        if solution_id is None:
            raise ToolInputError("no solution to track: only runs of a stored goal (CLI or /api/cs) have one")
        try:
            checks = await schedule_checks(
                evolution, tenant_id, solution_id, {"expected_outcome": expected_outcome}
            )
        except InputError as error:
            raise ToolInputError(str(error)) from None
        return {"outcome_checks": [str(check) for check in checks]}

    tools = [
        StructuredTool.from_function(
            coroutine=search_village_knowledge,
            name="search_village_knowledge",
            description="Proven patterns (yours and shared ones) for a problem, with confidence and evidence.",
            args_schema=KnowledgeSearchArgs,
        ),
        StructuredTool.from_function(
            coroutine=deploy_playbook_tool,
            name=DEPLOY_TOOL,
            description="Validate, store and schedule a playbook (its cron trigger runs it for real).",
            args_schema=DeployPlaybookArgs,
        ),
        StructuredTool.from_function(
            coroutine=schedule_outcome_tracking,
            name="schedule_outcome_tracking",
            description="Schedule measurements of the solution's metric at its checkpoints and final day.",
            args_schema=TrackOutcomeArgs,
        ),
    ]
    return {tool.name: tool for tool in tools}
