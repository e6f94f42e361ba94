"""The shape of answer a data question asks for beyond the figure's own aggregate over its rows: a
statistic of the rows (the median sale, the largest single sale, a percentile), the figure broken down
by a unit of time or by an entity ("by month", "for each store", "per weekday"), or the first few of a
ranking ("the bottom three stores"). Each is read from the words against the figure's own SQL, so a
tenant's new figure needs no code; what a figure cannot be shaped into is said, never answered with
the plain figure."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from master_agent.capabilities.spec import DataMetric
from master_agent.capabilities.terms import duckling_parse, metric_mention
from master_agent.capabilities.tools.lexicon import wordnet
from master_agent.routing.described import lemmas


@dataclass(frozen=True)
class Statistic:
    """A statistic of a figure's rows: ``aggregate`` holds ``{x}``, the amount each row has."""

    name: str
    aggregate: str
    of_one_row: bool = False
    """Said of one sale ("the biggest single sale"): the rows are the sales, whatever figure is named."""


#: "median", "the middle value", "the 90th percentile", "p95", "upper quartile", "max", "minimum".
#: A "typical sale" is the middle of the amounts, which one large sale does not move ("a typical
#: Saturday" is no statistic of the sales).
_MEDIAN = re.compile(
    r"\b(?:median|middle\s+value|typical(?=\s+(?:\w+\s+)?(?:sale|transaction|basket|ticket|spend|purchase|order)))\b",
    re.I,
)
_PERCENTILE = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?[\s-]*percentile\b|\bp(\d{2})\b", re.I)
_QUARTILE = re.compile(r"\b(upper|top|third|lower|bottom|first)\s+quartile\b", re.I)
_EXTREME_WORD = re.compile(r"\b(max(?:imum)?|min(?:imum)?)\b", re.I)
#: A superlative said of one row ("the biggest single sale", "our priciest transaction", "the smallest
#: basket"): the largest or smallest amount a row has, not the entity with the highest figure.
_SUPERLATIVE = (
    r"(largest|biggest|highest|priciest|dearest|most\s+expensive|smallest|lowest|cheapest|least\s+expensive)"
)
_ROW_NOUNS = (
    r"(?:(?:device|phone|handset|accessory)\s+)?(?:sale|transaction|purchase|order|basket|ticket|receipt|deal|"
    r"bill|checkout|add-on|addon|item)|(?:device|phone|handset)(?=\s+(?:sold|bought|rung\s+up|put\s+through))"
)
_SINGLE_ROW = re.compile(
    rf"\b{_SUPERLATIVE}\s+(?:(single|one|individual)\s+)?(?:{_ROW_NOUNS})\b"
    r"(?!\s+(?:day|week|month|hour|count|volume|numbers?|figures?|rate|revenue|totals?))",
    re.I,
)
_SINGLE_SAID = re.compile(
    r"\b(?:single|individual|one)\s+(?:sale|transaction|purchase|order|basket|receipt)\b", re.I
)
_SMALL = frozenset({"smallest", "lowest", "cheapest", "least expensive", "min", "minimum"})
#: An average said outright ("the highest average basket") asks for the figure, whatever follows.
_AVERAGE_SAID = re.compile(r"\b(?:average|mean|avg)\b", re.I)
#: An aggregate over rows: ``avg(x)`` (with a FILTER) or ``coalesce(sum(x), 0)``, cast or not.
_AVG_FILTERED = re.compile(r"^avg\((?P<x>.+)\)\s+(?P<filter>FILTER\s+\(WHERE\s+[^()]+\))(?:::\w+)?$", re.I)
_AVG = re.compile(r"^avg\((?P<x>.+)\)(?:::\w+)?$", re.I)
_SUM = re.compile(r"^coalesce\(sum\((?P<x>.+)\),\s*0\)(?:::\w+)?$|^sum\((?P<y>.+)\)(?:::\w+)?$", re.I)
#: A count of the rows a yes/no column flags ("refunds": ``count(*) FILTER (WHERE refunded)``).
COUNT_OF_FLAGGED = re.compile(r"^count\(\*\)\s+FILTER\s+\(WHERE\s+(\w+)\)$", re.I)
#: A yes/no column counted as a number: a share of rows, which has no median or largest value.
_FLAG = re.compile(r"^\w+::int$", re.I)


def statistic_asked(message: str) -> Statistic | None:
    """The statistic of the rows ``message`` asks for, or None when it asks for the figure itself."""
    if _MEDIAN.search(message):
        return Statistic("median", "percentile_cont(0.5) WITHIN GROUP (ORDER BY {x})")
    if (said := _PERCENTILE.search(message)) is not None:
        share = int(said.group(1) or said.group(2))
        if 0 < share < 100:
            return Statistic(
                _ordinal(share) + " percentile",
                f"percentile_cont({share / 100}) WITHIN GROUP (ORDER BY {{x}})",
            )
    if (said := _QUARTILE.search(message)) is not None:
        upper = said.group(1).lower() in ("upper", "top", "third")
        return Statistic(
            f"{'upper' if upper else 'lower'} quartile",
            f"percentile_cont({0.75 if upper else 0.25}) WITHIN GROUP (ORDER BY {{x}})",
        )
    if (said := _EXTREME_WORD.search(message)) is not None:
        small = said.group(1).lower() in _SMALL
        return Statistic("smallest" if small else "largest", "min({x})" if small else "max({x})")
    if (said := _SINGLE_ROW.search(message)) is not None and (
        said.group(2) or _SINGLE_SAID.search(message) or not _AVERAGE_SAID.search(message[: said.end()])
    ):
        small = re.sub(r"\s+", " ", said.group(1).lower()) in _SMALL
        return Statistic(
            "smallest single" if small else "largest single", "min({x})" if small else "max({x})", True
        )
    return None


#: The part of a sale a single row's superlative names before its noun ("the smallest accessory
#: add-on", "the priciest phone sale"), and the row noun itself.
_PART_OF_ROW = re.compile(
    rf"\b{_SUPERLATIVE}\s+(?:(?:single|one|individual)\s+)?(?:(?P<part>[a-z]+)\s+)?(?P<noun>[a-z-]+)\b", re.I
)


_WHOLE_ROW = re.compile(
    r"(?:sale|transaction|purchase|order|basket|ticket|receipt|deal|bill|checkout|item)s?", re.I
)


def single_row_amount(message: str, metrics: Sequence[DataMetric]) -> DataMetric | None:
    """The average whose rows' amounts a superlative said of one row is taken over, when the words
    name no figure: the part the words name ("the smallest accessory add-on" is of the accessory
    amounts; "add-on" is, in WordNet, an accessory) or else the sale's own money (its basket)."""
    statistic = statistic_asked(message)
    if statistic is None or not statistic.of_one_row or (said := _PART_OF_ROW.search(message)) is None:
        return None
    averages = [
        m for m in metrics if m.expression.lstrip().lower().startswith("avg(") and m.unit == "currency"
    ]
    for word in (said.group("part"), said.group("noun")):
        if not word or _WHOLE_ROW.fullmatch(word):
            continue  # "sale", "transaction": the whole of one, its basket
        for average in averages:
            words = re.findall(r"[a-z]+", " ".join((average.name, *average.aliases)).lower())
            if word.lower() in words or any(one_sense(word, named) for named in set(words)):
                return average
    sales = next((m for m in metrics if m.money), None)
    money = next((m for m in metrics if sales is not None and m.name == sales.money), None)
    return next((m for m in metrics if money is not None and m.name == money.average), None)


@functools.cache
def one_sense(word: str, other: str) -> bool:
    """Whether the nouns ``word`` and ``other`` share a WordNet sense ("add-on" and "accessory")."""
    if word.lower() == other:
        return False
    return bool(set(wordnet().synsets(word.lower(), "n")) & set(wordnet().synsets(other, "n")))


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def row_amount(
    metric: DataMetric, metrics: Sequence[DataMetric]
) -> tuple[str, str | None, DataMetric] | None:
    """(the amount each row has, its FILTER clause, the figure it is the average of) for a figure that
    is an average or a total of an amount per row; a count is read through its money's average (the
    sales' is the basket). None for a share of rows (a yes/no column) or a count with no money."""
    by_name = {m.name: m for m in metrics}
    if (flagged := COUNT_OF_FLAGGED.match(metric.expression.strip())) is not None:
        # "the largest sale it refunded": the amounts of the flagged rows, by the rows' own money.
        rows = next(
            (m for m in metrics if m.table == metric.table and m.expression.strip().lower() == "count(*)"),
            None,
        )
        of_rows = row_amount(rows, metrics) if rows is not None else None
        if of_rows is None or of_rows[1] is not None:
            return None
        return of_rows[0], f"FILTER (WHERE {flagged.group(1)})", of_rows[2]
    if metric.expression.strip().lower().startswith("count(") and metric.money in by_name:
        metric = by_name[metric.money]
    if (total := _SUM.match(metric.expression.strip())) is not None:
        average = by_name.get(metric.average or "")
        if average is not None:
            return row_amount(average, metrics)
        amount = total.group("x") or total.group("y")
        return (amount, None, metric) if not _FLAG.match(amount) else None
    if (
        found := _AVG_FILTERED.match(metric.expression.strip()) or _AVG.match(metric.expression.strip())
    ) is None:
        return None
    amount = found.group("x")
    if _FLAG.match(amount.strip()):
        return None
    return amount, found.groupdict().get("filter"), metric


def with_statistic(
    metric: DataMetric, statistic: Statistic, metrics: Sequence[DataMetric]
) -> DataMetric | None:
    """``metric`` as the statistic of its rows' amounts ("the median device amount"), or None when its
    rows have no amount to take it over (a share, a count with no money)."""
    amount = row_amount(metric, metrics)
    if amount is None:
        return None
    column, only, averaged = amount
    expression = statistic.aggregate.format(x=column) + (f" {only}" if only else "") + "::float"
    subject = re.sub(r"^(?:average|mean)\s+", "", averaged.name)
    if COUNT_OF_FLAGGED.match(metric.expression.strip()):
        subject += f" of the {metric.name}"  # "the largest single basket of the refunds"
    return replace(
        metric,
        name=f"{statistic.name} {subject}",
        aliases=(),
        expression=expression,
        unit=averaged.unit,
        lower_is_better=averaged.lower_is_better,
        money=None,
        average=None,
    )


@dataclass(frozen=True)
class Breakdown:
    """A figure broken down: ``by`` is a unit of time (``month``, ``week``, ``day``, ``weekday``,
    ``hour``, ``quarter``), an entity the figure filters by (``store_id``) or a group (``region``)."""

    by: str

    @property
    def noun(self) -> str:
        return self.by.removesuffix("_id")


_TIME_UNITS = {
    "month": "month", "months": "month", "week": "week", "weeks": "week", "day": "day", "days": "day",
    "date": "day", "dates": "day", "weekday": "weekday", "weekdays": "weekday", "hour": "hour", "hours": "hour",
    "quarter": "quarter", "quarters": "quarter",
}  # fmt: skip
_ADVERBS = {"monthly": "month", "weekly": "week", "daily": "day", "hourly": "hour", "quarterly": "quarter"}
#: "by month", "for each store", "per weekday", "broken down by region" ("across our stores" is their
#: total, not each one's).
_BY = re.compile(
    r"\b(?:by|per|each|every|for\s+(?:each|every)|broken\s+down\s+by|split\s+(?:by|across)|"
    r"grouped\s+by|breakdown\s+by)\s+(?:the\s+|our\s+|its\s+|their\s+|individual\s+|single\s+)?"
    r"(day\s+of\s+(?:the\s+)?week|hour\s+of\s+(?:the\s+)?day|time\s+of\s+day|[a-z]+)(?:\s+member)?s?\b"
    r"(?!\s*[#]?\s*\d|\s+(?:end|start|close|beginning|begin)\b)",
    re.I,
)
#: "month by month", "week-on-week", "store by store", "day to day".
_REPEATED = re.compile(r"\b([a-z]+)[\s-]+(?:by|on|to|over)[\s-]+\1\b", re.I)
#: "a monthly breakdown", "the weekly trend", "daily figures".
_ADVERBIAL = re.compile(
    r"\b(monthly|weekly|daily|hourly|quarterly)\s+(?:breakdown|split|figures?|numbers|totals|trend|series|view|"
    r"picture|progression|history|values?)\b",
    re.I,
)
#: "across every store together", "all shops combined": one figure over them, not each one's.
_POOLED = re.compile(r"\b(?:together|combined|altogether|pooled|in\s+total|overall|as\s+a\s+whole)\b", re.I)
#: An amount per unit averaged ("the average revenue per day"): one figure, not a breakdown.
_PER_AVERAGE = re.compile(r"\b(?:average|mean|avg|typical)\b[^.?!]*\bper\s+\w+", re.I)
#: The nouns each entity goes by; a person's words mean the staff.
ENTITY_WORDS: Mapping[str, tuple[str, ...]] = {
    "staff_id": ("staff", "employee", "employees", "seller", "sellers", "salesperson", "person", "people",
                 "rep", "reps", "associate", "associates", "who", "whom"),
    "store_id": ("store", "stores", "shop", "shops", "branch", "branches", "location", "locations",
                 "outlet", "outlets", "site", "sites"),
}  # fmt: skip
#: The nouns a breakdown by an entity is said with ("for each store", "per salesperson").
_ENTITY_NOUNS = {
    entity: frozenset(noun for noun in nouns if noun not in ("who", "whom"))
    for entity, nouns in ENTITY_WORDS.items()
}


def breakdown_asked(message: str, metric: DataMetric) -> Breakdown | None:
    """The breakdown ``message`` asks ``metric`` for, read against the figure's own entities and groups
    and the units of time (which a snapshot, keeping no history, has none of); None when it asks for
    one figure."""
    said: list[str] = []
    for found in _BY.finditer(message):
        if found.group(0).lower().startswith("per") and _PER_AVERAGE.search(message):
            continue
        said.append(found.group(1).lower())
    said += [found.group(1).lower() for found in _REPEATED.finditer(message)]
    said += [_ADVERBS[found.group(1).lower()] for found in _ADVERBIAL.finditer(message)]
    for word in said:
        word = re.sub(r"\s+", " ", word)
        if word.startswith("day of") or word in ("weekday", "weekdays"):
            return Breakdown("weekday")
        if word.startswith(("hour of", "time of")):
            return Breakdown("hour")
        if word.rstrip("s") in _TIME_UNITS or word in _TIME_UNITS:
            return Breakdown(_TIME_UNITS.get(word, _TIME_UNITS.get(word.rstrip("s"), "day")))
        for entity, nouns in _ENTITY_NOUNS.items():
            if entity in metric.filters and word in nouns and not _POOLED.search(message):
                return Breakdown(entity)
        for group in metric.groups:
            if word.rstrip("s") == group:
                return Breakdown(group)
    return None


def shape_words_blanked(message: str, groups: Sequence[str] = ()) -> str:
    """``message`` without the words that shape the answer rather than name its figure or rows ("per
    weekday", "by month", "for each store", "single" in "the biggest single sale"), so they are read
    neither as data the tenant lacks nor as a narrowing (a "weekday" filter)."""
    nouns = {noun for words in _ENTITY_NOUNS.values() for noun in words} | {group.lower() for group in groups}

    def shaping(found: re.Match[str]) -> str:
        word = re.sub(r"\s+", " ", found.group(1).lower())
        units = (
            word in _TIME_UNITS
            or word.rstrip("s") in _TIME_UNITS
            or word.startswith(("day of", "hour of", "time of"))
        )
        averaged = found.group(0).lower().startswith("per") and _PER_AVERAGE.search(message)
        shapes = units or word in nouns or word.rstrip("s") in nouns or word in ("weekday", "weekdays")
        return " " if shapes and not averaged else found.group(0)

    # "month by month" first: its "by month" is no breakdown of its own.
    blanked = _REPEATED.sub(
        lambda found: " " if found.group(1).lower() in _TIME_UNITS else found.group(0), message
    )
    blanked = _BY.sub(shaping, blanked)
    blanked = _ADVERBIAL.sub(" ", blanked)
    for statistic in (_MEDIAN, _PERCENTILE, _QUARTILE, _EXTREME_WORD):
        # "the median device price", "P90 handset price": a statistic of the amount whose average is the
        # figure, read as that average ("typical transactions" is no data of its own).
        blanked = statistic.sub("average", blanked)
    return re.sub(rf"\b(?:single|individual)\s+(?=(?:{_ROW_NOUNS})\b)", "", blanked, flags=re.I)


#: "break ... down by phone model", "split by channel": a breakdown said outright, whatever it is by.
_BREAKDOWN_VERB = re.compile(
    r"\b(?:break\w*\s+(?:[\w']+\s+){0,6}?down|broken\s+down|breakdown|split|grouped|segment\w*|bucket\w*)"
    r"\s+(?:by|per|into|across)\s+(?:the\s+|our\s+|its\s+|their\s+)?([a-z][\w-]*(?:\s+[a-z][\w-]*){0,2})",
    re.I,
)
#: "by customer age band", "per payment method": a breakdown by whatever the words after "by" name.
_BY_PHRASE = re.compile(
    r"\b(?:by|per)\s+(?:the\s+|our\s+|its\s+|their\s+|each\s+|every\s+)?([a-z][\w-]*(?:\s+[a-z][\w-]*){0,2})"
    r"(?!\s+of\b)",
    re.I,
)
#: Where the phrase a breakdown is by ends.
_PHRASE_END = re.compile(
    r"\s+(?:at|in|for|last|since|from|to|on|and|or|during|this|over|how|with|across|between|vs|versus|"
    r"so|then|please|until|till|the|we|did)\b.*$",
    re.I,
)
#: WordNet's kinds of thing a set is told apart by (a model, an age, a channel, a payment method).
_PROPERTY_SENSES = frozenset(
    {"attribute.n.02", "category.n.02", "kind.n.01", "class.n.01", "type.n.01", "method.n.01"}
)


def breakdown_unread(message: str, metric: DataMetric, metrics: Sequence[DataMetric] = ()) -> str | None:
    """What a breakdown the question asks for is by, when it is nothing the figure's rows are told
    apart by ("by phone model", "by customer age band"): the data cannot give it, and the figure over
    all rows would answer another question. None when no such breakdown is asked."""
    if breakdown_asked(message, metric) is not None:
        return None
    for found in _BREAKDOWN_VERB.finditer(message):
        return _PHRASE_END.sub("", found.group(1)).strip()
    for found in _BY_PHRASE.finditer(message):
        if re.match(r"[\w-]+\s+of\b", found.group(1)):
            continue  # "by way of", "by means of": how, not what by
        if found.group(0).lower().startswith("per") and _PER_AVERAGE.search(message):
            continue  # "avg training hours per person": one average
        if set(found.group(1).lower().split()) & {noun for nouns in _ENTITY_NOUNS.values() for noun in nouns}:
            continue  # "per person", "by store": the figure's own entities
        phrase = _PHRASE_END.sub("", found.group(1)).strip()
        if metric_mention(phrase, metrics).metric is not None:
            continue  # "rank our stores by attach rate": the figure they are ordered by
        if phrase and any(_names_a_property(word) for word in phrase.lower().split()):
            return phrase
    return None


@functools.cache
def _names_a_property(word: str) -> bool:
    kinds = {
        ancestor.name()
        for sense in wordnet().synsets(word, "n")[:3]
        for path in sense.hypernym_paths()
        for ancestor in path
    }
    return bool(kinds & _PROPERTY_SENSES)


def shape_asked(message: str) -> bool:
    """Whether ``message`` asks for a shape of answer (a statistic of the rows, a breakdown by a unit of
    time or an entity), whatever the figure: a question, since a goal's target is one figure."""
    if statistic_asked(message) is not None or _REPEATED.search(message) or _ADVERBIAL.search(message):
        return True
    # By a unit of time only: "for each store" also says who a goal is for ("a plan for each store").
    units = (_TIME_UNITS.get(found.group(1).lower().rstrip("s")) for found in _BY.finditer(message))
    return any(units) and not _PER_AVERAGE.search(message)


def first_few(message: str) -> int | None:
    """How many of a ranking the words ask for ("the bottom three stores", "top 5"), or None."""
    found = re.search(r"\b(?:top|bottom|best|worst|highest|lowest|leading)\s+(\w+)\b", message, re.I)
    if found is None:
        return None
    word = found.group(1)
    if word.isdigit():
        return int(word) if 1 < int(word) <= 50 else None
    for parsed in duckling_parse(word, ("number",)):
        value = parsed.get("value", {}).get("value")
        if isinstance(value, int | float) and float(value).is_integer() and 1 < value <= 50:
            return int(value)
    return None


#: The SQL key and order of each unit of time, over ``{t}`` (the time column, read in UTC).
_TIME_KEYS = {
    "month": ("to_char({t} AT TIME ZONE 'UTC', 'YYYY-MM')", "1"),
    "quarter": ("to_char({t} AT TIME ZONE 'UTC', 'YYYY-\"Q\"Q')", "1"),
    # A week is keyed by its first day in the window: the Monday before the window's first day would
    # name days no row of the answer is from.
    "week": ("to_char(greatest(date_trunc('week', {t} AT TIME ZONE 'UTC'), "
             "date_trunc('day', %(start)s::timestamptz AT TIME ZONE 'UTC')), 'YYYY-MM-DD')", "1"),
    "day": ("to_char({t} AT TIME ZONE 'UTC', 'YYYY-MM-DD')", "1"),
    "weekday": ("extract(isodow FROM {t} AT TIME ZONE 'UTC')::int::text", "min(extract(isodow FROM {t} AT TIME ZONE 'UTC'))"),
    "hour": ("extract(hour FROM {t} AT TIME ZONE 'UTC')::int::text", "min(extract(hour FROM {t} AT TIME ZONE 'UTC'))"),
}  # fmt: skip
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def breakdown_sql(metric: DataMetric, breakdown: Breakdown, where: str) -> str | None:
    """One statement giving ``key``, ``value`` and ``observations`` per group, with ``where`` (the
    question's own conditions, the window's ``%(start)s`` among them for a unit of time); None when
    the figure cannot be broken down that way (a unit of time of a snapshot)."""
    if breakdown.by in _TIME_KEYS:
        if metric.time_column is None:
            return None
        key, order = (part.format(t=metric.time_column) for part in _TIME_KEYS[breakdown.by])
        return (
            f"SELECT {key} AS key, {metric.expression} AS value, count(*) AS observations FROM {metric.table}"
            f"{where} GROUP BY 1 ORDER BY {order}"
        )
    if breakdown.by in metric.filters:
        column = metric.filters[breakdown.by]
        return (
            f"SELECT {column}::text AS key, {metric.expression} AS value, count(*) AS observations "
            f"FROM {metric.table}{where} GROUP BY {column} ORDER BY {column}"
        )
    if breakdown.by in metric.groups:
        entity, members = metric.groups[breakdown.by]
        keyed = metric.filters.get(entity)
        if keyed is None:
            return None
        return (
            f"SELECT grouped.value::text AS key, {metric.expression} AS value, count(*) AS observations "
            f"FROM {metric.table} JOIN ({members}) AS grouped ON grouped.member = {metric.table}.{keyed}"
            f"{where} GROUP BY grouped.value ORDER BY grouped.value"
        )
    return None


def key_said(breakdown: Breakdown, key: str) -> str:
    """A group's key as a reader says it ("Monday", "14:00", "Store 3")."""
    if breakdown.by == "weekday" and key.isdigit() and 1 <= int(key) <= 7:
        return WEEKDAY_NAMES[int(key) - 1]
    if breakdown.by == "hour" and key.isdigit():
        return f"{int(key):02d}:00-{int(key):02d}:59"
    if breakdown.by.endswith("_id"):
        return f"{breakdown.noun.title()} {key}"
    return key


#: Words that ask what part of a whole something is ("what share of", "what slice of the chain's
#: turnover did store 2 account for", "how much of July's takings went back as refunds").
_SHARE_ASKED = re.compile(
    r"\b(?:share|percentage|proportion|fraction|percent|slice|portion|part|cut)\s+of\b|\bwhat\s*%|%\s+of\b"
    r"|\baccount(?:s|ed|ing)?\s+for\b|\bhow\s+much\s+of\b",
    re.I,
)
#: Words every money total's name shares ("total revenue", "device revenue"): none of them says which part.
#: A store's part of every store's money: "of the whole chain's turnover", "did store 2 account for",
#: "store 2's share of".
_OF_EVERY_STORE = re.compile(
    r"\b(?:chain|company|business|network|estate|group|all\s+(?:the\s+|our\s+)?(?:stores|shops|branches)"
    r"|every\s+(?:store|shop|branch)|whole|entire|overall|combined|altogether)\b"
    r"|\baccount(?:s|ed|ing)?\s+for\b|'s\s+(?:share|slice|portion|part|cut)\b",
    re.I,
)
#: Where the words naming what a share is of end: at the verb or the word that names the part.
_WHOLE_ENDS = re.compile(
    r"\b(?:came|come|comes|coming|was|were|is|are|went|goes|go|did|does|do|that|which|from|made|makes|"
    r"account|accounts|accounted|ended|ends|had|has|got|belongs?)\b|[?,;]",
    re.I,
)
_MONEY_NAME_WORDS = frozenset(
    {
        "total",
        "revenue",
        "sale",
        "sales",
        "amount",
        "money",
        "takings",
        "value",
        "gross",
        "turnover",
        "taking",
    }
)
#: Words that say a figure is a share, of whatever it is a share of.
_SHARE_NAME_WORDS = frozenset({"share", "percentage", "proportion", "fraction", "percent", "rate", "ratio"})
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]*", re.I)
_SQL_WORDS = frozenset(
    {"coalesce", "sum", "avg", "count", "filter", "where", "float", "int", "nullif", "and", "or"}
)


def _base_forms(text: str) -> set[str]:
    return set().union(*(lemmas(word) for word in re.findall(r"[a-z]+", text.lower())))


def _summed(metric: DataMetric) -> str | None:
    """The amount a money total adds up (``device_amount``), None for any other figure."""
    if metric.unit != "currency" or (total := _SUM.match(metric.expression.strip())) is None:
        return None
    return total.group("x") or total.group("y")


def _columns(amount: str) -> frozenset[str]:
    return frozenset(word.lower() for word in _IDENTIFIER.findall(amount)) - _SQL_WORDS


def _own_words(metric: DataMetric, beside: Sequence[DataMetric]) -> set[str]:
    """The base forms of the words that name ``metric`` and none of ``beside`` (the accessory revenue's
    "accessory"), without the words every money total's name has."""
    own = _base_forms(" ".join((metric.name, *metric.aliases)))
    for other in beside:
        if other is not metric:
            own -= _base_forms(" ".join((other.name, *other.aliases)))
    return {word for word in own - _MONEY_NAME_WORDS - _SHARE_NAME_WORDS if len(word) > 2}


def money_share_asked(
    message: str, metrics: Sequence[DataMetric], store_id: int | None = None
) -> DataMetric | None:
    """The share of a money total a question asks for, as a figure of its own: the part of the money
    from a part of what was sold ("what share of store 8's revenue came from accessories"), the money of
    the rows with a flag ("what percentage of July's takings went back as refunds"), or one store's part
    of every store's money ("what slice of the chain's Q3 turnover did store 2 account for"). None when
    the question asks no share of money: a share of the sales ("what share of sales had an add-on") is
    a rate the data has by name."""
    if (asked := _SHARE_ASKED.search(message)) is None:
        return None
    totals = [m for m in metrics if _summed(m) is not None]
    if not totals:
        return None
    # The whole is what the share is said to be of ("of store 2's August accessory revenue"); the part
    # is named in the rest ("came from phone cases").
    end = _WHOLE_ENDS.search(message, asked.end())
    of_words = _base_forms(message[asked.end() : end.start() if end else len(message)])
    said = _base_forms(message[: asked.start()] + " " + message[end.start() if end else len(message) :])
    largest = max(totals, key=lambda m: len(_columns(_summed(m) or "")))
    named = [m for m in totals if _own_words(m, totals) & of_words]
    whole = min(named, key=lambda m: len(_columns(_summed(m) or ""))) if named else largest
    whole_amount = _summed(whole) or ""
    if not named and not (
        of_words & (_base_forms(" ".join((whole.name, *whole.aliases))) - {"total", "sale", "sales"})
        or of_words & {"money", "dollar", "cash", "value", "income"}
    ):
        return None  # no money is what the share is of
    for part in totals:
        amount = _summed(part) or ""
        if (
            part is whole
            or not _columns(amount) < _columns(whole_amount)
            or not (_own_words(part, totals) & said)
        ):
            continue
        return _share_of(whole, f"share of {whole.name} from {part.name}", f"sum({amount})")
    rates = [m for m in metrics if m.table == whole.table and m.unit == "ratio"]
    for rate in rates:
        found = _AVG.match(rate.expression.strip())
        flag = found.group("x") if found else ""
        if not _FLAG.match(flag) or not (_own_words(rate, rates) & said):
            continue
        column = flag.split("::")[0]
        name = f"share of {whole.name} from {column.replace('_', ' ')} sales"
        share = _share_of(whole, name, f"sum({whole_amount}) FILTER (WHERE {column})")
        return replace(share, lower_is_better=rate.lower_is_better)
    column = whole.filters.get("store_id")
    if store_id is None or column is None or not _OF_EVERY_STORE.search(message):
        return None  # "what share of store 2's revenue came from trained staff": a part no figure names
    name = f"Store {store_id}'s share of every store's {whole.name}"
    share = _share_of(whole, name, f"sum({whole_amount}) FILTER (WHERE {column} = {int(store_id)})")
    return replace(
        share, filters={entity: col for entity, col in whole.filters.items() if entity != "store_id"}
    )


def _share_of(whole: DataMetric, name: str, part: str) -> DataMetric:
    """``whole`` as the share ``part`` (an aggregate of its rows) is of it."""
    whole_amount = _summed(whole) or ""
    return replace(
        whole,
        name=name,
        aliases=(),
        expression=f"(coalesce({part}, 0)::float / nullif(sum({whole_amount}), 0))",
        unit="ratio",
        money=None,
        average=None,
        lower_is_better=False,
    )
