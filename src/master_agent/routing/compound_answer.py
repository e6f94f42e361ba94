"""The data handler for a message that may ask more than one thing: each question answered on its own by
``data_question``, and one reply whose data carries every question's figure, query and window.

It is a success only when every question is answered; otherwise it is partial and says which were not
(a figure the data lacks, a period outside it), and no question's missing answer is given a number.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from master_agent.capabilities.terms import (
    asks_money,
    changed_between,
    counted_rows,
    counted_unknown,
    entity_numbers_as_digits,
    figure_by_verb,
    metric_by_words,
    metric_mention,
    told_apart_by_unknown,
)
from master_agent.evolution.reuse import figure_by_meaning, unknown_by_meaning
from master_agent.routing.compound import Asked, asks_change, per_store, split_questions
from master_agent.routing.intent import message_entities
from master_agent.routing.queries import QueryAnswer, QueryRequest, data_question

#: A clause that asks a question of its own: its first word asks ("what did they spend").
_QUESTION = re.compile(r"^\s*(?:what|how|which|who)\b", re.I)


async def figure_named(request: QueryRequest, text: str) -> str | None:
    """The figure a clause names, read as the data handler reads figures (its name or alias, what the
    rows did, what they are called, money coming in), or data the tenant lacks named by meaning ("the
    footfall", "NPS"); None when it names neither."""
    text = entity_numbers_as_digits(text)
    metrics = request.metrics
    for reader in (figure_by_verb, counted_rows, metric_by_words):
        found = reader(text, metrics)
        if found is not None and found.metric is not None:
            return found.metric.name
    mention = metric_mention(text, metrics)
    if mention.metric is not None:
        return mention.metric.name
    if mention.unknown:
        return f"no {mention.unknown}"
    if thing := counted_unknown(text, metrics):
        return f"no {thing}"
    lacking = await unknown_by_meaning(
        text, request.knowledge.embedder, request.problems, request.problem_metrics, metrics
    )
    if lacking is not None and lacking.unknown:
        return f"no {lacking.unknown}"
    if asks_money(text):
        money = next((m.money for m in metrics if m.money), None)
        return money or "money"
    if _QUESTION.search(text):
        # "what did they spend in total?": a question of its own, its figure read by meaning.
        meant = await figure_by_meaning(
            text, request.knowledge.embedder, request.problems, request.problem_metrics, metrics
        )
        if meant is not None and meant.metric is not None:
            return meant.metric.name
    return None


def _valued(data: dict[str, Any]) -> bool:
    return data.get("outcome") in ("answer", "partial") and data.get("value") is not None


def _window_words(asked: Asked) -> str:
    return f" {asked.period}" if asked.period else ""


async def _derived(request: QueryRequest, asked: Asked, base: dict[str, Any]) -> QueryAnswer:
    """A question about the figure of the question before: which store led, the store's place among
    all of them, or its share of the whole."""
    names = {m.name for m in request.metrics}
    # The figure the question names itself ("what share of the chain's turnover"), else the one before.
    own = await figure_named(request, asked.text)
    metric = own if own in names else str(base.get("metric") or "")
    if metric not in names:
        return QueryAnswer(
            text=f"I could not read which figure {asked.text!r} is about.",
            handler="data",
            answered=False,
            data={"outcome": "clarify", "missing": [asked.text]},
        )
    window = _window_words(asked)
    if asked.role == "share":
        text = f"what share of the whole chain's {metric}{window} was store {asked.store}'s"
        return await data_question(replace(request, message=text, entities=message_entities(text)))
    low = any(word in asked.text.lower().split() for word in ("least", "lowest", "fewest", "bottom", "worst"))
    text = f"which store had the {'lowest' if low and asked.role == 'winner' else 'highest'} {metric}{window}"
    answer = await data_question(replace(request, message=text, entities=message_entities(text)))
    if asked.role == "winner" or not answer.data.get("ranking"):
        return answer
    # The store's place: 1 is the highest figure (the ranking lists every store).
    ranking = sorted(
        (row for row in answer.data["ranking"] if row.get("value") is not None),
        key=lambda row: float(row["value"]),
        reverse=True,
    )
    place = next((i for i, row in enumerate(ranking, 1) if int(row["entity"]) == asked.store), None)
    if place is None:
        return QueryAnswer(
            text=f"Store {asked.store} has no {metric}{window}, so it has no place.",
            handler="data",
            answered=False,
            data={"outcome": "no_data", "missing": [f"store {asked.store}'s place"]},
        )
    data = {
        **answer.data,
        "rank": place,
        "of": len(ranking),
        "params": {"store_id": str(asked.store)},
    }
    return QueryAnswer(
        text=f"Store {asked.store} ranked {place} of {len(ranking)} by the {metric}{window} "
        f"(1 = highest).\n{answer.text}",
        handler="data",
        answered=answer.answered,
        data=data,
    )


def _compared(asked: Sequence[Asked], answers: Sequence[QueryAnswer]) -> dict[str, Any] | None:
    """The change between the figure asked and its reference (a later period against an earlier one,
    else the first against the second): its direction only when the rows settle it. A figure counted
    over part of its period is a lower bound of a sum or count, which settles a direction only when the
    missing days could not reverse it."""
    pairs = [i for i, one in enumerate(asked) if one.role == "period" and one.of is not None]
    if not pairs:
        return None
    second = pairs[0]
    first = asked[second].of
    assert first is not None
    one, other = answers[first].data, answers[second].data
    if not (_valued(one) and _valued(other)):
        return None
    a, b = first, second
    if _later(other, one):
        a, b = second, first
    value_a, value_b = float(answers[a].data["value"]), float(answers[b].data["value"])
    change = value_a - value_b
    direction: str | None = "up" if change > 0 else "down" if change < 0 else None
    lower_bound = {
        index
        for index in (a, b)
        if not answers[index].answered and answers[index].data.get("outcome") == "answer"
    }
    if lower_bound and not _settled(change, a in lower_bound, b in lower_bound):
        direction = None
    relative = change / value_b if value_b else None
    return {
        "parts": [a, b],
        "direction": direction,
        "change": change,
        "relative": relative,
        "settled": direction is not None,
    }


def _later(one: dict[str, Any], other: dict[str, Any]) -> bool:
    first, second = (one.get("window") or {}).get("start"), (other.get("window") or {}).get("start")
    return bool(first and second and first > second)


def _settled(change: float, a_partial: bool, b_partial: bool) -> bool:
    """Whether missing days (which can only add to a partial figure) could not reverse ``change``."""
    if a_partial and b_partial:
        return False
    if b_partial:
        return change < 0  # the reference can only grow: already above, it stays above
    return change > 0


def _with_direction(answer: QueryAnswer, asked: bool) -> QueryAnswer:
    """A change of two periods with its direction, when asked: the later against the earlier, said
    only when both periods are wholly in the data (a figure over part of one could be reversed)."""
    periods = answer.data.get("periods")
    if not asked or not isinstance(periods, dict) or answer.data.get("value") is None:
        return answer
    change = float(answer.data["value"])
    settled = answer.answered and change != 0
    direction = ("up" if change > 0 else "down") if settled else None
    first = next(iter(periods.values()), None)
    compare = {
        "parts": [1, 0],
        "direction": direction,
        "change": change,
        "relative": change / float(first) if first else None,
        "settled": settled,
    }
    return answer.model_copy(
        update={"data": {**answer.data, "compare": compare, "answered": answer.answered}}
    )


def _said(part: Asked, answer: QueryAnswer) -> str:
    first = answer.text.split("\nQuery:")[0].strip()
    return f"{part.text}: {first}"


async def compound_data_question(request: QueryRequest) -> QueryAnswer:
    """Every question the message asks of the data, each answered by ``data_question``."""
    if told_apart_by_unknown(request.message, request.metrics):
        return await data_question(request)  # "paid by card vs cash": one figure told apart, refused whole
    asked = await split_questions(request.message, lambda text: figure_named(request, text))
    if len(asked) == 1:
        asked = per_store(request.message) or asked
    if len(asked) == 1:
        return await data_question(request)
    if (
        len(asked) == 2
        and asked[1].role == "period"
        and changed_between(request.message, request.clock.now()) is not None
    ):
        # "June vs July", "Q3 against Q2 - better or worse?": the two periods the change reader reads,
        # answered as one change (each period's figure, the later minus the earlier).
        return _with_direction(await data_question(request), asks_change(request.message))
    answers: list[QueryAnswer] = []
    for one in asked:
        if one.role in ("winner", "rank", "share") and one.of is not None:
            answers.append(await _derived(request, one, answers[one.of].data))
        else:
            answers.append(
                await data_question(replace(request, message=one.text, entities=message_entities(one.text)))
            )
    return compose(request.message, asked, answers)


def compose(message: str, asked: Sequence[Asked], answers: Sequence[QueryAnswer]) -> QueryAnswer:
    """One reply for the questions ``asked`` and their ``answers``: every part's data in ``parts``, the
    first part with a figure mirrored at the top (what a reader of one figure shows), and what was not
    answered named in ``missing``."""
    parts: list[dict[str, Any]] = []
    missing: list[str] = []
    for one, answer in zip(asked, answers, strict=True):
        parts.append({**answer.data, "question": one.text, "role": one.role, "answered": answer.answered})
        if not answer.answered:
            why = (
                "; ".join(str(item) for item in answer.data.get("missing") or [])
                or answer.text.split("\n")[0]
            )
            missing.append(f"{one.text}: {why}")
    compare = _compared(asked, answers) if asks_change(message) else None
    if compare is not None and compare["direction"] is None and compare["settled"] is False:
        missing.append("the direction of the change: the days the data lacks could reverse it")
    valued = [part for part in parts if _valued(part)]
    if not missing:
        outcome = "answer"
    elif valued:
        outcome = "partial"
    else:
        kinds = {str(part.get("outcome")) for part in parts}
        outcome = (
            "no_data" if kinds == {"no_data"} else "out_of_scope" if "out_of_scope" in kinds else "clarify"
        )
    first = valued[0] if valued else parts[0]
    lines = [
        f"{i}. {_said(one, answer)}" for i, (one, answer) in enumerate(zip(asked, answers, strict=True), 1)
    ]
    if compare is not None:
        a, b = compare["parts"]
        moved = compare["direction"] or "not settled (the data covers a period in part)"
        relative = f" ({compare['relative']:+.1%})" if compare["relative"] is not None else ""
        lines.append(f"Change, {a + 1} against {b + 1}: {compare['change']:+,.2f}{relative}; {moved}.")
    if missing:
        lines.append("Not answered: " + "; ".join(missing))
    queries = [f"Query {i}: {part['sql']}" for i, part in enumerate(parts, 1) if part.get("sql")]
    data: dict[str, Any] = {
        "outcome": outcome,
        "metric": first.get("metric"),
        "value": first.get("value") if _valued(first) else None,
        "sql": first.get("sql"),
        "parts": parts,
        "missing": missing,
        "verification": [check for part in parts for check in part.get("verification") or []],
    }
    if compare is not None:
        data["compare"] = compare
    return QueryAnswer(
        text="\n".join([*lines, *queries]),
        handler="data",
        answered=not missing,
        data=data,
    )
