"""Figures taken over the distinct units of a figure's rows rather than over the rows themselves: how
many different units the rows have ("how many different people rang up a sale", "how many days had a
sale"), an additive figure per unit ("average revenue per trading day", "sales per staff member on
average") and a statistic of every unit's own figure ("the median of the staff's average sale", "the
typical store's weekly takings"). A unit is an entity the figure filters by (its column) or a unit of
time (its time column), so a tenant's new figure needs no code."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from master_agent.capabilities.spec import DataMetric
from master_agent.capabilities.terms import asks_money, counted_rows, metric_mention
from master_agent.routing.answer_shapes import ENTITY_WORDS, Statistic, one_sense, statistic_asked

#: A unit's words, each to the entity or unit of time it means; people are the staff.
_UNIT_WORDS: dict[str, str] = {
    **{
        noun: entity
        for entity, nouns in ENTITY_WORDS.items()
        for noun in nouns
        if noun not in ("who", "whom")
    },
    **{word: "staff_id" for word in ("salespeople", "staffer", "staffers", "worker", "workers", "colleague",
                                     "colleagues", "head", "heads", "member", "members")},
    "day": "day", "days": "day", "date": "day", "dates": "day",
    "week": "week", "weeks": "week", "month": "month", "months": "month", "hour": "hour", "hours": "hour",
}  # fmt: skip
#: A qualifier stands before a unit of time or the staff only: "per store in July" is per store.
_UNIT = (
    r"(?:(?:trading|business|working|opening|selling|shop|store)\s+(?=(?:day|hour|staff|member)))?"
    r"(members?\s+of\s+staff|staff\s+members?|[a-z]+)"
)
_TIME_KEYS = {
    "day": "({t} AT TIME ZONE 'UTC')::date",
    "week": "date_trunc('week', {t} AT TIME ZONE 'UTC')",
    "month": "date_trunc('month', {t} AT TIME ZONE 'UTC')",
    "hour": "date_trunc('hour', {t} AT TIME ZONE 'UTC')",
}
_NOUNS = {"staff_id": "staff member", "store_id": "store", "day": "day", "week": "week", "month": "month",
          "hour": "hour"}  # fmt: skip


def _unit_of(words: str) -> str | None:
    """The entity or unit of time ``words`` name ("staff members", "shops", "trading days")."""
    words = re.sub(r"\s+", " ", words.lower())
    if words.startswith(("member", "staff member")):
        return "staff_id"
    return _UNIT_WORDS.get(words) or _UNIT_WORDS.get(words.removesuffix("s"))


def unit_key(unit: str, metric: DataMetric) -> str | None:
    """The SQL telling ``metric``'s rows apart by ``unit``: its column for an entity, its day (week,
    month, hour) for a unit of time; None when its rows have no such thing (a snapshot has no days)."""
    if unit in _TIME_KEYS:
        return _TIME_KEYS[unit].format(t=metric.time_column) if metric.time_column else None
    return metric.filters.get(unit)


def _additive(metric: DataMetric) -> bool:
    """Whether ``metric`` adds up over its rows (a count or a sum), so it can be shared out per unit."""
    expression = metric.expression.strip().lower().replace(" ", "")
    return expression.startswith(("count(", "coalesce(sum(", "sum("))


#: "how many different people", "the number of distinct staff members", "the most unique sellers".
_DIFFERENT = re.compile(
    rf"\b(?:how\s+many|number\s+of|count\s+of|most|fewest|least|more|fewer)\s+"
    rf"(?:different|distinct|unique|separate|individual)\s+{_UNIT}\b",
    re.I,
)
#: "how many people rang something up", "how many staff made a sale", "how many days had a sale",
#: "how many days did store 3 trade": the units counted by what their rows did.
_BY_SELLING = re.compile(
    rf"\bhow\s+many\s+{_UNIT}\s+(?:[\w']+\s+){{0,4}}?(?:(?:actually|really|in\s+total)\s+)?"
    r"(?:(?:did|do|does|have|has|had)\s+(?:[\w']+\s+){0,3}?)?"
    r"(?:sold|sell|made\s+(?:a|any|at\s+least\s+one)\s+sale|rang|rung|put\s+through|processed|closed|traded|trade|"
    r"(?:had|have|saw|see|with|recorded|record)\s+(?:a|any|at\s+least\s+one|one\s+or\s+more)\s+(?:sale|transaction))",
    re.I,
)


def distinct_count(message: str, metrics: Sequence[DataMetric]) -> DataMetric | None:
    """The count of the different units the rows of a count of every row have, when the question asks
    how many different units there are or how many of them sold; None when it asks nothing of the kind
    or no counted figure has such units ("how many staff does store 3 have" is the staff list's)."""
    found = _DIFFERENT.search(message) or _BY_SELLING.search(message)
    if found is None or (unit := _unit_of(found.group(1))) is None:
        return None
    for metric in metrics:
        if metric.expression.replace(" ", "").lower() != "count(*)" or metric.time_column is None:
            continue  # the rows that record selling: a snapshot of people records none
        if (key := unit_key(unit, metric)) is None:
            continue
        flag = _flag_sold(message[found.end() :], metrics)
        return replace(
            metric,
            name=f"number of different {_NOUNS[unit]}s with a sale"
            + (f" with {_a(flag.split('_')[0])}" if flag else ""),
            aliases=(),
            expression=f"count(DISTINCT {key})" + (f" FILTER (WHERE {flag})" if flag else ""),
            unit="count",
            money=None,
            average=None,
        )
    return None


#: A yes/no column of the rows, as a rate of the data averages it ("avg(accessory_attached::int)").
_FLAG_RATE = re.compile(r"^avg\(\s*(\w+)\s*::\s*int\s*\)")
#: What was sold, right after the verb: "sold an add-on", "sold any accessories".
_OBJECT = re.compile(
    r"\b(?:sold|sell|sells|selling|shifted|shift|moved|move|rang\s+up|rung\s+up)\s+"
    r"(?:(?:an?|any|at\s+least\s+one|one\s+or\s+more|some)\s+)?([a-z][a-z-]*)",
    re.I,
)


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _flag_sold(after: str, metrics: Sequence[DataMetric]) -> str | None:
    """The yes/no column a count of different units narrows its rows to when the thing sold is that
    column's word or a noun of one WordNet sense with it ("sold an add-on": the sales with an accessory);
    None for the rows themselves or anything no column says."""
    said = _OBJECT.search(after)
    if said is None:
        return None
    thing = said.group(1).lower()
    for metric in metrics:
        if (rate := _FLAG_RATE.match(metric.expression.strip())) is None:
            continue
        word = rate.group(1).split("_")[0]
        if thing.rstrip("s") == word.rstrip("s") or one_sense(thing, word):
            return rate.group(1)
    return None


def units_counted(metric: DataMetric) -> set[str]:
    """The entities whose members ``metric`` counts once each ("the number of different staff members
    with a sale" counts the staff): no entity it can be ranked or broken down by."""
    return {
        entity
        for entity, column in metric.filters.items()
        if f"count(DISTINCT {column})" in metric.expression
    }


#: An amount averaged per unit ("the average revenue per trading day", "sales per staff member on
#: average", "how much do we take a day on average"), or "average daily takings".
_PER = re.compile(rf"\b(?:per|an?|each|every|for\s+each|for\s+every)\s+{_UNIT}\b", re.I)
#: "what was store 3 taking an hour", "phones a day": an amount said with an article before a unit of
#: time is a rate, with or without "average" (no one asks a breakdown so); not "in a week", "a day
#: ago", "a week before", where the article's unit is a span of time, not what the amount is per.
_RATE_IN_TIME = re.compile(
    r"(?<!\bin\s)(?<!\bfor\s)(?<!\bwithin\s)(?<!\bover\s)(?<!\bthan\s)(?<!\bon\s)"
    r"\ban?\s+(hour|day|week|month)\b(?!\s+(?:ago|before|after|earlier|later|or\s+two|of\b))",
    re.I,
)
_AVERAGED = re.compile(r"\b(?:average|mean|avg|typical|typically|usually|normally)\b", re.I)
_QUALIFIED = re.compile(r"\bper\s+(?:trading|business|working|opening|selling)\s+day\b", re.I)
#: "average daily takings", "the typical store's weekly takings": an amount per unit, said as an adverb
#: with an average or a typical one asked.
_ADVERB = re.compile(r"\b(daily|weekly|monthly|hourly)\b", re.I)
_ADVERB_UNITS = {"daily": "day", "weekly": "week", "monthly": "month", "hourly": "hour"}


#: A unit of time counted by the rows that had one ("per trading day", "a person's selling days").
_TRADED = re.compile(r"\b(?:trading|business|working|opening|selling|shop|store)\s", re.I)
_CLOCK_SECONDS = {"hour": 3600, "day": 86400}


def clock_units(unit: str, time_column: str) -> str:
    """SQL for how many ``unit``s of the clock the question's window has (``%(start)s`` to ``%(end)s``),
    cut to the first and last day its rows have: a window the data covers in part is shared out over
    the days it covers, not over days it holds nothing of."""
    day = f"date_trunc('day', {{}}({time_column}) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
    return (
        f"extract(epoch FROM least(%(end)s::timestamptz, {day.format('max')} + interval '1 day') - "
        f"greatest(%(start)s::timestamptz, {day.format('min')})) / {_CLOCK_SECONDS[unit]}"
    )


def per_unit_rate(message: str, metrics: Sequence[DataMetric]) -> DataMetric | None:
    """A count or a total shared out over its rows' units ("average revenue per day": the takings over
    the days that had a sale), said as such; None when no amount per unit is asked, the unit is one
    its rows do not have, or the figure does not add up (a rate per day is a breakdown by day)."""
    unit, said = None, None
    if (adverb := _ADVERB.search(message)) is not None and _AVERAGED.search(message):
        unit, said = _ADVERB_UNITS[adverb.group(1).lower()], adverb
    elif (rate := _RATE_IN_TIME.search(message)) is not None:
        unit, said = rate.group(1).lower(), rate
    else:
        for found in _PER.finditer(message):
            if (meant := _unit_of(found.group(1))) is None:
                continue
            if _AVERAGED.search(message) or _QUALIFIED.search(found.group(0)):
                unit, said = meant, found
                break
    if unit is None or said is None:
        return None
    rest = _AVERAGED.sub(" ", message[: said.start()] + " " + message[said.end() :])
    metric = metric_mention(rest, metrics).metric
    if metric is not None and not _additive(metric):
        # "average revenue" was read as the average basket: the total it is the average of is shared out.
        metric = next((m for m in metrics if m.average == metric.name and _additive(m)), None)
    if metric is None and (rows := counted_rows(rest, metrics)) is not None:
        metric = rows.metric  # "how many phones a day did store 2 sell"
    if metric is None and asks_money(rest):
        counted = next((m for m in metrics if m.money), None)
        metric = next((m for m in metrics if counted is not None and m.name == counted.money), None)
    if metric is None or not _additive(metric) or (key := unit_key(unit, metric)) is None:
        return None
    traded = bool(_TRADED.search(said.group(0)))
    if unit in _CLOCK_SECONDS and not traded and metric.time_column is not None:
        # "taking an hour", "per day": the clock's hours (days) of the window, as far as its rows reach;
        # the hours that had a sale are far fewer than a month's 720, and no rate is per those.
        denominator, noun = clock_units(unit, metric.time_column), _NOUNS[unit]
    else:
        denominator = f"count(DISTINCT {key})"
        noun = _NOUNS[unit] if unit != "day" else "day with a sale"
    return replace(
        metric,
        name=f"{metric.name} per {noun}",
        aliases=(),
        expression=f"({metric.expression})::float / nullif({denominator}, 0)",
        unit="currency" if metric.unit == "currency" else "number",
        money=None,
        average=None,
    )


@dataclass(frozen=True)
class OverUnits:
    """A statistic of every unit's own figure: ``statistic`` over the groups ``key`` tells apart."""

    statistic: Statistic
    unit: str
    key: str

    @property
    def noun(self) -> str:
        return _NOUNS[self.unit]


#: "the typical store's", "the median staff member's", "each person's own", "the staff's",
#: "across the staff", "of the stores": whose own figures a statistic is taken over.
_WHOSE = re.compile(
    rf"\b(?:(?:typical|median|average|mean)\s+|each\s+|every\s+|the\s+|our\s+)?{_UNIT}(?:'s|s'|’s|s’)(?:\s+own)?(?!\w)",
    re.I,
)
#: "across the staff", "among our stores": whose figures, when the rows have no amount of their own.
_ACROSS = re.compile(
    rf"\b(?:across|among|between)\s+(?:all\s+)?(?:the\s+|our\s+|its\s+|their\s+)?{_UNIT}\b", re.I
)
_TYPICAL_UNIT = re.compile(rf"\btypical\s+{_UNIT}(?:'s|s'|’s|s’)", re.I)


def statistic_over_units(message: str, metric: DataMetric, rows_have_amount: bool) -> OverUnits | None:
    """The statistic a question takes of each unit's own figure ("the median of the staff's average
    sale", "the typical store's weekly takings", "each person's own rate, then the median"); None
    when it asks a statistic of the rows ("the median sale") or none at all. "Across the staff" says
    whose figures only of a figure whose rows have no amount (a rate): "the median sale across the
    stores" is the middle sale of them all."""
    typical = _TYPICAL_UNIT.search(message)
    statistic = statistic_asked(message) or (
        Statistic("median", "percentile_cont(0.5) WITHIN GROUP (ORDER BY {x})") if typical else None
    )
    if statistic is None or statistic.of_one_row:
        return None
    found_units = [*_WHOSE.finditer(message), *([] if rows_have_amount else _ACROSS.finditer(message))]
    for found in found_units:
        unit = _unit_of(found.group(1))
        if unit is None or (unit in _TIME_KEYS and found.group(0).lower().startswith(("across", "among"))):
            continue  # "across the month": the window, not its days
        if (key := unit_key(unit, metric)) is not None:
            return OverUnits(statistic, unit, key)
    return None


def over_units_sql(metric: DataMetric, over: OverUnits, where: str) -> str:
    """One statement giving the statistic of every unit's figure (``value``) and the rows under them
    (``observations``), with ``where`` (the question's own conditions)."""
    return (
        f"SELECT {over.statistic.aggregate.format(x='unit_value')}::float AS value, "
        f"coalesce(sum(rows), 0) AS observations, count(*) AS units FROM (SELECT {over.key} AS unit, "
        f"{metric.expression} AS unit_value, count(*) AS rows FROM {metric.table}{where} GROUP BY 1) AS per_unit"
    )


#: The rows themselves as the unit ("what did add-ons bring in per sale"): an average or a rate of the
#: rows is per each of them already.
_ROW_WORDS = frozenset(
    {"sale", "sales", "transaction", "transactions", "basket", "baskets", "receipt", "receipts"}
)


def unit_asked(message: str) -> tuple[str, str] | None:
    """The unit a question's figure is per, with the words that say it: "per head", "taking an hour",
    "daily takings", "per sale" ("row" for the rows themselves); None when it names no such unit."""
    for found in _PER.finditer(message):
        if not found.group(0).lower().startswith("per"):
            continue  # "each store", "a store": a breakdown or the store asked about, read elsewhere
        if (unit := _unit_of(found.group(1))) is not None:
            return unit, found.group(0)
        if found.group(1).lower() in _ROW_WORDS:
            return "row", found.group(0)
    if (rate := _RATE_IN_TIME.search(message)) is not None:
        return rate.group(1).lower(), rate.group(0)
    if (adverb := _ADVERB.search(message)) is not None:
        return _ADVERB_UNITS[adverb.group(1).lower()], adverb.group(0)
    return None


def unit_unmet(message: str, metric: DataMetric) -> str | None:
    """The words of the unit ``message`` asks its figure per when ``metric``, the figure computed, is not
    per that unit ("takings per head" answered with the month's takings, "phones per member of staff"
    with the staff count): a count or a total of all the rows answers another question than one per
    unit. None when the figure is per it: shared out over it (its name says so), or an average or a
    rate, which is per each row and, averaged over days or stores, the same figure."""
    asked = unit_asked(message)
    if asked is None or not _additive(metric):
        return None
    unit, words = asked
    nouns = {_NOUNS.get(unit, unit), "day with a sale"} if unit == "day" else {_NOUNS.get(unit, unit)}
    if any(f" per {noun}" in metric.name for noun in nouns):
        return None
    return words
