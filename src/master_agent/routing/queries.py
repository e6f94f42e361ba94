"""Query handlers: questions the front door answers itself, without running an agent.

A registry by query kind (seed 003 "Query Handler System"); domain packs add kinds through
``DomainPack.query_handlers``. Every answer says what it read.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, Field

from master_agent.capabilities.money import money
from master_agent.capabilities.spec import DataMetric, EntityOrder
from master_agent.capabilities.terms import (
    DAYS_OF_WEEK,
    MetricMention,
    Window,
    ambiguous_date,
    asks_future,
    asks_money,
    business_noun,
    changed_between,
    counted_in_stock,
    counted_rows,
    counted_unknown,
    data_edge_window,
    entity_numbers_as_digits,
    figure_by_verb,
    fiscal_quarter,
    fiscal_year_start,
    metric_by_words,
    metric_mention,
    money_source,
    own_period,
    per_unit_figure,
    possessed_unknown,
    rows_narrowed_by,
    said_down,
    time_mention,
    time_window,
    told_apart_by_unknown,
    unknown_numbered,
    unread_time,
)
from master_agent.capabilities.tools.context import ToolContext
from master_agent.capabilities.tools.sql import ReadOnlySql
from master_agent.errors import ToolInputError
from master_agent.evolution.clock import Clock
from master_agent.evolution.knowledge import KnowledgeStore
from master_agent.evolution.reuse import figure_by_meaning, money_total_of, unknown_by_meaning
from master_agent.models.offline import OfflinePlanner
from master_agent.routing.answer_shapes import (
    COUNT_OF_FLAGGED,
    ENTITY_WORDS,
    Breakdown,
    breakdown_asked,
    breakdown_sql,
    breakdown_unread,
    first_few,
    key_said,
    money_share_asked,
    row_amount,
    shape_words_blanked,
    single_row_amount,
    statistic_asked,
    with_statistic,
)
from master_agent.routing.described import describe, described_member, held_word
from master_agent.routing.discovery import AgentCard
from master_agent.routing.ordered import OrderSaid, order_said
from master_agent.routing.per_unit import (
    distinct_count,
    over_units_sql,
    per_unit_rate,
    statistic_over_units,
    unit_unmet,
    units_counted,
)
from master_agent.routing.row_filters import (
    RowFilter,
    days_of_week_blanked,
    figure_of_flag,
    names_a_column,
    populations_compared,
    row_filters,
    week_parts,
)
from master_agent.runtime.context import extract_entities


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
    problems: Sequence[tuple[str, str]] = ()
    """The pack's problem descriptions (``DomainPack.problems``), to place words by meaning."""
    problem_metrics: Mapping[str, str] = field(default_factory=dict)


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
ORDER BY s.created_at DESC LIMIT 200
"""
#: How many of the goals a question is about an outcome answer lists.
_OUTCOMES_LISTED = 3


async def goal_outcomes(request: QueryRequest) -> QueryAnswer:
    async with request.pool.connection() as conn:
        rows = await (await conn.execute(LATEST_OUTCOMES, {"tenant_id": request.tenant_id})).fetchall()
    asked = _goal_asked(request.message, request.entities, request.metrics)
    if asked:
        rows = [row for row in rows if _goal_is(row["goal"], asked, request.metrics)]
    if not rows and not asked:
        return QueryAnswer(
            text="No goal has been solved for you yet, so there is no outcome to report.",
            handler="outcome",
            data={"solutions": []},
        )
    if not rows:
        # "how did the Store 9 refund plan work out?" with no such goal run: the latest goals' outcomes
        # would answer another question.
        store = f"Store {asked['store']}" if "store" in asked else ""
        said = (
            f"{store}'s {asked['figure']}"
            if store and "figure" in asked
            else store or f"the {asked['figure']}"
        )
        none = f"No goal about {said} is on record for you, so there is no plan's outcome to report."
        if "figure" in asked and time_window(request.message, request.clock.now()) is not None:
            # "We gave store 6 a 7.5% attach target for Q3. Did they make it?": a target set outside this
            # service, checked against the figure over the period it names.
            answer = await data_question(request)
            if answer.data.get("outcome") == "answer":
                answer.text = f"{none} From your data: {answer.text}"
                return answer
            # Read otherwise ("by August" as a day, not the months the target ran over), the figure would
            # answer another question: no record is what is known.
        return QueryAnswer(
            text=f"{none} Ask 'how did my goals work out?' for the goals that were run.",
            handler="outcome",
            answered=False,
            data={"outcome": "no_data", "solutions": [], "missing": [f"a goal about {said}"]},
        )
    rows = rows[:_OUTCOMES_LISTED]
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


def _goal_asked(message: str, entities: Mapping[str, Any], metrics: Sequence[DataMetric]) -> dict[str, Any]:
    """What an outcome question says of the goal it asks about: its store and its figure, as the goal
    would have said them ("the Store 9 refund plan": store 9, the refunds); empty for "my goals"."""
    asked: dict[str, Any] = {}
    if (store := entities.get("store_id")) is not None:
        asked["store"] = int(store)
    if (figure := _figure_named(message, metrics)) is not None:
        asked["figure"] = figure.name
    return asked


def _goal_is(goal: str, asked: Mapping[str, Any], metrics: Sequence[DataMetric]) -> bool:
    """Whether a goal's own words are about what ``asked`` says (its store, and its figure or the
    figure's share or count: "refunds" and "refund rate" are one goal's)."""
    said = extract_entities(goal)
    if "store" in asked and said.get("store_id") != asked["store"]:
        return False
    if "figure" not in asked:
        return True
    figure = _figure_named(goal, metrics)
    if figure is None:
        return False
    asked_figure = next(m for m in metrics if m.name == asked["figure"])
    return bool(
        {figure.name, share_of(figure, metrics).name}
        & {asked_figure.name, share_of(asked_figure, metrics).name}
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


def _format(value: Any, metric: DataMetric) -> str:
    if value is None:
        return "no value"
    if metric.unit == "ratio":
        return f"{float(value):.1%}"
    if metric.unit == "currency":
        return money(float(value), metric.currency, cents=True)
    return f"{float(value):,.0f}" if float(value).is_integer() else f"{float(value):,.2f}"


#: A financial year's period ("fiscal Q1", "FY Q2", "the financial year").
_FISCAL = re.compile(r"\b(?:fiscal|financial)\b|\bfy(?:\b|(?=\d{2}(?:\d{2})?\b))", re.I)  # "FY26" too
#: "that month", "the same week": a period said earlier in the conversation.
_TIME_POINTER = re.compile(
    r"\b(?:that|the\s+same|this\s+same|those)\s+(?:day|week|month|quarter|year|period|time|window|days|weeks|months)\b",
    re.I,
)
#: Words that ask for a share of something, which no count answers.
_PROPORTION = re.compile(
    r"\b(?:share|percentage|proportion|fraction|percent)\s+of\b|\bwhat\s*%|%\s+of\b", re.I
)
#: "the week after", "the month before that": a period counted from the one said before.
_TIME_SHIFT = re.compile(
    r"\b(?:the\s+)?(day|week|fortnight|month|quarter|year)\s+(after|before|prior|earlier|following|later)"
    r"(?!\s+last\b)(?:\s+(?:to\s+)?that)?\b",
    re.I,
)
#: Words that ask for an order of entities by a figure ("which store had the highest", "who was the
#: best seller", "rank our stores", "the bottom three").
_RANK_WORDS = (
    "highest", "lowest", "best", "worst", "most", "least", "top", "bottom", "biggest", "smallest", "largest",
    "weakest", "strongest", "poorest", "greatest", "fewest", "rank", "ranked", "ranking", "order",
)  # fmt: skip
_ORDER_WORDS = re.compile(rf"\b({'|'.join(_RANK_WORDS)})\b", re.I)
#: Literal directions; "best" and "worst" depend on whether the figure is better low (a refund rate).
_LOW_WORDS = frozenset({"lowest", "least", "bottom", "smallest", "fewest"})
_BETTER_WORDS = frozenset({"best", "strongest"})
_WORSE_WORDS = frozenset({"worst", "weakest", "poorest"})


_ASKING_WORDS = frozenset({"who", "whom"})
_UNDIRECTED_WORDS = frozenset({"rank", "ranked", "ranking", "order"})


def _ranking(message: str, metric: DataMetric, fixed: Collection[str] = ()) -> tuple[str, str, bool] | None:
    """(entity, column, ascending) when the question asks for entities ordered by the figure: an
    order word, and the entity the words name (a person's word ranks staff, else stores). An entity
    the question fixes ("who at store 2 ...") is a filter, not what is ranked."""
    said = [match.group(1).lower() for match in _ORDER_WORDS.finditer(message)]
    if not said:
        return None
    # "Rank our stores ... who's at the bottom?": the word that says which end is wanted decides.
    word = next((w for w in said if w not in _UNDIRECTED_WORDS), said[0])
    words = set(re.findall(r"[a-z]+", message.lower()))
    named = [entity for entity, nouns in ENTITY_WORDS.items() if words & (set(nouns) - _ASKING_WORDS)]
    asked = [entity for entity, nouns in ENTITY_WORDS.items() if words & set(nouns) & _ASKING_WORDS]
    # "who's at the bottom" of a ranking of stores asks for a store; "who" alone asks for a person.
    for entity in [e for e in named if e not in fixed] or asked:
        if entity in metric.filters and entity not in fixed:
            if word in _BETTER_WORDS:
                ascending = metric.lower_is_better
            elif word in _WORSE_WORDS:
                ascending = not metric.lower_is_better
            else:
                ascending = word in _LOW_WORDS
            return entity, metric.filters[entity], ascending
    return None


def _group_ranking(message: str, metric: DataMetric) -> tuple[str, bool] | None:
    """(group, ascending) when the question asks for the figure's groups in order ("which region sold
    the most"), read as ``_ranking`` reads entities."""
    said = [match.group(1).lower() for match in _ORDER_WORDS.finditer(message)]
    words = {word.rstrip("s") for word in re.findall(r"[a-z]+", message.lower())}
    group = next((group for group in metric.groups if group in words), None)
    if not said or group is None:
        return None
    word = next((w for w in said if w not in _UNDIRECTED_WORDS), said[0])
    if word in _BETTER_WORDS:
        return group, metric.lower_is_better
    if word in _WORSE_WORDS:
        return group, not metric.lower_is_better
    return group, word in _LOW_WORDS


def _time_filters(metric: DataMetric) -> list[str]:
    if metric.time_column is None:
        return []  # a snapshot has no history to narrow
    return [f"{metric.time_column} >= %(start)s", f"{metric.time_column} < %(end)s"]


def _where(conditions: Sequence[str]) -> str:
    return f" WHERE {' AND '.join(conditions)}" if conditions else ""


async def _rank(
    sql: ReadOnlySql,
    metric: DataMetric,
    window: Window,
    ranked: tuple[str, str, bool],
    narrowed: tuple[list[str], dict[str, Any], list[str]],
    few: int | None = None,
) -> QueryAnswer:
    """Entities in order of the figure; ``few``: only the first few the question asks for ("the bottom
    three"), each one's figure the answer."""
    entity, column, ascending = ranked
    conditions, params, scope = narrowed
    statement = (
        f"SELECT {column} AS entity, {metric.expression} AS value, count(*) AS observations FROM {metric.table}"
        f"{_where([*_time_filters(metric), *conditions])} "
        f"GROUP BY {column} ORDER BY value {'ASC' if ascending else 'DESC'} NULLS LAST LIMIT {few or 10}"
    )
    rows = (await sql.query(statement, {"start": window.start, "end": window.end, **params})).rows
    noun = entity.removesuffix("_id")
    where = f" at {', '.join(scope)}" if scope else ""
    period = window.describe() if metric.time_column else "now"
    if not rows or rows[0]["value"] is None:
        return QueryAnswer(
            text=f"No {metric.name} by {noun}{where} in {period}.",
            handler="data",
            answered=False,
            data={"outcome": "no_data", "window": _window_data(window)},
        )
    first = rows[0]
    lines = [
        f"{i}. {noun.title()} {r['entity']}: {_format(r['value'], metric)}" for i, r in enumerate(rows, 1)
    ]
    # "the largest single basket" says its own order.
    said_order = (
        "" if re.match(r"(?:largest|smallest)\b", metric.name) else ("lowest " if ascending else "highest ")
    )
    text = (
        f"{noun.title()} {first['entity']}{where} had the {said_order}"
        f"{metric.name} in {period}: {_format(first['value'], metric)}.\n"
        + "\n".join(lines)
        + f"\nQuery: {statement}"
    )
    return QueryAnswer(
        text=text,
        handler="data",
        data={
            "outcome": "answer",
            "metric": metric.name,
            "value": first["value"],
            "leader": {noun: first["entity"]},
            "ranking": rows,
            **(
                {"breakdown": {"by": noun, "values": {str(r["entity"]): r["value"] for r in rows}}}
                if few
                else {}
            ),
            "window": _window_data(window) if metric.time_column else None,
            "sql": statement,
            "verification": [
                {
                    "claim": f"{noun} {first['entity']} ranks first by the {metric.name} "
                    f"({'lowest' if ascending else 'highest'} first)",
                    "evidence": f"{statement} over {sum(r['observations'] for r in rows)} rows",
                    "verdict": "backed",
                }
            ],
        },
    )


#: Words saying a figure got better, which for a figure better low (a refund rate) is a fall.
_IMPROVED = re.compile(r"\b(?:improv\w*|better|best)\b", re.I)
#: A window's own words that already say how it holds ("since April", "between May and June").
_OWN_PREPOSITION = re.compile(
    r"^(?:since|from|between|during|over|in|on|until|till|through|throughout|before|after)\b", re.I
)


def _during(window: Window) -> str:
    """The window as said after a figure: "in August 2026", "since April 2026" (never "in since")."""
    said = window.describe()
    return said if _OWN_PREPOSITION.match(said) else f"in {said}"


#: The most groups a reply lists line by line (every group's figure is in its data).
_LISTED = 40


async def _broken_down(
    sql: ReadOnlySql,
    metric: DataMetric,
    window: Window,
    breakdown: Breakdown,
    narrowed: tuple[list[str], dict[str, Any], list[str]],
) -> QueryAnswer:
    """The figure for each group of a breakdown ("by month", "for each store"): one statement, every
    group's value and rows, none presented as the whole."""
    conditions, params, scope = narrowed
    statement = breakdown_sql(metric, breakdown, _where([*_time_filters(metric), *conditions]))
    where = f" for {', '.join(scope)}" if scope else ""
    if statement is None:
        return QueryAnswer(
            text=f"The {metric.name} is read from a table that keeps no history, so it has no figure by "
            f"{breakdown.by}: I can give it as it is now, by store or region.",
            handler="data",
            answered=False,
            data={"outcome": "out_of_scope", "missing": [f"{metric.name} history by {breakdown.by}"]},
        )
    rows = (await sql.query(statement, {"start": window.start, "end": window.end, **params})).rows
    period = f" {_during(window)}" if metric.time_column else " now"
    if not rows:
        return QueryAnswer(
            text=f"No {metric.name}{where}{period}, so nothing to break down by {breakdown.noun}.",
            handler="data",
            answered=False,
            data={"outcome": "no_data", "metric": metric.name, "window": _window_data(window)},
        )
    lines = [
        f"{key_said(breakdown, str(row['key']))}: {_format(row['value'], metric)} ({row['observations']} "
        f"{metric.observation_noun})"
        for row in rows[:_LISTED]
    ]
    if len(rows) > _LISTED:
        lines.append(f"... and {len(rows) - _LISTED} more (all in the answer's data)")
    if breakdown.by == "week":
        # Said, since a week's key is no Monday when the window starts midweek.
        lines.append(
            f"(Weeks run Monday to Sunday; each is keyed by its first day in {window.start:%Y-%m-%d} to "
            f"{window.last_day():%Y-%m-%d}, and counts only that window's days.)"
        )
    total = sum(int(row["observations"]) for row in rows)
    coverage = await _coverage(sql, metric) if metric.time_column else None
    partly = coverage is not None and (window.start < coverage.start or window.end > coverage.end)
    counted = (
        f"\nYour data runs from {coverage.start:%Y-%m-%d} to {coverage.last_day():%Y-%m-%d}: only those days "
        f"are counted, and a {breakdown.noun} without rows is not listed."
        if coverage is not None and partly
        else ""
    )
    return QueryAnswer(
        text=f"The {metric.name}{where} by {breakdown.noun}{period}:\n"
        + "\n".join(lines)
        + f"{counted}\nQuery: {statement}",
        handler="data",
        # A window the data covers in part: each group's figure is of what is known, a partial answer.
        answered=not partly,
        data={
            "outcome": "answer",
            "metric": metric.name,
            "value": None,
            "breakdown": {
                "by": breakdown.noun,
                "values": {str(row["key"]): row["value"] for row in rows},
                "observations": {str(row["key"]): row["observations"] for row in rows},
            },
            "window": _window_data(window) if metric.time_column else None,
            "sql": statement,
            "params": {k: str(v) for k, v in params.items()},
            "verification": [
                {
                    "claim": f"the {metric.name}{where} for each {breakdown.noun} ({len(rows)} groups)",
                    "evidence": f"{statement} over {total} rows",
                    "verdict": "backed",
                }
            ],
        },
    )


def _key(by: str, key: str) -> int | str:
    """A group's key as the data holds it: an entity's number (Store 3 is 3), a group's name."""
    return int(key) if by.endswith("_id") and key.isdigit() else key


def _moved(change: float, metric: DataMetric) -> str:
    """A change of the figure as said: a rate's in percentage points, an amount's signed."""
    if metric.unit == "ratio":
        return f"{change * 100:+.1f} percentage points"  # 3.5% to 4.0% is +0.5 points
    return ("-" if change < 0 else "+") + _format(abs(change), metric)


async def _rank_groups(
    sql: ReadOnlySql,
    metric: DataMetric,
    window: Window,
    ranked: tuple[str, bool],
    narrowed: tuple[list[str], dict[str, Any], list[str]],
) -> QueryAnswer:
    """A group's members pooled, the groups in order of the figure ("which region sold the most")."""
    group, ascending = ranked
    conditions, params, scope = narrowed
    statement = breakdown_sql(metric, Breakdown(group), _where([*_time_filters(metric), *conditions]))
    rows = (
        (await sql.query(statement, {"start": window.start, "end": window.end, **params})).rows
        if statement
        else []
    )
    rows = sorted((row for row in rows if row["value"] is not None), key=lambda row: float(row["value"]))
    if not ascending:
        rows.reverse()
    period = (_during(window) if metric.time_column else "now") + (f" ({', '.join(scope)})" if scope else "")
    if not rows:
        return QueryAnswer(
            text=f"No {metric.name} by {group} {period}.",
            handler="data",
            answered=False,
            data={"outcome": "no_data", "metric": metric.name, "window": _window_data(window)},
        )
    first = rows[0]
    lines = [f"{i}. {row['key']}: {_format(row['value'], metric)}" for i, row in enumerate(rows, 1)]
    return QueryAnswer(
        text=f"The {first['key']} {group} had the {'lowest' if ascending else 'highest'} {metric.name} "
        f"{period}: {_format(first['value'], metric)}.\n" + "\n".join(lines) + f"\nQuery: {statement}",
        handler="data",
        data={
            "outcome": "answer",
            "metric": metric.name,
            "value": first["value"],
            "leader": {group: first["key"]},
            "ranking": rows,
            "window": _window_data(window) if metric.time_column else None,
            "sql": statement,
            "verification": [
                {
                    "claim": f"the {first['key']} {group} ranks first by the {metric.name}",
                    "evidence": f"{statement} over {sum(int(r['observations']) for r in rows)} rows",
                    "verdict": "backed",
                }
            ],
        },
    )


async def _changed_by(
    sql: ReadOnlySql,
    metric: DataMetric,
    periods: tuple[Window, Window],
    by: tuple[str, bool | None],
    narrowed: tuple[list[str], dict[str, Any], list[str]],
) -> QueryAnswer:
    """Each entity's or group's change of the figure between two periods ("which store improved most
    from Q2 to Q3", "how did each region's refund rate move"): the later period's figure minus the
    earlier's, per entity; ranked when ``by`` has an order (True: smallest change first), else listed."""
    entity, ascending = by
    conditions, params, scope = narrowed
    statement = breakdown_sql(metric, Breakdown(entity), _where([*_time_filters(metric), *conditions]))
    if statement is None:
        return _no_data(f"The {metric.name} keeps no history.", metric, periods[0], None, [])
    figures = []
    for period in periods:
        rows = (await sql.query(statement, {**params, "start": period.start, "end": period.end})).rows
        figures.append({_key(entity, row["key"]): row["value"] for row in rows if row["value"] is not None})
    noun = entity.removesuffix("_id")
    whom = f" ({', '.join(scope)})" if scope else ""
    both = sorted(set(figures[0]) & set(figures[1]))
    window = Window(
        start=periods[0].start, end=periods[1].end, label=f"{periods[0].label} to {periods[1].label}"
    )
    if not both:
        return _no_data(
            f"No {noun} has a {metric.name} in both {periods[0].describe()} and {periods[1].describe()}.",
            metric,
            window,
            await _coverage(sql, metric),
            [periods[0].describe(), periods[1].describe()],
        )
    changes = {key: float(figures[1][key]) - float(figures[0][key]) for key in both}
    order = both if ascending is None else sorted(both, key=lambda key: changes[key], reverse=not ascending)
    lines = [
        f"{noun.title()} {key}: {_format(figures[0][key], metric)} -> {_format(figures[1][key], metric)} "
        f"({_moved(changes[key], metric)})"
        for key in order
    ]
    first = order[0]
    head = (
        f"{noun.title()} {first}'s {metric.name}{whom} changed the {'least' if ascending else 'most'} from "
        f"{periods[0].describe()} to {periods[1].describe()}: {_moved(changes[first], metric)}.\n"
        if ascending is not None
        else f"The {metric.name}{whom} by {noun}, {periods[0].describe()} -> {periods[1].describe()}:\n"
    )
    return QueryAnswer(
        text=head + "\n".join(lines) + f"\nQuery: {statement}",
        handler="data",
        data={
            "outcome": "answer",
            "metric": metric.name,
            "value": changes[first] if ascending is not None else None,
            **({"leader": {noun: first}} if ascending is not None else {}),
            "breakdown": {"by": noun, "values": {str(key): changes[key] for key in order}},
            "periods": {
                period.label: {str(key): figures[index][key] for key in order}
                for index, period in enumerate(periods)
            },
            "window": _window_data(window),
            "sql": statement,
            "verification": [
                {
                    "claim": f"each {noun}'s {metric.name} in {period.describe()}",
                    "evidence": f"{statement} over {period.describe()}",
                    "verdict": "backed",
                }
                for period in periods
            ],
        },
    )


#: Every store a question names ("Store 1 and Store 8", "stores 3 and 5").
_STORES = re.compile(
    r"\b(?:stores?|shops?)\s*#?\s*(\d+)(?:\s*(?:,|and|or|&|vs?\.?|versus)\s*#?\s*(?:stores?\s*)?(\d+)(?![\d/:.]))?",
    re.I,
)


#: Words that judge how entities did ("which did better on refunds"): a count of some sales is judged by
#: its share of them, since a bigger store counts more of everything.
_JUDGED = re.compile(
    r"\b(?:better|worse|best|worst|well|badly|poorly|proportion(?:ate|al)?ly|relatively|for\s+(?:its|their)\s+size|"
    r"doing|performing|faring)\b",
    re.I,
)


def judged_as_share(message: str, metric: DataMetric, metrics: Sequence[DataMetric]) -> DataMetric:
    """The figure entities compared in ``message`` are judged by: for a count of the sales that have
    a flag ("refunds"), the share of sales with it ("refund rate") when the words judge who did better;
    ``metric`` otherwise."""
    if not _JUDGED.search(message):
        return metric
    return share_of(metric, metrics)


def _share_said(message: str, share: DataMetric, metrics: Sequence[DataMetric]) -> bool:
    """Whether a question asking a share says what it is a share of in the words of ``share``'s name or
    meaning, beyond the rows all shares are taken of ("an accessory" of the attach rate)."""
    rows = {
        word
        for metric in metrics
        if metric.table == share.table and metric.expression.replace(" ", "").lower() == "count(*)"
        for name in (metric.name, *metric.aliases, metric.observation_noun)
        for word in re.findall(r"[a-z]+", name.lower())
    }
    own = set(re.findall(r"[a-z]+", " ".join((share.name, *share.aliases, share.description)).lower()))
    said = re.findall(r"[a-z]+", message.lower())
    return any(
        word.rstrip("s") in {w.rstrip("s") for w in own}
        and word.rstrip("s") not in {w.rstrip("s") for w in rows}
        for word in said
        if len(word) > 3 and not _PROPORTION.search(word) and word not in ("share", "what", "which")
    )


def share_of(metric: DataMetric, metrics: Sequence[DataMetric]) -> DataMetric:
    """For a count of the rows that have a flag ("refunds"), the share of rows with it ("refund rate");
    ``metric`` itself for any other figure."""
    flag = COUNT_OF_FLAGGED.match(metric.expression.strip())
    if flag is None:
        return metric
    share = re.compile(rf"^avg\({flag.group(1)}::int\)")
    return next((m for m in metrics if m.table == metric.table and share.match(m.expression)), metric)


async def _compare(
    sql: ReadOnlySql, metric: DataMetric, window: Window, column: str, stores: list[int]
) -> QueryAnswer:
    statement = (
        f"SELECT {column} AS entity, {metric.expression} AS value, count(*) AS observations FROM {metric.table}"
        f"{_where([*_time_filters(metric), f'{column} = ANY(%(stores)s)'])} GROUP BY {column}"
    )
    rows = {
        int(row["entity"]): row
        for row in (
            await sql.query(statement, {"start": window.start, "end": window.end, "stores": stores})
        ).rows
    }
    missing = [store for store in stores if store not in rows or rows[store]["value"] is None]
    if missing:
        return QueryAnswer(
            text=f"No {metric.name} for Store {', '.join(map(str, missing))} in {window.describe()}.",
            handler="data",
            answered=False,
            data={
                "outcome": "no_data",
                "window": _window_data(window),
                "missing": [f"store {s}" for s in missing],
            },
        )
    first, second = rows[stores[0]]["value"], rows[stores[1]]["value"]
    lines = [
        f"Store {store}: {_format(rows[store]['value'], metric)} ({rows[store]['observations']} {metric.observation_noun})"
        for store in stores
    ]
    return QueryAnswer(
        text=f"The {metric.name} in {window.describe()}: " + "; ".join(lines) + f".\nQuery: {statement}",
        handler="data",
        data={
            "outcome": "answer",
            "metric": metric.name,
            "value": float(first) - float(second),
            "each": {str(store): rows[store]["value"] for store in stores},
            "window": _window_data(window) if metric.time_column else None,
            "sql": statement,
            "verification": [
                {
                    "claim": f"the {metric.name} of store {store} is {_format(rows[store]['value'], metric)}",
                    "evidence": f"{statement} over {rows[store]['observations']} rows",
                    "verdict": "backed",
                }
                for store in stores
            ],
        },
    )


async def _group(
    sql: ReadOnlySql, metric: DataMetric, message: str
) -> tuple[str, str, str, list[Any], bool] | None:
    """(group, value, entity, members, one_meant) for a group value the message names ("our east
    stores", "the northern branches"): values are read from the data, so a new region needs no code.
    ``one_meant``: the words name one entity of the group ("our east store")."""
    words = re.findall(r"[a-z]+", message.lower())
    for group, (entity, query) in metric.groups.items():
        rows = (await sql.query(query)).rows
        by_value: dict[str, list[Any]] = {}
        for row in rows:
            by_value.setdefault(str(row["value"]).lower(), []).append(row["member"])
        for index, word in enumerate(words):
            # "east", "eastern": the value, or the value with an adjective's ending.
            value = next(
                (v for v in by_value if word == v or (word.startswith(v) and len(word) - len(v) <= 3)), None
            )
            if value is None or len(value) < 3:
                continue
            after = words[index + 1] if index + 1 < len(words) else ""
            # "our east store", "the shop in the north": one of the group, by a singular noun alone
            # ("which store in the north ..." asks across them).
            nouns = [w for w in words if w in ENTITY_WORDS.get(entity, ())]
            one_meant = (after in nouns and not after.endswith("s")) or (
                bool(nouns) and not any(n.endswith("s") for n in nouns) and not _ORDER_WORDS.search(message)
            )
            return group, value, entity, sorted(by_value[value]), one_meant
    return None


def _no_data(
    text: str, metric: DataMetric, window: Window, coverage: Window | None, periods: list[str]
) -> QueryAnswer:
    """No answer: the data has nothing for ``periods`` (described) of the ``window`` asked."""
    return QueryAnswer(
        text=text,
        handler="data",
        answered=False,
        data={
            "outcome": "no_data",
            "metric": metric.name,
            "window": _window_data(window),
            "coverage": _window_data(coverage) if coverage else None,
            "missing": [f"data for {period}" for period in periods],
        },
    )


async def _change(
    sql: ReadOnlySql,
    metric: DataMetric,
    periods: tuple[Window, Window],
    where: tuple[list[str], dict[str, Any], list[str]],
) -> QueryAnswer:
    """A figure over two periods for one scope, and its change (the later period's minus the earlier's)."""
    conditions, params, scope = where
    statement = (
        f"SELECT {metric.expression} AS value, count(*) AS observations FROM {metric.table}"
        f"{_where([*_time_filters(metric), *conditions])}"
    )
    rows: list[dict[str, Any]] = []
    for period in periods:
        result = await sql.query(statement, {**params, "start": period.start, "end": period.end})
        rows.append(result.rows[0] if result.rows else {"value": None, "observations": 0})
    whom = f" for {', '.join(scope)}" if scope else ""
    window = Window(
        start=periods[0].start, end=periods[1].end, label=f"{periods[0].label} to {periods[1].label}"
    )
    # A period the data does not reach reads as zero sales, not as no data: said, never a change of -100%.
    coverage = await _coverage(sql, metric)
    outside = [
        period.describe()
        for period in periods
        if coverage is not None and (period.end <= coverage.start or period.start >= coverage.end)
    ]
    partly = [
        period.describe()
        for period in periods
        if coverage is not None
        and period.describe() not in outside
        and (period.start < coverage.start or period.end > coverage.end)
    ]
    held = [
        (period, row) for period, row in zip(periods, rows, strict=True) if period.describe() not in outside
    ]
    if len(outside) == 1 and held and held[0][1]["value"] is not None:
        # "fewer in October than September" with October past the data: September's figure is what
        # can be said, and the comparison is what is missing (never a change against a zero).
        period, row = held[0]
        figure = _format(row["value"], metric)
        return QueryAnswer(
            text=f"Your data runs from {coverage.start:%Y-%m-%d} to {coverage.last_day():%Y-%m-%d}"  # type: ignore[union-attr]
            f" and has nothing for {outside[0]}, so no change{whom} can be read. What it has: the "
            f"{metric.name}{whom} in {period.describe()} was {figure} ({row['observations']} "
            f"{metric.observation_noun}).\nQuery: {statement}",
            handler="data",
            answered=False,
            data={
                "outcome": "partial",
                "metric": metric.name,
                "value": row["value"],
                "window": _window_data(period),
                "asked_window": _window_data(window),
                "missing": [f"data for {outside[0]}"],
                "sql": statement,
                "verification": [
                    {
                        "claim": f"the {metric.name}{whom} in {period.describe()} is {figure}",
                        "evidence": f"{statement} over {row['observations']} rows",
                        "verdict": "backed",
                    },
                    {
                        "claim": f"the change from {periods[0].describe()} to {periods[1].describe()}",
                        "evidence": f"no rows for {outside[0]}",
                        "verdict": "unbacked",
                    },
                ],
            },
        )
    if outside:
        return _no_data(
            f"Your data runs from {coverage.start:%Y-%m-%d} to {coverage.last_day():%Y-%m-%d}"  # type: ignore[union-attr]
            f" and has nothing for {' or '.join(outside)}, so no change{whom} can be read.",
            metric,
            window,
            coverage,
            outside,
        )
    if any(row["value"] is None for row in rows):
        empty = [period.describe() for period, row in zip(periods, rows, strict=True) if row["value"] is None]
        return _no_data(
            f"There is no {metric.name}{whom} for {' or '.join(empty)}, so no change can be read.",
            metric,
            window,
            coverage,
            empty,
        )
    change = float(rows[1]["value"]) - float(rows[0]["value"])
    said = [
        f"{period.describe()}: {_format(row['value'], metric)} ({row['observations']} {metric.observation_noun})"
        for period, row in zip(periods, rows, strict=True)
    ]
    relative = f", {change / float(rows[0]['value']):+.1%} of the first" if float(rows[0]["value"]) else ""
    moved = _moved(change, metric)
    counted = (
        f" Your data runs from {coverage.start:%Y-%m-%d} to {coverage.last_day():%Y-%m-%d}: only those days "
        f"of {' and '.join(partly)} are counted."
        if coverage is not None and partly
        else ""
    )
    return QueryAnswer(
        text=f"The {metric.name}{whom}: " + "; ".join(said) + f". Change: {moved}"
        f"{relative}.{counted}\nQuery: {statement}",
        handler="data",
        # Over a period the data covers in part, the change is of what is known: a partial answer.
        answered=not partly,
        data={
            "outcome": "answer",
            "metric": metric.name,
            "value": change,
            "periods": {period.label: row["value"] for period, row in zip(periods, rows, strict=True)},
            "window": _window_data(window),
            "sql": statement,
            "verification": [
                {
                    "claim": f"the {metric.name}{whom} in {period.describe()} is {_format(row['value'], metric)}",
                    "evidence": f"{statement} over {row['observations']} rows",
                    "verdict": "backed",
                }
                for period, row in zip(periods, rows, strict=True)
            ],
        },
    )


#: Words that set two things side by side ("more than the east", "west vs east", "the west or the east").
_COMPARING = re.compile(r"\b(?:than|vs\.?|versus|compared?|comparing|against|or|between)\b", re.I)


async def narrowed_beyond_data(
    sql: ReadOnlySql, metric: DataMetric, message: str, metrics: Sequence[DataMetric]
) -> tuple[str, ...]:
    """The words narrowing ``metric`` to some of its rows that the data cannot apply (``rows_narrowed_by``),
    less those a value of the tables its entities are listed in holds ("for the north stores", "for
    Priya": a region, a staff member's name, which the filters read)."""
    narrowed = rows_narrowed_by(message, metric, metrics)
    if not narrowed:
        return ()
    tables = {
        metric.table,
        *metric.members.values(),
        *(entity.removesuffix("_id") for entity in metric.filters),
    }
    held: set[str] = set()
    columns: set[str] = set()
    for table in sorted(tables):
        try:
            # The figure's own table is read for its columns only (its rows are the sales themselves).
            limit = " LIMIT 1" if table == metric.table else ""
            rows = (await sql.query(f"SELECT * FROM {table}{limit}")).rows
        except ToolInputError:
            continue  # no such table: its entity has no words but its ids
        columns.update(column for row in rows[:1] for column in row)
        held.update(
            word
            for row in rows
            for value in row.values()
            if isinstance(value, str)
            for word in re.findall(r"[a-z0-9]+", value.lower())
        )
    return tuple(
        words
        for words in narrowed
        if not any(
            held_word(word, held) or names_a_column(word, sorted(columns))
            for word in re.findall(r"[a-z0-9]+", words)
        )
    )


async def _groups_compared(sql: ReadOnlySql, metric: DataMetric, message: str) -> list[tuple[str, list[Any]]]:
    """The two values of one group a message compares ("did the west bring in more than the east"),
    each with its members, in the order said; empty when it names fewer (or values of two groups), or
    compares nothing ("now the west (the southern branches)": a follow-up that replaces the region)."""
    if not _COMPARING.search(message):
        return []
    words = re.findall(r"[a-z]+", message.lower())
    for _group_name, (_entity, query) in metric.groups.items():
        by_value: dict[str, list[Any]] = {}
        for row in (await sql.query(query)).rows:
            by_value.setdefault(str(row["value"]).lower(), []).append(row["member"])
        said: dict[str, list[Any]] = {}
        for word in words:
            value = next(
                (
                    v
                    for v in by_value
                    if len(v) >= 3 and (word == v or (word.startswith(v) and len(word) - len(v) <= 3))
                ),
                None,
            )
            if value is not None:
                said.setdefault(value, sorted(by_value[value]))
        if len(said) == 2:
            return list(said.items())
    return []


async def _compare_groups(
    sql: ReadOnlySql, metric: DataMetric, window: Window, column: str, groups: list[tuple[str, list[Any]]]
) -> QueryAnswer:
    """Each group's figure over its members pooled, the first minus the second as the value."""
    statement = (
        f"SELECT {metric.expression} AS value, count(*) AS observations FROM {metric.table}"
        f"{_where([*_time_filters(metric), f'{column} = ANY(%(members)s)'])}"
    )
    rows: list[dict[str, Any]] = []
    for _value, members in groups:
        result = await sql.query(statement, {"start": window.start, "end": window.end, "members": members})
        rows.append(result.rows[0] if result.rows else {"value": None, "observations": 0})
    missing = [value for (value, _), row in zip(groups, rows, strict=True) if row["value"] is None]
    if missing:
        return QueryAnswer(
            text=f"No {metric.name} for the {' or '.join(missing)} in {window.describe()}.",
            handler="data",
            answered=False,
            data={"outcome": "no_data", "window": _window_data(window), "missing": missing},
        )
    said = [
        f"the {value} ({', '.join(map(str, members))}): {_format(row['value'], metric)} "
        f"({row['observations']} {metric.observation_noun})"
        for (value, members), row in zip(groups, rows, strict=True)
    ]
    return QueryAnswer(
        text=f"The {metric.name} in {window.describe()}: " + "; ".join(said) + f".\nQuery: {statement}",
        handler="data",
        data={
            "outcome": "answer",
            "metric": metric.name,
            "value": float(rows[0]["value"]) - float(rows[1]["value"]),
            "window": _window_data(window) if metric.time_column else None,
            "sql": statement,
            "verification": [
                {
                    "claim": f"the {metric.name} of the {value} is {_format(row['value'], metric)}",
                    "evidence": f"{statement} over {row['observations']} rows",
                    "verdict": "backed",
                }
                for (value, _), row in zip(groups, rows, strict=True)
            ],
        },
    )


async def _compare_populations(
    sql: ReadOnlySql,
    metric: DataMetric,
    window: Window,
    narrowed: tuple[list[str], dict[str, Any], list[str]],
    pair: tuple[RowFilter, RowFilter],
) -> QueryAnswer:
    """The figure of each of two populations over the same rows otherwise, the first said minus the
    second as the value; a population with no rows is named, never left out of the comparison."""
    conditions, params, scope = narrowed
    rows: list[dict[str, Any]] = []
    statements: list[str] = []
    for population in pair:
        statement = (
            f"SELECT {metric.expression} AS value, count(*) AS observations FROM {metric.table}"
            f"{_where([*_time_filters(metric), *conditions, population.condition])}"
        )
        bound = {**params, **population.params, "start": window.start, "end": window.end}
        result = await sql.query(statement, bound)
        rows.append(result.rows[0] if result.rows else {"value": None, "observations": 0})
        statements.append(statement)
    where = f" for {', '.join(scope)}" if scope else ""
    said = [
        f"{population.said}: {_format(row['value'], metric) if row['value'] is not None else 'no rows'} "
        f"({row['observations']} {metric.observation_noun})"
        for population, row in zip(pair, rows, strict=True)
    ]
    checks = [
        {
            "claim": f"the {metric.name}{where} with {population.said} is "
            + (_format(row["value"], metric) if row["value"] is not None else "unknown"),
            "evidence": f"{statement} over {row['observations']} rows",
            "verdict": "backed" if row["value"] is not None else "unbacked",
        }
        for population, row, statement in zip(pair, rows, statements, strict=True)
    ]
    missing = [population.said for population, row in zip(pair, rows, strict=True) if row["value"] is None]
    if missing:
        return QueryAnswer(
            text=f"The {metric.name}{where} in {window.describe()}: "
            + "; ".join(said)
            + f". No comparison: there are no rows for {' or '.join(missing)}.",
            handler="data",
            answered=False,
            data={
                "outcome": "no_data",
                "metric": metric.name,
                "window": _window_data(window),
                "missing": missing,
                "verification": checks,
            },
        )
    difference = float(rows[0]["value"]) - float(rows[1]["value"])
    moved = (
        f"{difference * 100:+.2f} percentage points"
        if metric.unit == "ratio"
        else _format(difference, metric)
    )
    return QueryAnswer(
        text=f"The {metric.name}{where} in {window.describe()}: "
        + "; ".join(said)
        + f". Difference (first minus second): {moved}.\nQuery: {statements[0]}",
        handler="data",
        data={
            "outcome": "answer",
            "metric": metric.name,
            "value": difference,
            "populations": {
                population.said: row["value"] for population, row in zip(pair, rows, strict=True)
            },
            # The same figures as every other answer with groups gives them.
            "breakdown": {
                "by": "population",
                "values": {population.said: row["value"] for population, row in zip(pair, rows, strict=True)},
            },
            "window": _window_data(window) if metric.time_column else None,
            "sql": statements[0],
            "verification": checks,
        },
    )


@dataclass(frozen=True)
class NamedByProperty:
    """An entity member the words name by a property ("our newest store"), read from the data: the
    member when every order the words fit agrees on one, else the readings to ask between."""

    words: str
    entity: str
    member: Any | None
    readings: tuple[tuple[str, Any], ...]
    """(measure, member) for each order the words fit: "biggest" by staff count and by sales."""
    unread: str | None = None
    """The property or measure the words order by that no order of the data holds ("floor space")."""

    @property
    def claim(self) -> dict[str, str]:
        measure, member = self.readings[0]
        noun = self.entity.removesuffix("_id")
        return {
            "claim": f"{self.words!r} is {noun.title()} {member}",
            "evidence": f"the {noun}s in order of their {measure}, read from your data",
            "verdict": "backed",
        }


def _order_pattern(order: EntityOrder, word: str) -> re.Pattern[str]:
    # "and the quietest one?": "one" stands for the entity the question is about.
    nouns = [noun for noun in ENTITY_WORDS.get(order.entity, ()) if not noun.endswith("s")] + ["one"]
    flexible = r"[\s-]+".join(re.escape(part) for part in re.split(r"[\s-]+", word))
    return re.compile(rf"\b(?:(?:our|the|my|your)\s+)?{flexible}\s+(?:{'|'.join(nouns)})\b(?![-']?s\b)", re.I)


def _order_said(
    message: str, orders: Sequence[EntityOrder], metrics: Sequence[DataMetric]
) -> OrderSaid | None:
    """The words naming one member of ``orders``' entity by a superlative, read by WordNet (``ordered``)."""
    if not orders:
        return None
    nouns = [noun for noun in ENTITY_WORDS.get(orders[0].entity, ()) if not noun.endswith("s")] + ["one"]
    return order_said(message, orders, nouns, _RANK_WORDS, metrics, _LOW_WORDS)


def property_words(
    message: str, orders: Sequence[EntityOrder], metrics: Sequence[DataMetric] = ()
) -> list[tuple[str, EntityOrder, bool]]:
    """(words, order, highest) for each order whose words name one member in ``message`` ("our
    newest store": the opening date's highest; "the branch that opened most recently"), the first
    words said only: a superlative read by WordNet, else the words an order declares as written."""
    if (said := _order_said(message, orders, metrics)) is not None:
        # "the biggest store by floor space": the measure said is none of the orders', whatever "biggest"
        # names by the others.
        return [(said.words, order, highest) for order, highest in said.fits]
    found: list[tuple[int, str, EntityOrder, bool]] = []
    for order in orders:
        for highest, words in ((True, order.high), (False, order.low)):
            for word in words:
                if match := _order_pattern(order, word).search(message):
                    found.append((match.start(), match.group(0), order, highest))
    if not found:
        return []
    first = min(start for start, *_ in found)
    return [(words, order, highest) for start, words, order, highest in found if start == first]


async def named_by_property(
    sql: ReadOnlySql, orders: Sequence[EntityOrder], message: str, metrics: Sequence[DataMetric] = ()
) -> NamedByProperty | None:
    """The member ``message`` names by a property the data orders ("our newest store" = the store
    opened last, "the biggest shop" = by staff count or by sales, asked when they differ); a property
    or measure no order holds ("the biggest store by floor space") is named as unread."""
    said = property_words(message, orders, metrics)
    if not said:
        unread = _order_said(message, orders, metrics)
        if unread is None or unread.unread is None:
            return None
        return NamedByProperty(
            words=unread.words, entity=unread.entity, member=None, readings=(), unread=unread.unread
        )
    readings: list[tuple[str, Any]] = []
    for _words, order, highest in said:
        rows = (
            await sql.query(
                f"SELECT member, value FROM ({order.query}) AS ordered WHERE value IS NOT NULL "
                f"ORDER BY value {'DESC' if highest else 'ASC'} LIMIT 2"
            )
        ).rows
        if not rows or (len(rows) > 1 and rows[0]["value"] == rows[1]["value"]):
            readings.append((order.measure, None))  # a tie names no one member
        else:
            readings.append((order.measure, rows[0]["member"]))
    members = {member for _measure, member in readings}
    member = next(iter(members)) if len(members) == 1 else None
    return NamedByProperty(
        words=said[0][0], entity=said[0][1].entity, member=member, readings=tuple(readings)
    )


#: Quantifiers that widen a question to every entity ("across every store", "all the shops together").
_EVERY = re.compile(r"\b(?:all|every|each|across|together|combined|overall|chain|company|whole)\b", re.I)


_NOUNS = frozenset(noun for words in ENTITY_WORDS.values() for noun in words) - _ASKING_WORDS


def _entity_nouns(text: str) -> list[str]:
    """The entity nouns ``text`` says (store, branches, seller...), in order."""
    return [word for word in re.findall(r"[a-z]+", text.lower()) if word in _NOUNS]


def _scope_said(message: str, entities: Mapping[str, Any]) -> bool:
    """Whether a message says whom it is about: a store of its own, several, a group ("the east
    stores") or everyone ("across every store")."""
    # "across the staff", "each person's own rate": the people of the store asked about, not another.
    message = _OWN_PEOPLE.sub(" ", message)
    plural = any(noun.endswith("s") and noun != "staff" for noun in _entity_nouns(message))
    # "which store was highest?" asks across them all; "that store", "the same shop" point back.
    asked_across = _entity_nouns(_POINTING_BACK.sub(" ", message))
    return bool(
        entities.get("store_id") is not None
        or _STORES.search(message)
        or plural
        or asked_across
        or _EVERY.search(message)
    )


#: The people of whatever was asked about, each or all of them ("across the staff", "each seller's").
_OWN_PEOPLE = re.compile(
    rf"\b(?:each|every|all|across|among)\s+(?:of\s+)?(?:the\s+|our\s+|its\s+|their\s+)?"
    rf"(?:{'|'.join(noun for noun in ENTITY_WORDS['staff_id'] if noun not in _ASKING_WORDS)})s?"
    r"(?:\s+members?)?(?:'s|s'|’s)?(?=\W|$)",
    re.I,
)


#: An entity the turn before was about, pointed back at ("that store", "the same branch").
_POINTING_BACK = re.compile(r"\b(?:that|this|the\s+same|same|its|their)\s+(?:[a-z]+\s+)?[a-z]+", re.I)


def _scope_before(before: str, orders: Sequence[EntityOrder] = ()) -> str | None:
    """The words a question used for whom it was about, when it named more than one store or one by
    a property: the stores it compared ("store 3 vs store 7"), the group it pooled ("the northern
    branches") or the store its property names ("our newest store")."""
    if said := property_words(before, orders):
        return said[0][0]
    stores = _STORES.search(before)
    if stores and stores.group(2):
        return stores.group(0)
    words = re.findall(r"[a-z]+", before.lower())
    for index, word in enumerate(words[1:], 1):
        if word in _NOUNS and word.endswith("s") and word != "staff":
            return f"{words[index - 1]} {word}"
    return None


def carried_over(
    message: str,
    entities: Mapping[str, Any],
    previous: Mapping[str, Any],
    metrics: Sequence[DataMetric],
    now: datetime,
) -> tuple[str, dict[str, Any]]:
    """A data question's words and entities completed from the data question just before it: the
    period when it points at it ("that month") or names none, the figure when it names none ("same
    for the east stores"), the store when it points back at it ("how many sales did it have").
    Everything the message says itself stays as it said it."""
    before = str(previous.get("goal") or "")
    carried = dict(entities)
    if not before:
        return message, carried
    said_before = time_mention(before, horizons=False)
    shift = _TIME_SHIFT.search(message)
    if shift and time_window(message[shift.end() :], now, direction="past") is not None:
        shift = None  # "the week after the week of 14 Sept" says its own anchor
    if said_before and _FISCAL.search(said_before) and fiscal_year_start(message):
        # "Our fiscal year starts on 1 May" answers which "fiscal Q1" was meant: the day is no period.
        message = f"{said_before} ({message.rstrip('?.! ')})"
    elif said_before and shift:
        # "and the week after?": the week after the one asked about before.
        # "the week prior", "the month following": before or after it.
        side = "before" if shift.group(2).lower() in ("before", "prior", "earlier") else "after"
        message = (
            f"{message[: shift.start()]}the {shift.group(1)} {side} {said_before}{message[shift.end() :]}"
        )
    elif said_before and time_window(message, now, direction="past") is None:
        pointer = _TIME_POINTER.search(message)
        message = (
            message[: pointer.start()] + said_before + message[pointer.end() :]
            if pointer
            else f"{message.rstrip('?.! ')} ({said_before})"
        )
    figure = _figure_named(before, metrics)
    orders = next((m.orders for m in metrics if m.orders), ())
    if figure is not None:
        # "and in September?" after "which did better on refunds, store 1 or store 4?" or "how's the
        # Leeds shop doing on refunds": still judged by the refund rate.
        figure = judged_as_share(before, figure, metrics)
    if figure is not None and _PROPORTION.search(message) and share_of(figure, metrics) is not figure:
        # "what's that as a % of sales?" after the refunds: the share of the sales refunded.
        message = f"{message.rstrip('?.! ')} (the {share_of(figure, metrics).name})"
    elif (
        _figure_named(message, metrics) is None
        and figure is not None
        and not metric_mention(message, metrics).unknown
    ):
        message = f"{message.rstrip('?.! ')} (the {figure.name})"
    # A follow-up that says nobody ("and in July?", "and the least?") is about whom the question before
    # was about; one that names its own scope ("and across every store together?") is not.
    if not _scope_said(message, carried) and not property_words(message, orders):
        store = (previous.get("entities") or {}).get("store_id")
        scope = _scope_before(before, orders)
        if scope is not None:
            message = f"{message.rstrip('?.! ')} ({scope})"
        elif store is not None:
            carried["store_id"] = store
    # "and the least?" after "which store took the most ...": the order is still of stores.
    if _ORDER_WORDS.search(message) and not _entity_nouns(message) and _entity_nouns(before):
        # (Said "among", not "by": "by store" asks each store's figure.)
        message = f"{message.rstrip('?.! ')} (among the {_entity_nouns(before)[0]})"
    return message, carried


def _figure_named(text: str, metrics: Sequence[DataMetric]) -> DataMetric | None:
    """The figure ``text`` names by its name or alias, else by its words in any order or spelling."""
    return (
        metric_mention(text, metrics).metric
        or (metric_by_words(text, metrics) or MetricMention(metric=None)).metric
    )


def _spelled_as_filters(entities: Mapping[str, Any], metric: DataMetric) -> dict[str, Any]:
    """The question's entities, a slip of a filter's noun read as that noun ("stroe 5" is store 5):
    left as written, the figure would be answered for every store."""
    nouns = [entity.removesuffix("_id") for entity in metric.filters]
    read = dict(entities)
    for key, value in entities.items():
        if not key.endswith("_id") or key in metric.filters:
            continue
        if business_noun(key.removesuffix("_id")) and "store_id" in metric.filters and "store_id" not in read:
            read["store_id"] = value  # "boutique 2", "outlet 5": a store in other words
            continue
        close = difflib.get_close_matches(key.removesuffix("_id"), nouns, n=1, cutoff=0.75)
        if close and f"{close[0]}_id" not in read:
            read[f"{close[0]}_id"] = value
    return read


def _in_money(metric: DataMetric, request: QueryRequest) -> DataMetric | None:
    """The figure that is ``metric`` in money, when the question asks a count in money."""
    if metric.money is None or not asks_money(request.message):
        return None
    return next((m for m in request.metrics if m.name == metric.money), None)


def _figure_beyond_populations(
    message: str, metric: DataMetric, metrics: Sequence[DataMetric]
) -> MetricMention | None:
    """Another figure ``message`` names when the one read names a population it also says the other
    way ("the trained staff ... the untrained ones"): the two are who is compared, not the figure."""
    own = {word for name in (metric.name, *metric.aliases) for word in re.findall(r"[a-z]+", name.lower())}
    negated = [
        match.group(0)
        for match in re.finditer(r"\b(?:un|non-?)([a-z]{4,})\b", message, re.I)
        if any(match.group(1).lower().startswith(word[:5]) for word in own if len(word) >= 5)
    ]
    if not negated:
        return None
    blanked = message
    for words in sorted({metric.name, *metric.aliases, *negated}, key=len, reverse=True):
        blanked = re.sub(rf"\b{re.escape(words)}\b", " ", blanked, flags=re.I)
    other = metric_mention(blanked, metrics)
    if other.metric is None:
        other = metric_by_words(blanked, metrics) or other
    return other if other.metric is not None and other.metric.name != metric.name else None


def _flagged_money(metric: DataMetric, request: QueryRequest) -> DataMetric | None:
    """For a count of the rows that have a flag ("refunds"), asked in money ("the value of the refunded
    sales", "how much money did store 2 give back"): the money figure of the rows the flag holds for,
    whether or not the words name the flag's own column; None otherwise."""
    if (flagged := COUNT_OF_FLAGGED.match(metric.expression.strip())) is None or not asks_money(
        request.message
    ):
        return None
    counted = next(
        (
            m
            for m in request.metrics
            if m.table == metric.table and m.money and m.expression.strip() == "count(*)"
        ),
        None,
    )
    money = next((m for m in request.metrics if counted and m.name == counted.money), None)
    total = _SUMMED.match(money.expression.strip()) if money is not None else None
    if money is None or total is None:
        return money
    return replace(
        money,
        name=f"value of the {metric.name}",
        aliases=(),
        expression=f"coalesce(sum({total.group(1)}) FILTER (WHERE {flagged.group(1)}), 0)::float",
        average=None,
    )


#: A total of an amount per row, ``coalesce(sum(x), 0)``, cast or not.
_SUMMED = re.compile(r"^coalesce\(sum\((.+)\),\s*0\)(?:::\w+)?$", re.I)


def _unit_unmet_answer(metric: DataMetric, unmet: str) -> QueryAnswer:
    """The question asked its figure ``unmet`` ("per head", "an hour"), and the figure read is a count or
    a total of all the rows: answering it would state another figure as the one asked, so ask."""
    return QueryAnswer(
        text=f"You asked for a figure {unmet!r}, and the figure I read is the {metric.name}, a total over all "
        f"the {metric.observation_noun}, not {unmet}. Which do you mean: the {metric.name} in total, or an "
        "average per day, per hour, per store or per staff member (say which)?",
        handler="data",
        answered=False,
        data={
            "outcome": "clarify",
            "missing": ["unit"],
            "metric": metric.name,
            "verification": [
                {
                    "claim": f"the figure asked ({unmet}) is the {metric.name}",
                    "evidence": f"the {metric.name} adds up over all its rows; nothing shares it out {unmet}",
                    "verdict": "unbacked",
                }
            ],
        },
    )


def _window_data(window: Window) -> dict[str, str]:
    said = {"label": window.label, "start": window.start.isoformat(), "end": window.end.isoformat()}
    return {**said, "reading": window.reading} if window.reading else said


async def _coverage(sql: ReadOnlySql, metric: DataMetric) -> Window | None:
    """The days the metric's table has rows for (None: no rows at all, or a snapshot)."""
    if metric.time_column is None:
        return None
    span = await sql.query(
        f"SELECT min({metric.time_column}) AS first, max({metric.time_column}) AS last FROM {metric.table}"
    )
    row = span.rows[0] if span.rows else {}
    if not row.get("first") or not row.get("last"):
        return None
    first, last = (datetime.fromisoformat(str(row[key])) for key in ("first", "last"))
    first, last = (moment if moment.tzinfo else moment.replace(tzinfo=UTC) for moment in (first, last))
    day = first.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    end = last.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    return Window(start=day, end=end, label="all your data")


async def _unknown_values(sql: ReadOnlySql, metric: DataMetric, column: str, values: list[Any]) -> list[Any]:
    """Those of ``values`` no row of the metric's table has in ``column``."""
    if not values:
        return []
    found = await sql.query(
        f"SELECT asked AS value FROM unnest(%(values)s::text[]) AS asked WHERE NOT EXISTS "
        f"(SELECT 1 FROM {metric.table} WHERE {column}::text = asked)",
        {"values": [str(value) for value in values]},
    )
    unknown = {str(row["value"]) for row in found.rows}
    return [value for value in values if str(value) in unknown]


async def _known_values(sql: ReadOnlySql, metric: DataMetric, column: str) -> list[Any]:
    found = await sql.query(f"SELECT DISTINCT {column} AS value FROM {metric.table} ORDER BY 1 LIMIT 50")
    return [row["value"] for row in found.rows]


#: A figure that adds its rows up (a total, as opposed to an average or a rate).
_SUM = re.compile(r"\bsum\(", re.I)


def stock_refusal(message: str, metrics: Sequence[DataMetric], now: datetime) -> QueryAnswer | None:
    """The answer to a question about what is on hand ("how many handsets are sitting in the back room
    right now"), which rows of sales never tell, naming the stock as the data missing; None when the
    message asks no such thing. The sales of all time would answer another question."""
    if (held := counted_in_stock(message, metrics, now)) is None:
        return None
    return QueryAnswer(
        text=f"Your data records sales, not stock: it has no count of the {held} on hand. I can say how "
        f"many {held} were sold over a period you name (e.g. 'how many {held} did store 2 sell in "
        "September').",
        handler="data",
        answered=False,
        data={"outcome": "out_of_scope", "missing": [f"stock levels ({held} on hand)"]},
    )


async def data_question(request: QueryRequest, *, default_metric: str | None = None) -> QueryAnswer:
    """One read-only SQL query through the SQL tool: the number over the window the question names
    (read against the runtime clock, never the data's last row), the query and the rows' coverage.
    A window the data does not reach, a figure the data lacks or an entity it does not know is said so,
    never answered with another window's or another figure's number."""
    # "store eight" is Store 8 for every reading below (a number word is no qualifier of the figure).
    request = replace(request, message=entity_numbers_as_digits(request.message))
    # "per weekday", "for each store", "the biggest single sale" shape the answer: read apart, so the
    # figure and its rows are read from the rest.
    asked_shape = request.message
    group_names = [group for metric in request.metrics for group in metric.groups]
    request = replace(request, message=shape_words_blanked(request.message, group_names))
    mention = metric_mention(request.message, request.metrics)
    if (
        mention.metric is not None
        and mention.unknown
        and mention.unknown.split()[0].rstrip("s") in DAYS_OF_WEEK
    ):
        # "weekend attach", "Saturday takings": the days of every week it is of, which the rows' time
        # keeps (a goal cannot be held to them, so only a question reads them so).
        mention = MetricMention(metric=mention.metric)
    if mention.metric is not None and (
        other := _figure_beyond_populations(request.message, mention.metric, request.metrics)
    ):
        # "did the trained staff beat the untrained ones on attach": "trained staff" is who, not what.
        mention = other
    if mention.metric is None and mention.unknown is None:
        mention = metric_by_words(request.message, request.metrics) or mention
    if (stock := stock_refusal(request.message, request.metrics, request.clock.now())) is not None:
        return stock
    if (by_verb := figure_by_verb(request.message, request.metrics)) is not None and (
        mention.metric is None or mention.metric.name != by_verb.metric.name  # type: ignore[union-attr]
    ):
        # "how many phones came back", "more of its sales come back": what the rows did names the
        # figure (the returns), not the rows themselves (all the sales).
        mention = by_verb
    if mention.metric is None and mention.unknown is None:
        # "how many phones did store 3 flog": the rows counted by what they are called.
        mention = counted_rows(request.message, request.metrics) or mention
    if (per := per_unit_figure(request.message, request.metrics)) is not None:
        # "spend per transaction" is the average basket, not the transactions; "sales per square foot"
        # needs floor areas the data does not have.
        mention = per
    if (split := told_apart_by_unknown(request.message, request.metrics)) is not None:
        # "paid by card vs cash": the sales told apart by a property the data has no word for.
        mention = MetricMention(metric=None, unknown=split)
    if mention.metric is not None and mention.metric.unit == "count" and _PROPORTION.search(request.message):
        # "what share of Store 3's sales had an accessory": the sales are what a share is taken of.
        mention = MetricMention(metric=None)
    if mention.metric is not None and (money := _in_money(mention.metric, request)) is not None:
        # "store 4's sales in dollars", "sorry, I meant in dollars": the money of what was counted.
        mention = MetricMention(metric=money)
    if mention.metric is not None and (money := _flagged_money(mention.metric, request)) is not None:
        # "the value of the refunded sales": the money of the sales the count is of (the flag said
        # narrows them), not how many they were.
        mention = MetricMention(metric=money)
    if (
        flagged := await figure_of_flag(ReadOnlySql(request.tool_context), request.metrics, request.message)
    ) is not None:
        # "how many accessories did store 3 sell" counts the sales that had one, not accessory money;
        # "what fraction had an accessory" is the share of sales with one.
        mention = flagged
    said_by_name = mention.metric is not None
    # "how many different people rang up a sale", "the average revenue per trading day": a figure over
    # the rows' units (the staff, the days), which no figure's own words name.
    per_units = distinct_count(asked_shape, request.metrics) or per_unit_rate(asked_shape, request.metrics)
    if (
        per_units is None
        and mention.metric is None
        and mention.unknown is None
        and asks_money(request.message)
    ):
        # "What's store 4 taken since October?": money coming in, with no figure named, is the money
        # figure of the sales (the first count with one).
        counted = next((m for m in request.metrics if m.money), None)
        money = next((m for m in request.metrics if counted and m.name == counted.money), None)
        if (source := money_source(request.message)) is not None and money is not None:
            # "how much did store 7 make from accessories": the money of that part of the sales, when
            # one total is it by meaning; all the sales' money would answer another question, so ask.
            totals = [m for m in request.metrics if m.unit == "currency" and _SUM.search(m.expression)]
            money = await money_total_of(source, request.knowledge.embedder, totals)
            if money is None:
                figures = ", ".join(m.name for m in totals)
                return QueryAnswer(
                    text=f"Which figure is the money from {source!r}? Your data's money totals are: {figures}.",
                    handler="data",
                    answered=False,
                    data={"outcome": "clarify", "missing": ["metric"], "readings": [m.name for m in totals]},
                )
        mention, said_by_name = MetricMention(metric=money), money is not None
    if mention.metric is None and mention.unknown is None:
        # No figure's name in the words ("foot traffic", "takings"): what they mean may still be one,
        # or be data the tenant does not have.
        metrics, problems = request.metrics, request.problems
        if _PROPORTION.search(request.message):
            # "what share of Store 3's sales had an accessory": a share is a rate, never a sum or a
            # count; problems the data has no figure for stay, to be named as missing.
            metrics = [m for m in metrics if m.unit == "ratio"]
            rates = {m.name for m in metrics}
            problems = [
                (key, text) for key, text in problems if request.problem_metrics.get(key, "") in rates | {""}
            ]
        mention = (
            await figure_by_meaning(
                request.message, request.knowledge.embedder, problems, request.problem_metrics, metrics
            )
            or mention
        )
        if mention.metric is not None and _PROPORTION.search(request.message):
            # "what share of store 4's phone sales included an accessory": the share is said by what it
            # is of, in the figure's own words (the attach rate's accessory), no reading of ours.
            said_by_name = _share_said(request.message, mention.metric, request.metrics)
    if (
        not said_by_name
        and mention.metric is not None
        and (thing := possessed_unknown(request.message, request.metrics))
    ):
        # "the average age of store 4's customers": a figure read by meaning is of a thing the data
        # has no rows for, so no figure of the data answers it.
        mention = MetricMention(metric=None, unknown=f"{thing} data")
    if mention.unknown is None:
        # Data the tenant lacks, named in words that sound like a figure it has ("gross margin ... on
        # devices" is no device revenue; "staff turnover" is no takings).
        mention = (
            await unknown_by_meaning(
                request.message,
                request.knowledge.embedder,
                request.problems,
                request.problem_metrics,
                request.metrics,
                days_kept=True,
            )
            or mention
        )
    if per_units is not None:
        mention, said_by_name = MetricMention(metric=per_units), True
    if (
        share := money_share_asked(request.message, request.metrics, request.entities.get("store_id"))
    ) is not None:
        # "what share of store 8's revenue came from accessories": a part of the money over all of it,
        # never the share of sales that had one (the attach rate) nor the share of sales refunded.
        mention = MetricMention(metric=share)
    names = ", ".join(m.name for m in request.metrics) or "none"
    if mention.unknown is not None:
        return QueryAnswer(
            text=f"Your data has no {mention.unknown}: I can answer questions about {names}.",
            handler="data",
            answered=False,
            data={"outcome": "out_of_scope", "missing": [mention.unknown]},
        )
    metric = mention.metric or next((m for m in request.metrics if m.name == default_metric), None)
    if metric is None and (one_row := single_row_amount(asked_shape, request.metrics)) is not None:
        # "the smallest accessory add-on anyone bought": one row's amount of the part it names.
        metric, said_by_name = one_row, True
    if metric is None and (thing := counted_unknown(request.message, request.metrics)):
        return QueryAnswer(
            text=f"Your data has nothing on {thing}: I can answer questions about {names}.",
            handler="data",
            answered=False,
            data={"outcome": "out_of_scope", "missing": [f"{thing} data"]},
        )
    if metric is None:
        return QueryAnswer(
            text=f"I can answer questions about these figures of your data: {names}. Which one do you mean?",
            handler="data",
            answered=False,
            data={"outcome": "clarify", "missing": ["metric"]},
        )
    over = statistic_over_units(asked_shape, metric, row_amount(metric, request.metrics) is not None)
    if over is not None:
        # "the median of the staff's average sale", "each person's own rate, then the median": the
        # statistic of every unit's own figure, not of the rows.
        metric = replace(metric, name=f"{over.statistic.name} of the {over.noun}s' {metric.name}", aliases=())
    elif (statistic := statistic_asked(asked_shape)) is not None:
        # "the median device price", "our biggest single sale": a statistic of the rows' amounts, not
        # the figure's own average or total.
        shaped = with_statistic(metric, statistic, request.metrics)
        if shaped is None and statistic.of_one_row:
            # "which staff member had the largest transaction": the rows named are the sales, whatever
            # else the words name; their money is what is largest.
            sales = next((m for m in request.metrics if m.money), None)
            shaped = with_statistic(sales, statistic, request.metrics) if sales is not None else None
        if shaped is None:
            return QueryAnswer(
                text=f"The {metric.name} is one figure over all the {metric.observation_noun} of a period, "
                f"so it has no {statistic.name} value of its own. Do you mean the {statistic.name} of its "
                "figures by store, by staff member or by day? Or name an amount (device amount, basket).",
                handler="data",
                answered=False,
                data={"outcome": "clarify", "missing": [f"what the {statistic.name} is taken over"]},
            )
        metric = shaped
    request = replace(request, entities=_spelled_as_filters(request.entities, metric))
    if (
        "store_id" in metric.filters
        and "store_id" not in request.entities
        and not _STORES.search(request.message)
        and (numbered := unknown_numbered(request.message))
    ):
        # "Anschlussrate in Laden 3", "Filiale 3": a store in another language, most likely, but no
        # reading of ours says so; the figure for every store would answer another question.
        number = numbered.split()[-1]
        return QueryAnswer(
            text=f"Which do you mean by {numbered!r}: Store {number}? I do not know the word "
            f"{numbered.split()[0]!r}; name it as 'Store {number}' (or the staff member) and I will answer.",
            handler="data",
            answered=False,
            data={"outcome": "clarify", "missing": ["store"], "unread": numbered},
        )
    sql = ReadOnlySql(request.tool_context)
    named = None
    # "the typical store's weekly takings" is every store's figure, no store described.
    if over is None and not any(order.entity in request.entities for order in metric.orders):
        try:
            named = await named_by_property(sql, metric.orders, request.message, request.metrics)
        except ToolInputError:
            named = None
    if named is not None:
        return await _answer_named(request, named, default_metric)
    if (
        over is None
        and (described := await _answer_described(request, metric, sql, default_metric)) is not None
    ):
        return described
    if metric.time_column and (own := own_period(request.message, request.clock.now())) is not None:
        # "while the 2-for-1 offer was on", "on the late shift": when that was is the business's own;
        # all the data (or the month around it) would answer another question.
        example = "'16:00 till midnight'" if own.needs == "hours" else "'from 10 to 23 August'"
        return QueryAnswer(
            text=f"Which {own.needs} do you mean by {own.words!r}? Your data has the time of every sale but "
            f"no record of that; say them (e.g. {example}) and I will answer over them.",
            handler="data",
            answered=False,
            data={"outcome": "clarify", "missing": [f"the {own.needs} of {own.words!r}"]},
        )
    if narrowed := await narrowed_beyond_data(sql, metric, request.message, request.metrics):
        # "the refund rate for headphones": the rows have no product, so the figure over all of them
        # would be presented as the headphones' own.
        names = ", ".join(f"'{words}'" for words in narrowed)
        return QueryAnswer(
            text=f"Your data cannot narrow the {metric.name} to {names}: no figure, table or column of it "
            f"says which sales those are. I can give the {metric.name} over all sales, by store, region, "
            "staff member or period.",
            handler="data",
            answered=False,
            data={"outcome": "out_of_scope", "missing": [f"{words} data" for words in narrowed]},
        )
    now = request.clock.now()
    # "will ... make in December" is the December to come: no rows can exist there, said so.
    asked = time_window(
        days_of_week_blanked(request.message),
        now,
        direction="future" if asks_future(request.message) else "past",
    )
    if metric.time_column and data_edge_window(request.message, Window(start=now, end=now, label="")):
        # "the most recent week you actually have data for": counted back from the data's last day.
        try:
            coverage = await _coverage(sql, metric)
        except ToolInputError:
            coverage = None
        asked = (data_edge_window(request.message, coverage) if coverage else None) or asked
    if asked is None and metric.time_column and (pointer := _TIME_POINTER.search(request.message)):
        # "that month" points at a period said before; without it, all the data would be an answer to
        # another question.
        return QueryAnswer(
            text=f"Which period do you mean by {pointer.group(0)!r}? Name it (e.g. 'in August 2026').",
            handler="data",
            answered=False,
            data={"outcome": "clarify", "missing": ["window"]},
        )
    if metric.time_column and (readings := ambiguous_date(request.message)):
        # "8/7" is 8 July in London and 7 August in New York: the figures differ, so ask.
        return QueryAnswer(
            text=f"Do you mean {readings[0]} or {readings[1]}?",
            handler="data",
            answered=False,
            data={"outcome": "clarify", "missing": ["date"], "readings": list(readings)},
        )
    if asked is None and metric.time_column and (unread := unread_time(request.message)):
        # A period the words name but the reader cannot place: all the data would answer another question.
        return QueryAnswer(
            text=f"I could not read which days you mean by {unread!r}. Name them as dates or a month "
            "(e.g. '1 to 14 September 2026', 'in August').",
            handler="data",
            answered=False,
            data={"outcome": "clarify", "missing": ["window"]},
        )
    if asked is not None and _FISCAL.search(asked.label) and (starts := fiscal_year_start(request.message)):
        # "fiscal Q1 (our fiscal year starts on 1 May)": the user said what a guess would move by months.
        asked = fiscal_quarter(request.message, now, starts) or asked
    if asked is not None and _FISCAL.search(asked.label) and not fiscal_year_start(request.message):
        # Financial years start in January, April, July or October depending on the business: one
        # fact from the user settles which quarter is meant, a guess moves it by months.
        return QueryAnswer(
            text=f"When does your financial year start? Then I can read {asked.label!r} (calendar quarters "
            "are read as said: 'Q3 2026', 'July to September').",
            handler="data",
            answered=False,
            data={"outcome": "clarify", "missing": ["financial year start"]},
        )
    said = [number for pair in _STORES.findall(request.message) for number in pair if number]
    compared = [int(number) for number in dict.fromkeys(said)]
    try:
        # An entity the data does not know is asked about before anything is read over any window.
        for entity, column in metric.filters.items():
            values = compared if entity == "store_id" and len(compared) > 1 else []
            if not values and entity in request.entities:
                values = [request.entities[entity]]
            if unknown := await _unknown_values(sql, metric, column, values):
                noun = entity.removesuffix("_id")
                known = await _known_values(sql, metric, column)
                return QueryAnswer(
                    text=f"Your data has no {noun} {', '.join(map(str, unknown))}; which {noun} do you mean? "
                    f"({', '.join(str(value) for value in known)})",
                    handler="data",
                    answered=False,
                    data={"outcome": "clarify", "missing": [noun], "known": {noun: known}},
                )
        coverage = await _coverage(sql, metric)
        window = asked or coverage or Window(start=now, end=now, label="all your data")
        # "weekday refund rate against weekend refund rate" sets days of every week side by side, no periods.
        compared_days = len(week_parts(request.message)) == 2
        periods = changed_between(request.message, now) if metric.time_column and not compared_days else None
        if (
            metric.time_column
            # Two periods compared are each held against the data by the change's own reading.
            and periods is None
            and (coverage is None or window.end <= coverage.start or window.start >= coverage.end)
        ):
            held = (
                f"your data covers {coverage.start:%Y-%m-%d} to {coverage.last_day():%Y-%m-%d}"
                if coverage
                else "your data has none yet"
            )
            return _no_data(
                f"There is no {metric.name} data for {window.describe()}: {held}.",
                metric,
                window,
                coverage,
                [window.describe()],
            )
        if len(compared) > 1 and "store_id" in metric.filters:
            # "Compare Store 1 and Store 8": each one's figure; answering the first alone would answer
            # another question.
            metric = judged_as_share(request.message, metric, request.metrics)
            return await _compare(sql, metric, window, metric.filters["store_id"], compared)
        if (
            "store_id" in metric.filters
            and "store_id" not in request.entities
            and len(groups := await _groups_compared(sql, metric, request.message)) == 2
        ):
            # "did the west bring in more than the east": each region pooled, side by side.
            metric = judged_as_share(request.message, metric, request.metrics)
            return await _compare_groups(sql, metric, window, metric.filters["store_id"], groups)
        conditions: list[str] = []
        params: dict[str, Any] = {"start": window.start, "end": window.end}
        scope = []
        for entity, column in metric.filters.items():
            if entity in request.entities:
                conditions.append(f"{column} = %({entity})s")
                params[entity] = request.entities[entity]
                scope.append(f"{entity.removesuffix('_id')} {request.entities[entity]}")
        grouped = await _group(sql, metric, request.message)
        if grouped is not None and grouped[2] not in request.entities:
            group, value, entity, members, one_meant = grouped
            noun = entity.removesuffix("_id")
            if one_meant and len(members) > 1:
                listed = " or ".join(f"{noun.title()} {member}" for member in members)
                return QueryAnswer(
                    text=f"You have {len(members)} {noun}s in the {value} {group}: which one, {listed}?",
                    handler="data",
                    answered=False,
                    data={"outcome": "clarify", "missing": [noun], "known": {noun: members}},
                )
            conditions.append(f"{metric.filters[entity]} = ANY(%(members)s)")
            params["members"] = members
            scope.append(f"the {value} {group} ({noun}s {', '.join(map(str, members))})")
        if periods is None and (
            pair := await populations_compared(sql, metric, request.metrics, request.message)
        ):
            # "did the trained staff beat the untrained ones": each one's figure; one of them alone
            # would be given as the comparison.
            rest = await row_filters(sql, metric, request.metrics, request.message)
            for kept in rest:
                conditions.append(kept.condition)
                params.update(kept.params)
                scope.append(kept.said)
            return await _compare_populations(sql, metric, window, (conditions, params, scope), pair)
        for kept in await row_filters(sql, metric, request.metrics, request.message):
            # "the people who finished their training", "phones over 1,000", "Saturdays only": the rows
            # the question keeps, by the tenant's own columns; over all rows it would be another figure.
            conditions.append(kept.condition)
            params.update(kept.params)
            scope.append(kept.said)
        shape = breakdown_asked(asked_shape, metric) if over is None else None
        # "which store had the most different sellers" ranks stores: the sellers are what is counted.
        fixed = {*request.entities.keys(), *units_counted(metric)}
        if shape is not None and shape.by in fixed:
            shape = None  # "store 3 by store": the store is fixed, one figure
        ranked = None if over else _ranking(request.message, judged_as_share(request.message, metric, request.metrics),
                          fixed=fixed)  # fmt: skip
        by_group = _group_ranking(request.message, metric) if ranked is None and over is None else None
        if periods is not None and (
            ranked or by_group or (shape and shape.by in {*metric.filters, *metric.groups})
        ):
            # "which store improved most from Q2 to Q3", "each region's change since June": each one's
            # change, not the change of them all together.
            metric = judged_as_share(request.message, metric, request.metrics)
            order = ranked[2] if ranked else by_group[1] if by_group else None
            if order is not None and (
                said_down(request.message) or (metric.lower_is_better and _IMPROVED.search(request.message))
            ):
                order = not order  # the largest fall first
            entity = ranked[0] if ranked else by_group[0] if by_group else shape.by  # type: ignore[union-attr]
            by = (entity, order)
            return await _changed_by(sql, metric, periods, by, (conditions, params, scope))
        if periods is not None:
            # "by how much did it increase from May to June": both figures, the later minus the earlier.
            return await _change(sql, metric, periods, (conditions, params, scope))
        if shape is not None and ranked is None:
            # "refund rate by month since April", "attach rate for each store": every group's figure.
            return await _broken_down(sql, metric, window, shape, (conditions, params, scope))
        if (
            ranked is None
            and by_group is None
            and (unread := breakdown_unread(asked_shape, metric, request.metrics)) is not None
        ):
            # "break July's sales down by phone model": the rows are told apart by nothing of that
            # name, and the figure over all of them would answer another question.
            return QueryAnswer(
                text=f"Your data cannot break the {metric.name} down by {unread!r}: no figure, table or "
                "column of it says that of a sale. I can break it down by month, week, day, weekday, hour, "
                "store, staff member or region.",
                handler="data",
                answered=False,
                data={"outcome": "out_of_scope", "missing": [f"{unread} data"]},
            )
        # "how's store 2 doing on refunds", "which branch was worst on returns": a count of flagged sales
        # judged is judged by its share ("the most refunds" stays a count).
        metric = judged_as_share(request.message, metric, request.metrics)
        if over is None and (unmet := unit_unmet(asked_shape, metric)) is not None:
            return _unit_unmet_answer(metric, unmet)
        if by_group is not None:
            # "which region shifted the most phones": the groups' figures, the first in order leading.
            return await _rank_groups(sql, metric, window, by_group, (conditions, params, scope))
        if ranked is not None:
            return await _rank(
                sql, metric, window, ranked, (conditions, params, scope), first_few(asked_shape)
            )
        statement = (
            over_units_sql(metric, over, _where([*_time_filters(metric), *conditions]))
            if over is not None
            else f"SELECT {metric.expression} AS value, count(*) AS observations FROM {metric.table}"
            f"{_where([*_time_filters(metric), *conditions])}"
        )
        result = await sql.query(statement, params)
        row = result.rows[0] if result.rows else {"value": None, "observations": 0}
    except ToolInputError as error:
        return QueryAnswer(
            text=f"I could not read that from your data: {error}", handler="data", answered=False
        )
    where = f" for {', '.join(scope)}" if scope else ""
    # A figure read by meaning, not named, may be the wrong one: said as a reading, not an answer.
    partly = (
        ""
        if said_by_name or default_metric
        else f" (No figure was named: I read the question as the {metric.name}; name another to change it.)"
    )
    if metric.time_column is None:
        period = "now (this table keeps no history" + (f", so not {asked.label}" if asked else "") + ")"
    else:
        period = _during(window)
        if coverage is not None and (window.start < coverage.start or window.end > coverage.end):
            counted_days = Window(
                start=max(window.start, coverage.start), end=min(window.end, coverage.end), label="counted"
            )
            partly += (
                f" Your data runs from {coverage.start:%Y-%m-%d} to {coverage.last_day():%Y-%m-%d}, so only "
                + (
                    f"{counted_days.start:%Y-%m-%d} to {counted_days.last_day():%Y-%m-%d} is counted."
                    if counted_days.start < counted_days.end
                    else "none of it is counted."
                )
            )
    units = f" ({row['units']} {over.noun}s)" if over is not None and "units" in row else ""
    text = (
        f"The {metric.name}{where} {period} was {_format(row['value'], metric)}, from "
        f"{row['observations']} {metric.observation_noun}{units}.{partly}\n"
        f"Query: {statement}\nParameters: { ({k: str(v) for k, v in params.items()}) }"
    )
    return QueryAnswer(
        text=text,
        handler="data",
        # A window the data covers in part has its figure for the covered days only: what is known,
        # said as a partial answer, not as the window's figure.
        answered=row["value"] is not None and not partly,
        data={
            "outcome": "answer" if row["value"] is not None else "no_data",
            "metric": metric.name,
            "value": row["value"],
            "observations": row["observations"],
            "window": _window_data(window) if metric.time_column else None,
            "coverage": _window_data(coverage) if coverage else None,
            "sql": statement,
            "params": {k: str(v) for k, v in params.items()},
            "verification": [
                {
                    "claim": f"the {metric.name}{where} is {_format(row['value'], metric)}",
                    "evidence": f"{statement} over {row['observations']} rows",
                    "verdict": "backed" if row["value"] is not None else "unbacked",
                },
                {
                    "claim": f"over {window.describe()}" if metric.time_column else "as it is now",
                    "evidence": f"the question named {asked.label!r}"
                    if asked
                    else ("no window named: all the data" if metric.time_column else "a snapshot table"),
                    "verdict": "backed",
                },
            ],
        },
    )


async def _answer_named(
    request: QueryRequest, named: NamedByProperty, default_metric: str | None
) -> QueryAnswer:
    """A question about a member named by a property: asked when the data does not settle one member,
    else answered as the question naming that member, with the reading among its evidence."""
    noun = named.entity.removesuffix("_id")
    if named.unread is not None:
        # "the biggest store by floor space": no order of the data is by it, so which store is meant is
        # the user's to say; another measure's store would answer another question.
        orders = next((metric.orders for metric in request.metrics if metric.orders), ())
        measures = ", ".join(dict.fromkeys(order.measure for order in orders))
        return QueryAnswer(
            text=f"Which {noun} do you mean by {named.words!r}? Your data does not hold {named.unread!r} "
            f"for its {noun}s; it orders them by {measures}. Name the {noun} (e.g. '{noun.title()} 3').",
            handler="data",
            answered=False,
            data={
                "outcome": "clarify",
                "missing": [noun, named.unread],
                "described": {"words": named.words, "unread": named.unread},
            },
        )
    if named.member is None:
        readings = "; ".join(
            f"by {measure}, {noun.title()} {member}" if member is not None else f"by {measure}, a tie"
            for measure, member in named.readings
        )
        return QueryAnswer(
            text=f"Which {noun} do you mean by {named.words!r}? {readings[0].upper()}{readings[1:]}.",
            handler="data",
            answered=False,
            data={
                "outcome": "clarify",
                "missing": [noun],
                "readings": [{"measure": m, noun: member} for m, member in named.readings],
            },
        )
    said = f"{noun.title()} {named.member}"
    answer = await data_question(
        replace(
            request,
            message=request.message.replace(named.words, said, 1),
            entities={**request.entities, named.entity: named.member},
        ),
        default_metric=default_metric,
    )
    answer.data["named"] = {"words": named.words, named.entity: named.member}
    answer.data["verification"] = [named.claim, *(answer.data.get("verification") or [])]
    answer.text = f"({named.words[0].upper()}{named.words[1:]} is {said}.) {answer.text}"
    return answer


async def _answer_described(
    request: QueryRequest, metric: DataMetric, sql: ReadOnlySql, default_metric: str | None
) -> QueryAnswer | None:
    """A question about a member named by a description ("the store we opened in March 2019", "the
    flagship"): answered as the question naming the member when the member table settles one, else
    asked about, saying what the data holds. None when no description names a member."""
    for entity, table in metric.members.items():
        if entity in request.entities or (entity == "store_id" and _STORES.search(request.message)):
            continue
        description = describe(request.message, ENTITY_WORDS.get(entity, ()))
        if description is None or _ORDER_WORDS.search(description.words):
            continue  # "the best store" ranks them
        try:
            found = await described_member(sql, table, entity, description, request.clock.now())
        except ToolInputError:
            continue
        if found is None:
            continue
        noun = entity.removesuffix("_id")
        if found.settled:
            said = f"{noun.title()} {found.members[0]}"
            answer = await data_question(
                replace(
                    request,
                    message=request.message.replace(description.words, said, 1),
                    entities={**request.entities, entity: found.members[0]},
                ),
                default_metric=default_metric,
            )
            answer.data["described"] = {"words": found.words, entity: found.members[0]}
            answer.data["verification"] = [found.claim(noun), *(answer.data.get("verification") or [])]
            answer.text = f"({found.words[0].upper()}{found.words[1:]} is {said}.) {answer.text}"
            return answer
        fits = (
            f"{noun}s {', '.join(map(str, found.members))} fit it" if found.members else f"no {noun} fits it"
        )
        return QueryAnswer(
            text=f"Which {noun} do you mean by {found.words!r}? Your data: {found.reason}; {fits}. "
            f"Your {noun}s: {', '.join(map(str, found.known))}.",
            handler="data",
            answered=False,
            data={
                "outcome": "clarify",
                "missing": [noun],
                "known": {noun: list(found.known)},
                "described": {"words": found.words, "fits": list(found.members), "reason": found.reason},
            },
        )
    return None


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
