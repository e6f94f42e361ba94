"""What a retail goal states, read before the master loop's first turn: the store, the target in its
own form, the deadline, and whether the figure it names is one this pack can move.

The master agent's strategies move the accessory attach rate. A goal about a figure the tenant's data
does not have (warranty attach, overtime, NPS) is out of scope and is answered so, naming what is
missing; a goal about a figure the data has but no strategy moves (refund rate, average device amount)
gets that figure measured, and an honest partial answer. A goal naming no store, or a store the data
does not know, is asked about rather than guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from master_agent.capabilities import MissingInformation
from master_agent.capabilities.spec import DataMetric, EntityOrder
from master_agent.capabilities.terms import (
    GoalTarget,
    MetricMention,
    Window,
    deadline_just_passed,
    deadline_readings,
    deadline_window,
    goal_deadline,
    goal_metric,
    goal_target,
    guessed_deadline,
    hours_of_day,
    level_reference,
    moves_a_figure,
    past_window,
    unread_deadline,
    written_out,
)
from master_agent.capabilities.tools import ReadOnlySql, ToolContext
from master_agent.errors import ToolInputError
from master_agent.evolution.reuse import NAMED_MIN_SIMILARITY, figure_by_meaning, unknown_by_meaning
from master_agent.routing.queries import named_by_property, narrowed_beyond_data
from master_agent.routing.row_filters import RowFilter, days_of_week_blanked, row_filters, time_slices
from master_agent.runtime.context import extract_entities

#: The figure this pack's strategies move (a ``DataMetric`` name).
STRATEGY_METRIC = "attach rate"
STORES = "SELECT store_id FROM stores ORDER BY store_id"
#: Days of the newest data a figure without a strategy is measured over.
FACT_DAYS = 90


def make_goal_reader(
    metrics: tuple[DataMetric, ...],
    problems: Sequence[tuple[str, str]] = (),
    problem_metrics: Mapping[str, str] | None = None,
) -> Any:
    """``DomainPack.goal_entities`` for the retail pack over its data metrics; ``problems`` (the
    pack's problem descriptions) and ``problem_metrics`` (problem -> the data metric measuring it)
    place a goal whose words name no figure by its meaning."""

    async def stated_entities(goal: str, context: ToolContext) -> dict[str, Any]:
        stated: dict[str, Any] = {}
        now = context.now()
        store = extract_entities(goal).get("store_id")
        if store is not None:
            stated["store_id"] = store
        sql = ReadOnlySql(context)
        try:
            stated["known_stores"] = [row["store_id"] for row in (await sql.query(STORES)).rows]
            # "our newest store": the store the data says it is, or asked when the data names two.
            by_property = (
                None if store is not None else await named_by_property(sql, _store_orders(metrics), goal)
            )
        except ToolInputError:
            return stated
        if by_property is not None and by_property.member is not None:
            stated["store_id"] = by_property.member
            stated["store_named"] = {"words": by_property.words, **by_property.claim}
        elif by_property is not None:
            stated["store_unsettled"] = {
                "words": by_property.words,
                "readings": [
                    {"measure": measure, "store_id": member} for measure, member in by_property.readings
                ],
            }
        if target := goal_target(goal):
            if target.form == "relative" and _SAID_ALONE.fullmatch(target.words) and not _MOVES.search(goal):
                # "say 6.5%", "6.5% then": a percentage with nothing that moves the figure by it is the
                # level it should reach (the answer to "what target?").
                target = GoalTarget(form="absolute", value=target.value, words=target.words)
            stated["target"] = target.as_dict()
        # "Why did Store 2 sell fewer accessories in October?": a question about a period gone by, whose
        # month is no deadline a year ahead and which states no target to plan for.
        # "back to where it was in August": a past period as the target's level, not a question about it.
        then = level_reference(goal, now) if "target" not in stated else None
        past = past_window(goal, now) if then is None else None
        # ... and that period is no deadline ("get it back to its June level": not by next June).
        ahead = goal.replace(then.label, " " * len(then.label), 1) if then is not None else goal
        if past is not None:
            stated["asked_window"] = {"start": past.start.isoformat(), "end": past.end.isoformat()}
        elif len(readings := deadline_readings(ahead, now)) > 1:
            # "by 1/3/27": 1 March or 3 January, both ahead; which one the plan's timeline runs to is
            # the user's to say, never the parser's default order.
            stated["deadline_ambiguous"] = [f"{day:%-d %B %Y}" for day, _ in readings]
        elif guess := guessed_deadline(ahead, now):
            # "before Waitangi Day" with no country named: a calendar's day is a guess, so the date is
            # asked for (the guess said), never planned to.
            stated["deadline_unread"], stated["deadline_guess"] = guess
        elif (passed := deadline_just_passed(ahead, now)) is not None:
            # "by Black Friday" a few days after it: this year's has passed, next year's is a year away;
            # asked, never planned to a year ahead by default.
            stated["deadline_passed"] = passed.label
            stated["deadline_today"] = False
        elif deadline := goal_deadline(ahead, now):
            day, _words = deadline
            stated["deadline"] = day.date().isoformat()
            stated["timeline_days"] = max(7, min(730, math.ceil((day - now) / timedelta(days=1))))
        elif (named := deadline_window(ahead, now)) is not None and named.last_day() < _tomorrow(now):
            # Past, or today ("by close of play today"): no time to act, so asked about, never replaced
            # by a default horizon.
            stated["deadline_passed"] = named.label
            stated["deadline_today"] = named.end > now
        elif fiscal := _FISCAL_YEAR.search(goal):
            # When a financial year ends depends on the business: asked, never a default horizon.
            stated["deadline_unread"] = fiscal.group(0)
        elif event := unread_deadline(ahead, now):
            stated["deadline_unread"] = event
        # "store 3's weekend attach rate", "evening attach" name the attach rate, kept to some days or
        # hours (below).
        mention = goal_metric(_time_slices_blanked(goal), metrics)
        if mention.metric is None:
            # Words that name none of the data's figures ("customers spend more") may still mean one:
            # a figure found by meaning wins when the words the data lacks mean it too, closely ("products
            # being returned" are refunds; "overtime hours" are no training hours); an unknown keeps the
            # goal's own words when it has some.
            placed = await figure_by_meaning(goal, context.embedder, problems, problem_metrics or {}, metrics)
            # The words as said, an average they are said as included ("avg handset price").
            said = mention.unknown or ""
            if said and re.search(rf"\baverage\s+{re.escape(said)}", written_out(goal), re.I):
                said = f"average {said}"
            own = (
                await figure_by_meaning(
                    said,
                    context.embedder,
                    problems,
                    problem_metrics or {},
                    metrics,
                    min_similarity=NAMED_MIN_SIMILARITY,
                )
                if said
                else None
            )
            if placed is not None and (
                mention.unknown is None or (own is not None and own.metric == placed.metric)
            ):
                mention = placed
            elif own is not None and own.metric is not None:
                # Words that alone mean one figure closely ("average handset price" is the average
                # device amount) name it, however the rest of the goal reads.
                mention = own
        if mention.unknown is None and (mention.metric is None or mention.metric.name != STRATEGY_METRIC):
            # Data the tenant lacks named in words that sound like a figure it has ("halve staff
            # turnover" is no takings goal); a goal naming the planned figure keeps its plan.
            lacking = await unknown_by_meaning(
                goal, context.embedder, problems, problem_metrics or {}, metrics
            )
            mention = lacking or mention
        if mention.unknown is None and mention.metric is not None:
            # "cut the refund rate for headphones": the rows have no product, so no plan on them can be
            # measured; the figure over every sale is another goal's.
            narrowed = await narrowed_beyond_data(sql, mention.metric, _time_slices_blanked(goal), metrics)
            mention = MetricMention(metric=None, unknown=f"{narrowed[0]} data") if narrowed else mention
        if then is not None:
            try:
                await _level_then(stated, sql, mention.metric or _planned(metrics), then)
            except ToolInputError:
                stated["target_unmeasured"] = {"words": then.label, "explanation": "it could not be measured"}
        if "target" not in stated and (
            moves_a_figure(goal) or "deadline" in stated or "target_unmeasured" in stated
        ):
            # A goal to move the figure ("improve ... by Valentine's Day") that says not how far; a
            # question about its value ("what is the attach rate of Store 5?") needs no target.
            stated["target_missing"] = True
        if mention.unknown is not None:
            stated["scope"] = {
                "kind": "out_of_scope",
                "missing": [mention.unknown],
                "explanation": f"your data has no {mention.unknown}, so no plan can be measured or checked",
                "what_you_can_do": "ask about a figure your data has: "
                + ", ".join(metric.name for metric in metrics),
            }
        elif mention.metric is not None and past is not None:
            # "what attach rate did the people who finished their training get last quarter": their rows.
            kept = await row_filters(sql, mention.metric, metrics, goal)
            stated["scope"] = await _measured_over(sql, mention.metric, stated.get("store_id"), past, kept)
        elif past is not None:
            stated["scope"] = {
                "kind": "past_question",
                "missing": ["the figure meant", "a target and a date to plan for"],
                "explanation": f"you asked about a period gone by ({past.describe()}) and named no figure of "
                "your data and no target, so no plan (and no target) is proposed",
                "what_you_can_do": "ask for a figure over that period, or set a target and a date to plan for: "
                + ", ".join(metric.name for metric in metrics),
            }
        elif (
            mention.unknown is None
            and (planned := mention.metric or _planned(metrics)) is not None
            and planned.name == STRATEGY_METRIC
            and (part := _slices_of_the_figure(planned, metrics, goal))
        ):
            # "s7 weekend attach -> 6.5%", "evening attach at store 2 to 7%": a plan moves every hour's
            # sales and is measured on them all; a target held to some days or hours is not what it
            # would check. What is known of those rows is measured, beside every row's figure.
            try:
                stated["scope"] = await _measured_on_part(sql, planned, stated.get("store_id"), part)
            except ToolInputError as error:
                stated["scope"] = _unmeasured(planned, error)
        elif mention.metric is not None and mention.metric.name != STRATEGY_METRIC:
            try:
                stated["scope"] = await _measured_only(
                    sql,
                    mention.metric,
                    stated.get("store_id"),
                    _slices_of_the_figure(mention.metric, metrics, goal),
                )
            except ToolInputError as error:
                stated["scope"] = _unmeasured(mention.metric, error)
        return stated

    return stated_entities


def _time_slices_blanked(goal: str) -> str:
    """``goal`` with the days of every week and the hours of every day it keeps blanked."""
    text = days_of_week_blanked(_every_such_day(goal))
    if (hours := hours_of_day(text)) is not None:
        for start, end in hours.clock_spans:
            text = text[:start] + " " * (end - start) + text[end:]
        for word in _WORDS.findall(hours.said):
            text = re.sub(rf"\b{re.escape(word)}\b", _blank, text, count=1, flags=re.I)
    return text


def _blank(found: re.Match[str]) -> str:
    return " " * len(found.group(0))


#: A day of the week said of a figure in the singular ("Saturday attach"), not as a date ("by Saturday",
#: "Saturday 12 December", "this Saturday's").
_ONE_DAY_OF_A_FIGURE = re.compile(
    r"(?<!\bby\s)(?<!\bon\s)(?<!\bthis\s)(?<!\bnext\s)(?<!\blast\s)(?<!\bbefore\s)(?<!\buntil\s)"
    r"\b(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b(?=\s+(?!\d|of\b|the\b)[a-z])",
    re.I,
)


def _every_such_day(goal: str) -> str:
    """A goal is about days to come: "push Saturday attach to 9%" is every Saturday's, said as such
    ("Saturdays") for the readers of days of every week."""
    return _ONE_DAY_OF_A_FIGURE.sub(lambda found: f"{found.group('day')}s", goal)


_WORDS = re.compile(r"[^\W_]+")
#: A day or part of the day said before a noun: "weekend rotas", "Saturday cover", "evening staffing".
_SAID_BEFORE_A_NOUN = re.compile(
    r"\b(?P<slice>weekend|weekday|monday|tuesday|wednesday|thursday|friday|saturday|sunday|morning|afternoon|"
    r"evening|night|lunchtime)\s+(?P<noun>[a-z]+)\b",
    re.I,
)


def _slices_of_the_figure(metric: DataMetric, metrics: Sequence[DataMetric], goal: str) -> list[RowFilter]:
    """The days and hours ``goal`` keeps of ``metric``'s rows. A day said only before a noun that names
    no figure ("..., through better weekend rotas") is the means, not the rows the target is held to."""
    part = time_slices(metric, _every_such_day(goal))
    if not part:
        return []
    figure_words = {
        word
        for figure in metrics
        for said in (figure.name, *figure.aliases)
        for word in _WORDS.findall(said.lower())
    }
    before_nouns = list(_SAID_BEFORE_A_NOUN.finditer(goal))
    slice_words = re.findall(
        r"\b(?:weekends?|weekdays?|(?:mon|tues|wednes|thurs|fri|satur|sun)days?|mornings?|afternoons?|evenings?|"
        r"nights?|lunchtimes?)\b",
        goal,
        re.I,
    )
    of_other_nouns = [found for found in before_nouns if found.group("noun").lower() not in figure_words]
    if before_nouns and len(of_other_nouns) == len(slice_words):
        return []
    return part


def _planned(metrics: Sequence[DataMetric]) -> DataMetric | None:
    return next((metric for metric in metrics if metric.name == STRATEGY_METRIC), None)


async def _level_then(
    stated: dict[str, Any], sql: ReadOnlySql, metric: DataMetric | None, then: Window
) -> None:
    """A target stated as the figure's level over a past period ("back to where it was in August"):
    that level measured from the store's rows over the period, an absolute target; a period the data
    has no rows for ("last year's level" before the data starts) is asked about, never guessed."""
    if metric is None:
        return
    store = stated.get("store_id")
    row, statement = await _measure(sql, metric, store, then)
    if row["value"] is None or not row["observations"]:
        stated["target_unmeasured"] = {
            "words": then.label,
            "explanation": f"your data has no rows for {then.describe()}, so its {metric.name} cannot be measured",
        }
        return
    stated["target"] = {
        "form": "absolute",
        "value": round(float(row["value"]), 4),
        "words": f"the {metric.name} over {then.describe()}",
        "measured": {
            "metric": metric.name,
            "store_id": store,
            "observations": row["observations"],
            "window": {"start": then.start.isoformat(), "end": then.end.isoformat()},
            "sql": statement,
        },
    }


async def _measure(
    sql: ReadOnlySql, metric: DataMetric, store: int | None, window: Window, kept: Sequence[RowFilter] = ()
) -> tuple[dict[str, Any], str]:
    """The figure (value, observations) over ``window``, at ``store`` when the figure has stores."""
    conditions = (
        [f"{metric.time_column} >= %(start)s AND {metric.time_column} < %(end)s"]
        if metric.time_column
        else []
    )
    params: dict[str, Any] = {"start": window.start, "end": window.end}
    if store is not None and "store_id" in metric.filters:
        conditions.append(f"{metric.filters['store_id']} = %(store_id)s")
        params["store_id"] = store
    for rows in kept:
        conditions.append(rows.condition)
        params.update(rows.params)
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    statement = f"SELECT {metric.expression} AS value, count(*) AS observations FROM {metric.table}{where}"
    return (await sql.query(statement, params)).rows[0], statement


def _unmeasured(metric: DataMetric, error: ToolInputError) -> dict[str, Any]:
    return {
        "kind": "no_strategy",
        "missing": [f"a strategy for the {metric.name}"],
        "explanation": f"the {metric.name} could not be measured ({error}); this service "
        f"has strategies for the {STRATEGY_METRIC} only",
        "what_you_can_do": f"ask for a goal on the {STRATEGY_METRIC}",
    }


async def _newest(
    sql: ReadOnlySql, metric: DataMetric, store: int | None, kept: Sequence[RowFilter] = ()
) -> tuple[dict[str, Any], str]:
    """The figure (value, observations, last time) over the newest ``FACT_DAYS`` of data, at ``store``
    when the figure has stores, over the rows ``kept``."""
    conditions = [
        f"{metric.time_column} > (SELECT max({metric.time_column}) FROM {metric.table}) - interval '{FACT_DAYS} days'"
        if metric.time_column
        else "true"  # a snapshot is all there is
    ]
    params: dict[str, Any] = {}
    if store is not None and "store_id" in metric.filters:
        conditions.append(f"{metric.filters['store_id']} = %(store_id)s")
        params["store_id"] = store
    for rows in kept:
        conditions.append(rows.condition)
        params.update(rows.params)
    last = f"max({metric.time_column})" if metric.time_column else "now()"
    statement = (
        f"SELECT {metric.expression} AS value, count(*) AS observations, {last} AS last "
        f"FROM {metric.table} WHERE {' AND '.join(conditions)}"
    )
    return (await sql.query(statement, params)).rows[0], statement


async def _measured_on_part(
    sql: ReadOnlySql, metric: DataMetric, store: int | None, part: Sequence[RowFilter]
) -> dict[str, Any]:
    """A goal on the figure over some days or hours only: those rows' figure and every row's, over the
    newest ``FACT_DAYS`` of data, and why no plan is proposed for them."""
    said = " and ".join(rows.said for rows in part)
    (row, statement), (every, _) = await _newest(sql, metric, store, part), await _newest(sql, metric, store)
    scope_words = f" at Store {store}" if store is not None and "store_id" in metric.filters else ""
    return {
        "kind": "no_strategy",
        "missing": [f"a strategy measured on {said} only"],
        "facts": {
            "metric": metric.name,
            "store_id": store,
            "rows": said,
            "value": row["value"],
            "observations": row["observations"],
            "every_row_value": every["value"],
            "window_days": FACT_DAYS,
            "last": row["last"],
            "sql": statement,
        },
        "explanation": (
            f"the plans move and measure the {metric.name} of every sale, not of {said} alone, so a target "
            f"for {said} cannot be checked by them; over the last {FACT_DAYS} days of your data (to "
            f"{str(every['last'])[:10]}), the {metric.name}{scope_words} on {said} was "
            f"{_shown(row['value'], metric.unit)}, from {row['observations']} {metric.observation_noun} "
            f"(every sale: {_shown(every['value'], metric.unit)})"
        ),
        "what_you_can_do": f"set the target on the {metric.name} of every sale, or ask for the "
        f"{metric.name} on {said} as a question",
    }


async def _measured_only(
    sql: ReadOnlySql, metric: DataMetric, store: int | None, kept: Sequence[RowFilter] = ()
) -> dict[str, Any]:
    """The figure measured over the newest ``FACT_DAYS`` of data (over the days or hours the goal keeps):
    what is known without a strategy."""
    row, statement = await _newest(sql, metric, store, kept)
    scope_words = f" at Store {store}" if store is not None and "store_id" in metric.filters else ""
    scope_words += "".join(f" on {rows.said}" for rows in kept)
    return {
        "kind": "no_strategy",
        "missing": [f"a strategy for the {metric.name}"],
        "facts": {
            "metric": metric.name,
            "store_id": store,
            "value": row["value"],
            "observations": row["observations"],
            "window_days": FACT_DAYS,
            "last": row["last"],
            "sql": statement,
        },
        "explanation": (
            f"the {metric.name}{scope_words} over the last {FACT_DAYS} days of your data (to "
            f"{str(row['last'])[:10]}) was {_shown(row['value'], metric.unit)}, from {row['observations']} {metric.observation_noun};"
            f" this service has strategies for the {STRATEGY_METRIC} only, so no plan is proposed"
        ),
        "what_you_can_do": f"ask for a goal on the {STRATEGY_METRIC}, or use the figure above to plan it yourself",
    }


async def _measured_over(
    sql: ReadOnlySql, metric: DataMetric, store: int | None, window: Window, kept: Sequence[RowFilter] = ()
) -> dict[str, Any]:
    """The figure over the period a question about the past names, over the rows it keeps: what is
    known; no target was stated, so no plan (and no invented target) is proposed."""
    row, statement = await _measure(sql, metric, store, window, kept)
    scope_words = f" at Store {store}" if store is not None and "store_id" in metric.filters else ""
    scope_words += "".join(f" ({rows.said})" for rows in kept)
    found = (
        f"was {_shown(row['value'], metric.unit)}, from {row['observations']} {metric.observation_noun}"
        if row["value"] is not None and row["observations"]
        else "has no rows in your data"
    )
    return {
        "kind": "past_question",
        "missing": ["a target and a date to plan for"],
        "facts": {
            "metric": metric.name,
            "store_id": store,
            "value": row["value"],
            "observations": row["observations"],
            "window": {"start": window.start.isoformat(), "end": window.end.isoformat()},
            "sql": statement,
        },
        "explanation": f"you asked about a period gone by: the {metric.name}{scope_words} over "
        f"{window.describe()} {found}; no target was stated, so no plan is proposed",
        "what_you_can_do": f"set a target and a date for the {metric.name} to get a plan",
    }


def _tomorrow(now: datetime) -> datetime:
    """The start of the day after ``now``'s."""
    return now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)


def _store_orders(metrics: Sequence[DataMetric]) -> tuple[EntityOrder, ...]:
    return tuple(
        order for order in next((m.orders for m in metrics if m.orders), ()) if order.entity == "store_id"
    )


#: A percentage alone ("6.5%"), and words that make one a change of the figure rather than its level.
_SAID_ALONE = re.compile(r"(?<!\d)\d+(?:\.\d+)?\s*(?:%|percent)", re.I)
_MOVES = re.compile(
    r"\b(?:by|up|down|more|less|fewer|extra|higher|lower|rise|growth|gain|increase|raise|improve|boost|"
    r"lift|grow|reduce|cut|decrease|drop|push|drive)\b",
    re.I,
)
#: "the financial year", "FY end", "fiscal year": a period whose end is the business's own.
_FISCAL_YEAR = re.compile(r"\b(?:the\s+)?(?:financial|fiscal)\s+year\b|\bFY\b", re.I)


def missing_information(known: dict[str, Any]) -> MissingInformation | None:
    """A goal on the attach rate needs one of the tenant's stores: none named, or one the data does not
    know, is asked about (with the stores it has)."""
    if known.get("scope") or "known_stores" not in known:
        return None
    # A date given later (the answer to the question below) settles what the goal's words did not.
    if known.get("deadline_unread") and not known.get("deadline"):
        return MissingInformation(
            fields=["deadline"],
            question=f"Which date is {known['deadline_unread']!r} for you (e.g. 31 March)? Then the target "
            "has a date to be met by."
            + (f" (I would read it as {known['deadline_guess']}.)" if known.get("deadline_guess") else ""),
        )
    if known.get("deadline_ambiguous") and not known.get("deadline"):
        first, second = known["deadline_ambiguous"][:2]
        return MissingInformation(
            fields=["deadline"],
            question=f"Is your deadline {first} or {second}? The date you wrote can be read either way.",
        )
    if known.get("deadline_passed") and not known.get("deadline"):
        when = (
            "is today, which leaves no time to act" if known.get("deadline_today") else "has already passed"
        )
        return MissingInformation(
            fields=["deadline"],
            question=f"The deadline you named ({known['deadline_passed']}) {when}. By when should the target "
            "be met?",
        )
    stores = list(known["known_stores"])
    listed = ", ".join(str(store) for store in stores)
    store = known.get("store_id")
    if store is None and (unsettled := known.get("store_unsettled")):
        readings = "; ".join(
            f"by {r['measure']}, Store {r['store_id']}"
            if r["store_id"] is not None
            else f"by {r['measure']}, a tie"
            for r in unsettled["readings"]
        )
        return MissingInformation(
            fields=["store_id"],
            question=f"Which store do you mean by {unsettled['words']!r} ({readings})? Your stores: {listed}.",
        )
    if store is None:
        return MissingInformation(
            fields=["store_id"], question=f"Which store is this goal for? Your stores: {listed}."
        )
    if store not in stores:
        return MissingInformation(
            fields=["store_id"],
            question=f"Your data has no Store {store}. Which store did you mean? ({listed})",
        )
    if not known.get("target_missing") or known.get("target") or known.get("target_percent") is not None:
        return None
    if known.get("preferred_intervention") and not known.get("target_unmeasured"):
        # A goal that asks for what worked elsewhere ("help me increase attach rate" after a proven
        # pattern): the pattern it reuses is the plan asked for (its target stays the planner's own).
        return None
    # No target stated (or one measured from a period the data has no rows for): how far the figure
    # should move is the user's to say; a plan on a default target would be a claim never made.
    unmeasured = known.get("target_unmeasured")
    why = (
        f"You asked for the level of {unmeasured['words']}, but {unmeasured['explanation']}. "
        if unmeasured
        else ""
    )
    return MissingInformation(
        fields=["target"],
        question=f"{why}What target should Store {store}'s {STRATEGY_METRIC} reach: a level (e.g. 6.5%), "
        "or a change (e.g. +1 point, +20%)?",
    )


def _shown(value: Any, unit: str) -> str:
    if value is None:
        return "not measurable (no rows)"
    if unit == "ratio":
        return f"{float(value):.2%}"
    return f"{float(value):,.2f}"
