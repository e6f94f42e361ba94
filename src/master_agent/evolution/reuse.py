"""Reuse: the master agent's first step looks for a proven pattern before researching anything.

Reuse is decided on the problem, not the wording. The goal is cut to a short problem statement (its
entities, numbers and deadline removed: "Help me get more accessory sales per handset at Store 8 over
the next two months" -> "help me get more accessory sales per handset"), which is embedded. When the
tenant's pack names the problems its goals can be about (one description per metric), the goal is
about the metric whose description is nearest, and only patterns of that metric qualify; otherwise a
pattern must be near the statement (cosine similarity at least ``MASTER_AGENT_REUSE_MIN_SIMILARITY``,
by default the embedder's own threshold). A qualifying pattern must also be confident enough
(``MASTER_AGENT_REUSE_MIN_CONFIDENCE``, its outcome-updated confidence) and applicable: the same
domain, every entity it needs known (from the goal, the request, or the tenant's defaults), and its
precondition true of them, checked once by the pack (for retail: the learned driver is the strongest
one at the goal's store, in the same direction). Only the pattern travels: its ``reuse`` values (the
driver to suspect, the intervention that worked) are taken as known; every figure (the root cause's
statistics, the baseline, the expected outcome) is measured again on this store's and tenant's data.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from master_agent.capabilities.spec import DataMetric
from master_agent.capabilities.terms import DAYS_OF_WEEK, MetricMention
from master_agent.capabilities.tools.senses import phrases
from master_agent.evolution.knowledge import KnowledgeStore, PatternMatch
from master_agent.models.embeddings import Embedder
from master_agent.settings import Settings

#: Parts of a goal that name its entity, size or deadline rather than its problem.
_NOT_THE_PROBLEM = [
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\b(?:store|branch|shop|location|client|customer|account)\s+#?\d+(?:'s)?",
        # (?<!\d): a number is read from its first digit (from each of a long run's digits, quadratic).
        r"(?<!\d)[-+]?\d+(?:[.,]\d+)?\s*(?:%|percent\b|per\s*cent\b|points?\b|pts\b|pp\b)",
        r"\b(?:within|in|over|by|during|for|inside)\s+(?:the\s+)?(?:next\s+|coming\s+)?"
        r"(?:\d+|a|an|one|two|three|four|five|six|eight|ten|twelve)\s+(?:days?|weeks?|months?|quarters?|years?)\b",
        r"\b(?:this|next|the\s+next|the\s+coming)\s+(?:week|month|quarter|year|season)\b",
        r"\bby\s+(?:spring|summer|autumn|fall|winter|year[- ]end|the\s+end\s+of\s+\w+|q[1-4])\b",
        r"\b(?:double|triple)\s+it\b",
        r"\b\d+\b",
    )
]
_PREPOSITION = r"(?:at|in|for|by|of|on|to|within|over)"
_DANGLING = re.compile(rf"\b{_PREPOSITION}\b(?=(?:\s+{_PREPOSITION}\b)*\s*$)")
#: Embeddings of the packs' problem descriptions, by embedder and descriptions (made once).
_PROBLEM_VECTORS: dict[tuple[str, tuple[tuple[str, str], ...]], np.ndarray] = {}

logger = logging.getLogger(__name__)

Precondition = Callable[[dict[str, Any], dict[str, Any]], Awaitable[bool]]
"""(pattern's precondition, the goal's known entities) -> whether it holds."""


def problem_statement(goal: str) -> str:
    """The goal without its entities, numbers and deadline: what is wrong, in the user's words."""
    text = goal
    for pattern in _NOT_THE_PROBLEM:
        text = pattern.sub(" ", text)
    text = re.sub(r"[^\w\s'-]", " ", text)
    text = re.sub(r"\s+", " ", text).strip().lower()
    # Prepositions left without their object ("at by" of "at Store 2 by 15 percent").
    text = _DANGLING.sub("", text)
    return re.sub(r"\s+", " ", text).strip() or goal.strip().lower()


async def metric_of(
    embedder: Embedder, problems: Sequence[tuple[str, str]], statement_vector: Sequence[float]
) -> str:
    """The metric whose problem description is nearest the statement (cosine: vectors are unit)."""
    return (await nearest_problems(embedder, problems, statement_vector))[0][0]


async def nearest_problems(
    embedder: Embedder, problems: Sequence[tuple[str, str]], statement_vector: Sequence[float]
) -> list[tuple[str, float]]:
    """Every problem with its cosine similarity to the statement, nearest first."""
    key = (embedder.model_name, tuple(problems))
    cards = _PROBLEM_VECTORS.get(key)
    if cards is None:
        cards = _PROBLEM_VECTORS[key] = np.asarray(await embedder.embed([text for _, text in problems]))
    similarities = cards @ np.asarray(statement_vector)
    order = np.argsort(-similarities)
    return [(problems[int(i)][0], float(similarities[int(i)])) for i in order]


#: A text whose words name no figure is placed by meaning only when its nearest problem description is
#: this similar (cosine) and this much nearer than the next: below, it is left open.
TOPIC_MIN_SIMILARITY = 0.22
TOPIC_MARGIN = 0.05


async def figure_by_meaning(
    text: str,
    embedder: Embedder | None,
    problems: Sequence[tuple[str, str]],
    problem_metrics: Mapping[str, str],
    metrics: Sequence[DataMetric],
    *,
    min_similarity: float = TOPIC_MIN_SIMILARITY,
) -> MetricMention | None:
    """The figure a goal or question is about by meaning, for words that name none of the data's:
    the nearest of the pack's problem descriptions and the data's figures (by their names and
    aliases), if at least ``min_similarity`` close and clearly nearer than the nearest that means
    something else (a problem the data has no figure for is an unknown, named by the problem). None:
    nothing stands out."""
    if embedder is None or len(problems) < 2:
        return None
    by_name = {metric.name: metric for metric in metrics}
    candidates = _cards(problems, metrics)

    def meaning(key: str) -> str:
        return _meaning(key, problem_metrics)

    [vector] = await embedder.embed([problem_statement(text)])
    ranked = await nearest_problems(embedder, candidates, vector)
    nearest, similarity = ranked[0]
    rival = next((score for key, score in ranked[1:] if meaning(key) != meaning(nearest)), 0.0)
    if similarity < min_similarity or similarity - rival < TOPIC_MARGIN:
        return None
    resolved = meaning(nearest)
    metric = by_name.get(resolved)
    return MetricMention(metric=metric, unknown=None if metric else nearest.replace("_", " "))


def _cards(problems: Sequence[tuple[str, str]], metrics: Sequence[DataMetric]) -> list[tuple[str, str]]:
    """The pack's problem descriptions and the data's figures (``figure:`` and the name), to place by."""
    return [
        *problems,
        *((f"figure:{m.name}", f"{m.name}: {m.description or ', '.join(m.aliases)}") for m in metrics),
    ]


def _meaning(key: str, problem_metrics: Mapping[str, str]) -> str:
    """What a card resolves to: a figure of the data, or ``problem:`` a problem it has no figure for."""
    if key.startswith("figure:"):
        return key.removeprefix("figure:")
    return problem_metrics.get(key) or f"problem:{key}"


#: A goal's words the data has no figure for are read as one of its figures by meaning only when those
#: words alone are this close (cosine) to it. all-MiniLM-L6-v2: on the eval-truth tuning goals no such
#: reading was right; "overtime hours" is 0.37 from the average training hours and "profit" 0.49 from
#: the total revenue (both wrong), "products being returned" 0.77 from returns (right).
NAMED_MIN_SIMILARITY = 0.5
#: By embedder: (least cosine similarity, least lead) of a phrase of a request over the problem the data
#: has no figure for nearest it, and of that problem over every figure of the data, for the phrase to
#: name data the tenant lacks (an embedder without measured values reads nothing). all-MiniLM-L6-v2, on
#: the 265 tuning cases of ``benchmarks/eval_truth`` (every name-shaped phrase of one to three words):
#: out-of-scope cases led by 0.22-0.39 at 0.34-0.72 ("staff turnover" 0.22 at 0.72, "margin" 0.31 at
#: 0.49, "nps" 0.26 at 0.34); the answerable cases led by at most 0.21 at 0.30 ("walk" out with
#: something extra, near foot traffic) and 0.18 at 0.55 ("when customers", near customer experience).
UNKNOWN_MIN = {"all-MiniLM-L6-v2": (0.32, 0.2)}


async def unknown_by_meaning(
    text: str,
    embedder: Embedder | None,
    problems: Sequence[tuple[str, str]],
    problem_metrics: Mapping[str, str],
    metrics: Sequence[DataMetric],
    *,
    days_kept: bool = False,
) -> MetricMention | None:
    """Data the tenant lacks that ``text`` names in words that may sound like a figure it has ("staff
    turnover" is no takings; "gross margin" on devices is no device revenue): a phrase of it whose
    nearest card is a problem the data has no figure for, clearly nearer than every figure. Phrases are
    runs of one to three words with no function word (the shape of a thing's name: "customers to buy"
    is none); one that is exactly a figure's name or alias ("turnover", "staff") is that figure.
    None: nothing the data lacks is named, or the embedder has no measured margin."""
    floor = UNKNOWN_MIN.get(embedder.model_name) if embedder is not None else None
    if embedder is None or floor is None or len(problems) < 2:
        return None
    least, margin = floor
    names = {_words(name) for metric in metrics for name in (metric.name, *metric.aliases)}
    # ``days_kept``: the caller keeps the rows of the days of the week said, so "weekend attach rate"
    # is the attach rate of some days (a goal cannot be held to them: there it stays data it lacks).
    offered = [
        phrase
        for phrase in phrases(problem_statement(text), nouns_only=True)
        if _words(phrase) not in names
        and not (days_kept and tuple(word for word in _words(phrase) if word not in DAYS_OF_WEEK) in names)
    ]
    if not offered:
        return None
    cards = _cards(problems, metrics)
    key = (embedder.model_name, tuple(cards))
    vectors = _PROBLEM_VECTORS.get(key)
    if vectors is None:
        vectors = _PROBLEM_VECTORS[key] = np.asarray(await embedder.embed([card for _, card in cards]))
    similarities = np.asarray(await embedder.embed(offered)) @ vectors.T
    lacking = [
        i for i, (card, _) in enumerate(cards) if _meaning(card, problem_metrics).startswith("problem:")
    ]
    figures = [i for i in range(len(cards)) if i not in lacking]
    if not lacking or not figures:
        return None
    best: tuple[float, str] | None = None
    for phrase, row in zip(offered, similarities, strict=True):
        nearest = int(np.argmax(row))
        if nearest not in lacking:
            continue
        lead = float(row[nearest] - row[figures].max())
        if row[nearest] >= least and lead >= margin and (best is None or lead > best[0]):
            best = (lead, phrase)
    # Named in the user's words ("staff turnover"): the problem's name ("staff") may be data it has.
    return None if best is None else MetricMention(metric=None, unknown=best[1])


_TOKEN = re.compile(r"[a-z][a-z0-9'-]*")


def _words(phrase: str) -> tuple[str, ...]:
    """A phrase's words without their plural "s" ("attach rates" is "attach rate")."""
    return tuple(word.rstrip("s") for word in _TOKEN.findall(phrase.lower()))


MARK_REUSED = """
UPDATE village_knowledge SET reuse_count = reuse_count + 1, last_used_at = now() WHERE pattern_id = %s
"""
ANY_VISIBLE = """
SELECT EXISTS (SELECT 1 FROM village_knowledge WHERE embedding_model = %s AND confidence >= %s
               AND (visibility = 'shared' OR tenant_id = %s)) AS found
"""


class ReusedPattern(BaseModel):
    """What the solution reports about the pattern it reused."""

    pattern_id: str
    pattern_name: str
    similarity: float
    confidence: float
    success_rate: float | None
    reuse_count: int
    """Uses before this one."""
    visibility: str
    values: dict[str, Any]
    """What was taken as known from the pattern."""


def applicable(pattern: PatternMatch, domain: str | None, known: dict[str, Any]) -> bool:
    applicability = pattern.applicability
    if applicability.get("domain") not in (None, domain):
        return False
    return all(key in known for key in applicability.get("requires") or [])


def pattern_values(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored pattern's values without its figures: patterns learned before only the pattern
    travelled hold the original store's whole root cause, of which the driver is the pattern."""
    values = {key: value for key, value in stored.items() if key != "root_cause"}
    root_cause = stored.get("root_cause")
    if isinstance(root_cause, dict) and root_cause.get("driver"):
        values.setdefault("suspected_driver", root_cause["driver"])
    return values


async def find_reusable(
    knowledge: KnowledgeStore,
    settings: Settings,
    tenant_id: str,
    domain: str | None,
    goal: str,
    known: dict[str, Any],
    *,
    problems: Sequence[tuple[str, str]] = (),
    precondition: Precondition | None = None,
) -> ReusedPattern | None:
    """The best qualifying pattern for ``goal`` (its use counted), or None."""
    async with knowledge.pool.connection() as conn:
        row = await (
            await conn.execute(
                ANY_VISIBLE, (knowledge.embedder.model_name, settings.reuse_min_confidence, tenant_id)
            )
        ).fetchone()
    if not row or not row["found"]:
        return None  # nothing to reuse: no need to embed the goal at all
    [vector] = await knowledge.embedder.embed([problem_statement(goal)])
    metric = await metric_of(knowledge.embedder, problems, vector) if problems else None
    threshold = settings.reuse_min_similarity
    if threshold is None:
        threshold = knowledge.embedder.reuse_min_similarity
    candidates = await knowledge.search_vector(tenant_id, vector, limit=5)
    for pattern in candidates:
        if metric is not None:
            if pattern.applicability.get("metric") != metric:
                logger.debug("reuse: %r is about %s, not %s", goal, metric, pattern.pattern_name)
                continue
        elif pattern.similarity < threshold:
            break
        if pattern.confidence < settings.reuse_min_confidence or not applicable(pattern, domain, known):
            logger.debug("reuse: %s not confident or applicable for %r", pattern.pattern_name, goal)
            continue
        values = pattern_values(dict((pattern.intervention or {}).get("reuse") or {}))
        if not values:
            continue
        if precondition is not None and not await precondition(
            dict(pattern.applicability.get("precondition") or {}), known
        ):
            logger.debug("reuse: the precondition of %s fails for %r", pattern.pattern_name, goal)
            continue
        async with knowledge.pool.connection() as conn:
            await conn.execute(MARK_REUSED, (pattern.pattern_id,))
        return ReusedPattern(
            pattern_id=str(pattern.pattern_id),
            pattern_name=pattern.pattern_name,
            similarity=round(pattern.similarity, 4),
            confidence=pattern.confidence,
            success_rate=pattern.success_rate,
            reuse_count=pattern.reuse_count,
            visibility=pattern.visibility,
            values=values,
        )
    return None


#: By embedder: (least cosine similarity, least lead over the next) of the words the money is said to come
#: from over a money total's card, for the money asked to be that total. all-MiniLM-L6-v2, measured on the
#: retail totals: "accessories" 0.51 (next 0.42), "phones" 0.51 (0.35), "devices" 0.56 (0.48); words no
#: figure is the money of stay under 0.30 ("warranties" 0.23, "insurance" 0.29, "gift cards" 0.29), and
#: kinds of accessory under 0.33 ("cases" 0.16, "phone cases" 0.32 nearest device revenue): unread.
SOURCE_MIN = {"all-MiniLM-L6-v2": (0.45, 0.06)}


async def money_total_of(
    source: str, embedder: Embedder | None, totals: Sequence[DataMetric]
) -> DataMetric | None:
    """The money total that is the money from ``source`` ("accessories": the accessory revenue), when
    it stands out by meaning; None: not read (or no embedder with measured values)."""
    floor = SOURCE_MIN.get(embedder.model_name) if embedder is not None else None
    if embedder is None or floor is None or not totals:
        return None
    [vector] = await embedder.embed([source])
    cards = [
        (metric.name, f"{metric.name}: {metric.description or ', '.join(metric.aliases)}")
        for metric in totals
    ]
    ranked = await nearest_problems(embedder, cards, vector)
    (nearest, similarity), rival = ranked[0], (ranked[1][1] if len(ranked) > 1 else 0.0)
    if similarity < floor[0] or similarity - rival < floor[1]:
        return None
    return next(metric for metric in totals if metric.name == nearest)
