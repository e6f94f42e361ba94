"""Discovery: the tenant's agents that may serve a message, with seed 003's parts: skill match,
domain, historical success rate and recency of the last success.

Only what the message says decides: an agent's ``score`` is its relevance, the trained relevance
head's probability that it is the agent asked for (``routing.relevance``), or without the head (another
embedder) 0.75 skill + 0.25 domain (seed 003's 0.6 : 0.2); success rate and recency (``usage``) order
agents of equal relevance only.
Summed in (seed 003's 0.1 + 0.1), they moved a message's routing as agents got used: a never-used
agent topped out at 0.85 and a second pass minutes later changed six of forty decisions (issue 42).

Agents come from the tenant's capabilities (its packs' agents; tenant-defined agents join the same
registry). What is slow to get (embeddings of each agent's skills, its success history) is cached per
tenant for ``MASTER_AGENT_DISCOVERY_TTL_S`` and keyed by the tenant's capability version, so a change of
capabilities is seen on the next message.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
from psycopg_pool import AsyncConnectionPool

from master_agent.capabilities.tools.lexicon import available, wordnet
from master_agent.evolution.clock import Clock
from master_agent.models.embeddings import Embedder
from master_agent.routing.intent import message_vector, strip_entities, text_vectors
from master_agent.routing.intent_head import domain_shares, relevance_head
from master_agent.routing.models import Candidate, IntentAnalysis
from master_agent.routing.relevance import AgentTexts, RelevanceHead, pair_features, stem_weights, stems

SKILL_WEIGHT, DOMAIN_WEIGHT = 0.75, 0.25
#: Cosine similarity between a message and an agent's best skill that counts as no match / full match.
SKILL_FLOOR, SKILL_FULL = 0.45, 0.7
#: The skill match a pack's master agent gets from a certain domain head (see ``discover``): picked on
#: the validation split.
DOMAIN_SKILL = 0.6
#: Least relevance of an agent that counts as able to serve a message at all (seed 003: "no matches";
#: seed 003's 0.5 with a never-used agent's usage parts taken out).
MIN_CANDIDATE_SCORE = 0.56
#: A success this recent counts fully; older ones fade to nothing at ``RECENCY_HORIZON_DAYS``.
RECENCY_FULL_DAYS, RECENCY_HORIZON_DAYS = 7.0, 90.0
SUCCESS_REASONS = ("completed", "progress_threshold")

AGENT_HISTORY = """
SELECT agent, count(*) AS runs,
       count(*) FILTER (WHERE reason = ANY(%(success)s) OR reason LIKE 'escalated:%%:approve') AS successes,
       max(created_at) FILTER (WHERE reason = ANY(%(success)s) OR reason LIKE 'escalated:%%:approve')
           AS last_success
FROM termination_log WHERE tenant_id = %(tenant_id)s
GROUP BY agent
"""


@dataclass(frozen=True, kw_only=True)
class AgentCard:
    """What the front door knows of one agent."""

    name: str
    description: str
    skills: tuple[str, ...]
    domain: str
    runnable: bool
    """Discovery offers it for a message (it has skills); otherwise it is only a part of another."""
    addressable: bool = True
    """``@name`` can hand it a message: a runnable agent, or a part whose arguments a chat message fills
    (its text and entities), not one that needs another agent's results."""
    required_entities: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    """Messages users sent it (a pack's master agent: ``routing.intent_head.master_examples``),
    matched like its skills."""
    refused: tuple[str, ...] = ()
    """Messages users sent its tenant that no agent of its pack served (a pack's master agent:
    ``routing.intent_head.refused_examples``): the relevance head weighs a message's nearness to them
    against its nearness to what the agents serve."""
    source: str = "pack"
    version: int | None = None


@dataclass(frozen=True)
class AgentHistory:
    runs: int
    successes: int
    last_success: datetime | None


@dataclass
class _TenantIndex:
    expires: float
    cards: list[AgentCard]
    vectors: dict[str, list[list[float]]]
    history: dict[str, AgentHistory]
    _matrices: dict[str, np.ndarray] = field(default_factory=dict)
    _texts: tuple[list[AgentTexts], dict[str, float]] | None = None

    def matrix(self, name: str) -> np.ndarray:
        found = self._matrices.get(name)
        if found is None:
            found = self._matrices[name] = np.asarray(self.vectors[name], dtype=np.float64)
        return found

    def agent_texts(self) -> tuple[list[AgentTexts], dict[str, float]]:
        """The runnable agents as the relevance head reads them, and their stems' weights."""
        if self._texts is None:
            agents = [
                agent_texts(card, self.matrix(card.name))
                for card in self.cards
                if self.vectors.get(card.name)
            ]
            self._texts = agents, stem_weights([agent.stems for agent in agents])
        return self._texts


def agent_texts(card: AgentCard, vectors: np.ndarray) -> AgentTexts:
    """``card`` for the relevance head; ``vectors``: its description's, skills', examples' and refused
    messages' embeddings in that order (as discovery's index keeps them)."""
    spec = 1 + len(card.skills)
    served = spec + len(card.examples)
    return AgentTexts(
        name=card.name,
        pack=card.source == "pack",
        domain=card.domain,
        spec=vectors[:spec],
        examples=vectors[spec:served],
        refused=vectors[served:],
        stems=stems(" ".join((card.name, card.description, *card.skills))),
    )


class Discovery:
    """Scores a tenant's agents for a message; one per process (its cache is per tenant)."""

    def __init__(
        self, pool: AsyncConnectionPool[Any], embedder: Embedder, clock: Clock, ttl_s: float
    ) -> None:
        self.pool = pool
        self.embedder = embedder
        self.clock = clock
        self.ttl_s = ttl_s
        self._index: dict[tuple[str, int], _TenantIndex] = {}
        self.builds = 0

    def invalidate(self, tenant_id: str) -> None:
        for key in [key for key in self._index if key[0] == tenant_id]:
            del self._index[key]

    async def index(
        self, tenant_id: str, capability_version: int, cards: Sequence[AgentCard]
    ) -> _TenantIndex:
        key = (tenant_id, capability_version)
        found = self._index.get(key)
        if found is not None and found.expires > time.monotonic():
            return found
        self.invalidate(tenant_id)
        texts: list[str] = []
        owners: list[str] = []
        for card in cards:
            if not card.runnable:
                continue
            for text in (card.description, *card.skills, *card.examples, *card.refused):
                texts.append(strip_entities(text))
                owners.append(card.name)
        vectors: dict[str, list[list[float]]] = {}
        for owner, vector in zip(owners, await text_vectors(self.embedder, texts), strict=True):
            vectors.setdefault(owner, []).append(vector)
        async with self.pool.connection() as conn:
            cursor = await conn.execute(
                AGENT_HISTORY, {"tenant_id": tenant_id, "success": list(SUCCESS_REASONS)}
            )
            history = {
                row["agent"]: AgentHistory(int(row["runs"]), int(row["successes"]), row["last_success"])
                for row in await cursor.fetchall()
            }
        built = _TenantIndex(time.monotonic() + self.ttl_s, list(cards), vectors, history)
        self._index[key] = built
        self.builds += 1
        return built

    async def discover(
        self,
        tenant_id: str,
        capability_version: int,
        cards: Sequence[AgentCard],
        message: str,
        intent: IntentAnalysis,
    ) -> list[Candidate]:
        """Agents whose skills match the message, best first (none: nothing here serves it)."""
        index = await self.index(tenant_id, capability_version, cards)
        query = await message_vector(self.embedder, message)
        query_array = np.asarray(query, dtype=np.float64)
        shares = domain_shares(self.embedder.model_name, query, message)
        head = relevance_head(self.embedder.model_name)
        if head is not None:
            return await self._relevant(index, head, message, query_array, shares)
        likeliest = max(shares, key=lambda name: shares[name]) if shares else None
        now = self.clock.now()
        candidates: list[Candidate] = []
        for card in index.cards:
            vectors = index.vectors.get(card.name)
            if not vectors:
                continue
            similarity = float(np.max(index.matrix(card.name) @ query_array))
            skill = min(1.0, max(0.0, (similarity - SKILL_FLOOR) / (SKILL_FULL - SKILL_FLOOR)))
            if names_agent(message, card.name):
                skill = 1.0  # "Debug lead_qualifier: ...", "run the staff leaderboard for store 2"
            elif card.source == "pack" and likeliest is not None:
                # A pack's master agent does whatever its domain asks: the trained domain head knows
                # the many phrasings its few skills miss. Relative to the likeliest domain (``other``:
                # none of the packs'), so a message the head gives to this pack is its work however
                # the probability spreads; discounted, so a tenant's own agent whose description
                # matches the message outranks the generalist.
                skill = max(skill, DOMAIN_SKILL * shares.get(card.domain, 0.0) / shares[likeliest])
            if skill <= 0.0:
                continue
            # The domain head's verdict counts as the intent's for a pack's agent: the intent's domain
            # is its nearest exemplar's, which a new wording easily misses.
            said = intent.domain is None or intent.domain == card.domain
            domain = 1.0 if said or (card.source == "pack" and likeliest == card.domain) else 0.0
            score = round(SKILL_WEIGHT * skill + DOMAIN_WEIGHT * domain, 3)
            if score < MIN_CANDIDATE_SCORE:
                continue
            performance, recency = usage_parts(index.history.get(card.name), now)
            parts = {
                "skill": round(skill, 3),
                "domain": domain,
                "performance": round(performance, 3),
                "recency": round(recency, 3),
                "similarity": round(similarity, 3),
            }
            candidates.append(
                Candidate(name=card.name, score=score, parts=parts, description=card.description)
            )
        return by_relevance(candidates)

    async def _relevant(
        self,
        index: _TenantIndex,
        head: RelevanceHead,
        message: str,
        query: np.ndarray,
        shares: dict[str, float],
    ) -> list[Candidate]:
        """Discovery by the trained relevance head: each agent's probability of being the one asked
        for is its score; those below the head's floor cannot serve the message. A message that
        describes the agent it wants ("the report that lists what customers handed back", "the
        floor-staff ranking agent") is read by that description when it points to one of the tenant's
        own agents: the rest of the message (a store, a period, what to do) reads like the generalist's
        work."""
        agents, weights = index.agent_texts()
        if not agents:
            return []
        named = [names_agent(message, agent.name) for agent in agents]
        features = pair_features(
            query, stems(strip_entities(message) or message), agents, shares, weights, named
        )
        probabilities = head.probabilities(features)
        described = described_agent(message)
        pointed = None
        if described is not None and not any(named):
            # A description says what an agent is: read against what each agent says it does (its
            # description and skills), not against what users asked it (a pack's examples).
            specs = [replace(agent, examples=agent.examples[:0]) for agent in agents]
            vector = np.asarray(await message_vector(self.embedder, described), dtype=np.float64)
            found = pair_features(vector, stems(described), specs, shares, weights, named)
            by_description = head.probabilities(found)
            best = int(np.argmax(by_description))
            if not agents[best].pack and by_description[best] >= head.floor:
                features, probabilities, pointed = found, by_description, agents[best].name
        now = self.clock.now()
        candidates = []
        descriptions = {card.name: card.description for card in index.cards}
        for agent, row, probability in zip(agents, features, probabilities, strict=True):
            if probability < head.floor:
                continue
            performance, recency = usage_parts(index.history.get(agent.name), now)
            parts = {
                "relevance": round(float(probability), 3),
                # The tenant's own agent the message points to by its description is the one made for it.
                "made_for": float(not agent.pack and (probability >= head.made_for or agent.name == pointed)),
                "performance": round(performance, 3),
                "recency": round(recency, 3),
                "similarity": round(float(row[0]), 3),
                "lexical": round(float(row[3]), 3),
            }
            candidates.append(
                Candidate(
                    name=agent.name,
                    score=round(float(probability), 3),
                    parts=parts,
                    description=descriptions[agent.name],
                )
            )
        return by_relevance(candidates)


def by_relevance(candidates: list[Candidate]) -> list[Candidate]:
    """Relevance first; usage orders agents of equal relevance only (it never lifts one above another)."""
    return sorted(
        candidates, key=lambda c: (c.score, c.parts["performance"] + c.parts["recency"]), reverse=True
    )


def made_for(candidate: Candidate) -> bool:
    """Whether a tenant's own agent is the one made for exactly this request: the relevance head is
    sure of it, or (without the head) its skill matched fully."""
    if "made_for" in candidate.parts:
        return candidate.parts["made_for"] >= 1.0
    return candidate.parts.get("skill", 0.0) >= 1.0


#: Nouns that name a made thing that does work ("the floor-staff ranking agent", "my returns round-up");
#: a noun is one of them in the plural too, or as the doer of one's verb ("the refund reporter", "the
#: staff ranker": WordNet's derivations, ``_names_a_worker``).
_WORKERS = frozenset(
    [
        "agent",
        "bot",
        "assistant",
        "system",
        "report",
        "digest",
        "summary",
        "rundown",
        "round-up",
        "roundup",
        "leaderboard",
        "ranking",
        "table",
        "tracker",
        "reader",
        "thing",
        "one",
    ]
)
#: A definite description opens with one of these, and runs up to seven words before its noun.
#: (A lookahead: "the other one - the invoice reader" is tried from each determiner; a lone dash ends it.)
_DESCRIPTION_OPENS = re.compile(
    r"\b(?:the|my|our|that|this|your)\s+(?=((?:\w[\w'-]*\s+){0,6}\w[\w'-]*))", re.I
)
#: What such a noun does, said after it ("the report that lists what customers handed back").
_DOES = re.compile(r"\s+(?:that|which|who)\s+[^,.;:?!()]+", re.I)
_VAGUE = frozenset(("other", "first", "second", "last", "new", "same", "whole", "next", "previous", "old"))


@functools.cache
def _names_a_worker(word: str) -> bool:
    """Whether ``word`` is one of ``_WORKERS``, in the plural, or a noun of a verb one of them is a noun
    of ("reporter": to report, whose noun is a report)."""
    word = word.lower()
    if word in _WORKERS or word.removesuffix("s") in _WORKERS:
        return True
    if not available():
        return False
    reader = wordnet()
    base = reader.morphy(word, "n") or word
    if base in _WORKERS:
        return True
    verbs = {
        form
        for sense in reader.synsets(base, "n")
        for lemma in sense.lemmas()
        if lemma.name().lower() == base
        for form in lemma.derivationally_related_forms()
        if form.synset().pos() == "v"
    }
    return any(
        noun.name().lower() in _WORKERS for verb in verbs for noun in verb.derivationally_related_forms()
    )


def described_agent(message: str) -> str | None:
    """The description of an agent ``message`` gives, when it gives one that says more than the noun
    ("the agent", "the other one" describe nothing); None otherwise."""
    for opening in _DESCRIPTION_OPENS.finditer(message):
        words = opening.group(1).split()
        at = next((i for i, word in enumerate(words) if _names_a_worker(word)), None)
        if at is None:
            continue
        before, noun = " ".join(words[:at]), words[at]
        ends = opening.start(1) + len(" ".join(words[: at + 1]))
        does = _DOES.match(message, ends)
        after = re.split(r"\s[-\u2013\u2014]\s", does.group(0))[0].strip() if does else ""  # "... - store 4"
        said = [w for w in re.findall(r"[a-z]+", f"{before} {after}".lower()) if w not in _VAGUE]
        if len(said) >= 1 + (noun.lower() in ("one", "thing")):
            return " ".join(part for part in (before, noun, after) if part)
    return None


def names_agent(message: str, name: str) -> bool:
    """Whether ``message`` names the agent: its name, or its name's words in order ("the returns
    digest" names ``returns_digest``)."""
    words = r"[\s_-]+".join(re.escape(word) for word in re.split(r"[_\W]+", name) if word)
    return bool(words) and re.search(rf"\b{words}\b", message, re.I) is not None


def usage_parts(past: AgentHistory | None, now: datetime) -> tuple[float, float]:
    """(success rate, recency of the last success) of an agent, each in [0, 1]."""
    # Laplace's rule: an agent without history is neither proven nor failed.
    performance = (past.successes + 1) / (past.runs + 2) if past else 0.5
    recency = 0.0
    if past and past.last_success is not None:
        age = (now - past.last_success).total_seconds() / 86400
        span = RECENCY_HORIZON_DAYS - RECENCY_FULL_DAYS
        recency = 1.0 if age <= RECENCY_FULL_DAYS else max(0.0, 1 - (age - RECENCY_FULL_DAYS) / span)
    return performance, recency
