"""Query handlers: questions the front door answers itself, without running an agent.

A registry by query kind (seed 003 "Query Handler System"); domain packs add kinds through
``DomainPack.query_handlers``. Every answer says what it read.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, Field

from master_agent.capabilities.spec import DataMetric
from master_agent.capabilities.tools.context import ToolContext
from master_agent.capabilities.tools.sql import ReadOnlySql
from master_agent.errors import ToolInputError
from master_agent.evolution.clock import Clock
from master_agent.evolution.knowledge import KnowledgeStore
from master_agent.models.offline import OfflinePlanner
from master_agent.routing.discovery import AgentCard


class QueryAnswer(BaseModel):
    """What a query handler found: the reply text and the data it came from."""

    text: str
    data: dict[str, Any] = Field(default_factory=dict)
    handler: str
    answered: bool = True
    """False when the handler could not answer (the reply says why)."""


@dataclass(frozen=True, kw_only=True)
class QueryRequest:
    tenant_id: str
    message: str
    entities: dict[str, Any]
    cards: Sequence[AgentCard]
    pool: AsyncConnectionPool[Any]
    tool_context: ToolContext
    knowledge: KnowledgeStore
    clock: Clock
    model: BaseChatModel
    metrics: Sequence[DataMetric] = field(default_factory=tuple)


QueryHandler = Callable[[QueryRequest], Awaitable[QueryAnswer]]


async def list_agents(request: QueryRequest) -> QueryAnswer:
    runnable = [card for card in request.cards if card.runnable]
    parts = [card for card in request.cards if not card.runnable]
    lines = [f"- {card.name} ({card.domain}): {card.description}" for card in runnable]
    if parts:
        lines.append(
            "Working as their parts: "
            + ", ".join(f"{card.name} ({card.description.rstrip('.')})" for card in parts)
        )
    text = (
        "Your agents:\n" + "\n".join(lines)
        if runnable
        else "You have no agents yet; describe one to create it."
    )
    return QueryAnswer(
        text=text,
        handler="list_agents",
        data={
            "agents": [
                {
                    "name": c.name,
                    "description": c.description,
                    "domain": c.domain,
                    "skills": list(c.skills),
                    "runnable": c.runnable,
                    "source": c.source,
                }
                for c in request.cards
            ]
        },
    )


LATEST_OUTCOMES = """
SELECT s.solution_id::text AS solution_id, s.goal, s.status, s.created_at,
       l.success, l.expected_outcome, l.actual_outcome, l.confidence_delta, l.measured_at,
       (SELECT json_agg(json_build_object('day', c.checkpoint_day, 'status', c.status, 'expected', c.expected,
                                          'measured', c.measured) ORDER BY c.checkpoint_day)
        FROM outcome_checks c WHERE c.solution_id = s.solution_id) AS checks
FROM solutions s LEFT JOIN solution_learnings l ON l.solution_id = s.solution_id
WHERE s.tenant_id = %(tenant_id)s
ORDER BY s.created_at DESC LIMIT 3
"""


async def goal_outcomes(request: QueryRequest) -> QueryAnswer:
    async with request.pool.connection() as conn:
        rows = await (await conn.execute(LATEST_OUTCOMES, {"tenant_id": request.tenant_id})).fetchall()
    if not rows:
        return QueryAnswer(
            text="No goal has been solved for you yet, so there is no outcome to report.",
            handler="outcome",
            data={"solutions": []},
        )
    lines = []
    for row in rows:
        checks = row["checks"] or []
        measured = [c for c in checks if c["status"] == "measured"]
        if row["success"] is not None:
            verdict = "met its expected outcome" if row["success"] else "fell short of its expected outcome"
        elif measured:
            verdict = f"{len(measured)} of {len(checks)} outcome checks measured so far"
        elif checks:
            verdict = f"{len(checks)} outcome checks scheduled, none measured yet"
        else:
            verdict = "no playbook deployed, so no outcome is measured"
        lines.append(f'- "{row["goal"]}" ({row["status"]}): {verdict}.')
    return QueryAnswer(
        text="Your latest goals:\n" + "\n".join(lines),
        handler="outcome",
        data={
            "solutions": [
                {
                    **row,
                    "created_at": row["created_at"].isoformat(),
                    "measured_at": row["measured_at"].isoformat() if row["measured_at"] else None,
                }
                for row in rows
            ]
        },
    )


async def village_knowledge(request: QueryRequest) -> QueryAnswer:
    found = await request.knowledge.search(request.tenant_id, request.message, limit=3)
    if not found:
        return QueryAnswer(
            text="Village knowledge holds nothing on that yet.", handler="knowledge", data={"patterns": []}
        )
    lines = [f"- {p.pattern_name}: {p.description} (confidence {p.confidence:.0%})" for p in found]
    return QueryAnswer(
        text="Village knowledge says:\n" + "\n".join(lines),
        handler="knowledge",
        data={"patterns": [p.model_dump(mode="json") for p in found]},
    )


_N_UNITS = re.compile(r"\b(last|past|previous)\s+(\d+)\s+(day|week|month)s?\b", re.I)
_ONE_UNIT = re.compile(r"\b(last|previous|this)\s+(week|month|quarter|year)\b", re.I)


def question_window(text: str, end: datetime) -> tuple[datetime, datetime, str]:
    """The time window a question names, as [start, end) ending no later than ``end``; the whole
    history when it names none."""
    day = end.replace(hour=0, minute=0, second=0, microsecond=0)
    counted = _N_UNITS.search(text)
    if counted:
        count, unit = int(counted.group(2)), counted.group(3).lower()
        days = count * {"day": 1, "week": 7, "month": 30}[unit]
        return end - timedelta(days=days), end, f"the last {count} {unit}s"
    named = _ONE_UNIT.search(text)
    if named:
        which, unit = named.group(1).lower(), named.group(2).lower()
        if unit == "week":
            start = day - timedelta(days=day.weekday())
            if which == "this":
                return start, end, "this week"
            return start - timedelta(days=7), start, "last full week"
        if unit == "month":
            start = day.replace(day=1)
            if which == "this":
                return start, end, "this month"
            previous = (start - timedelta(days=1)).replace(day=1)
            return previous, start, f"last full month ({previous:%B %Y})"
        if unit == "quarter":
            start = day.replace(month=3 * ((day.month - 1) // 3) + 1, day=1)
            if which == "this":
                return start, end, "this quarter"
            previous = (start - timedelta(days=1)).replace(day=1)
            previous = previous.replace(month=3 * ((previous.month - 1) // 3) + 1)
            return previous, start, "last full quarter"
        start = day.replace(month=1, day=1)
        if which == "this":
            return start, end, "this year"
        return start.replace(year=start.year - 1), start, f"last full year ({start.year - 1})"
    if re.search(r"\byesterday\b", text, re.I):
        return day - timedelta(days=1), day, "yesterday"
    if re.search(r"\btoday\b", text, re.I):
        return day, end, "today"
    return datetime(1970, 1, 1, tzinfo=UTC), end, "all history"


def _metric_for(text: str, metrics: Sequence[DataMetric]) -> DataMetric | None:
    lowered = text.lower()
    best: tuple[int, DataMetric] | None = None
    for metric in metrics:
        for alias in (metric.name, *metric.aliases):
            if alias.lower() in lowered and (best is None or len(alias) > best[0]):
                best = (len(alias), metric)
    return best[1] if best else None


def _format(value: Any, unit: str) -> str:
    if value is None:
        return "no value (no rows in the window)"
    if unit == "ratio":
        return f"{float(value):.1%}"
    if unit == "currency":
        return f"{float(value):,.2f}"
    return f"{float(value):,.0f}" if float(value).is_integer() else f"{float(value):,.2f}"


async def data_question(request: QueryRequest) -> QueryAnswer:
    """One read-only SQL query through the SQL tool: the number, the query and the window."""
    metric = _metric_for(request.message, request.metrics)
    if metric is None:
        names = ", ".join(m.name for m in request.metrics) or "none"
        return QueryAnswer(
            text=f"I can answer questions about these figures of your data: {names}. Which one do you mean?",
            handler="data",
            answered=False,
        )
    sql = ReadOnlySql(request.tool_context)
    try:
        # The window ends where the data does when it ends before today (a demo's history, a late load).
        span = await sql.query(f"SELECT max({metric.time_column}) AS data_end FROM {metric.table}")
        data_end = span.rows[0]["data_end"] if span.rows else None
        now = request.clock.now()
        end = now
        if data_end:
            last = datetime.fromisoformat(str(data_end))
            last = last if last.tzinfo else last.replace(tzinfo=UTC)
            end = min(now, (last + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0))
        start, stop, window = question_window(request.message, end)
        filters = [f"{metric.time_column} >= %(start)s", f"{metric.time_column} < %(end)s"]
        params: dict[str, Any] = {"start": start, "end": stop}
        scope = []
        for entity, column in metric.filters.items():
            if entity in request.entities:
                filters.append(f"{column} = %({entity})s")
                params[entity] = request.entities[entity]
                scope.append(f"{entity.removesuffix('_id')} {request.entities[entity]}")
        statement = (
            f"SELECT {metric.expression} AS value, count(*) AS observations FROM {metric.table} "
            f"WHERE {' AND '.join(filters)}"
        )
        result = await sql.query(statement, params)
    except ToolInputError as error:
        return QueryAnswer(
            text=f"I could not read that from your data: {error}", handler="data", answered=False
        )
    row = result.rows[0] if result.rows else {"value": None, "observations": 0}
    where = f" for {', '.join(scope)}" if scope else ""
    text = (
        f"The {metric.name}{where} over {window} ({start:%Y-%m-%d} to {stop - timedelta(seconds=1):%Y-%m-%d}) "
        f"was {_format(row['value'], metric.unit)}, from {row['observations']} {metric.observation_noun}.\n"
        f"Query: {statement}\nParameters: { ({k: str(v) for k, v in params.items()}) }"
    )
    return QueryAnswer(
        text=text,
        handler="data",
        data={
            "metric": metric.name,
            "value": row["value"],
            "observations": row["observations"],
            "window": {"label": window, "start": start.isoformat(), "end": stop.isoformat()},
            "sql": statement,
            "params": {k: str(v) for k, v in params.items()},
        },
    )


OTHER_PROMPT = """You answer a business user's question about their account in a few sentences. You know
only what is below; when it does not hold the answer, say so plainly.\n\n{facts}"""


async def other_question(request: QueryRequest) -> QueryAnswer:
    """Questions no handler knows: the model answers from what the front door knows; the offline
    planner cannot, and says what can be asked instead."""
    kinds = (
        "the agents you have, how a goal turned out, what village knowledge says, and figures of your data"
    )
    if isinstance(request.model, OfflinePlanner):
        return QueryAnswer(
            text=f"I have no handler for that question, and the offline model cannot answer free questions. I can "
            f"answer questions about {kinds}.",
            handler="other",
            answered=False,
        )
    facts = "Agents: " + "; ".join(f"{c.name}: {c.description}" for c in request.cards)
    reply = await request.model.ainvoke(
        [SystemMessage(content=OTHER_PROMPT.format(facts=facts)), HumanMessage(content=request.message)]
    )
    return QueryAnswer(text=str(reply.content), handler="other")


BUILT_IN_HANDLERS: Mapping[str, QueryHandler] = {
    "list_agents": list_agents,
    "outcome": goal_outcomes,
    "knowledge": village_knowledge,
    "data": data_question,
    "other": other_question,
}
