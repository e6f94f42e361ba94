"""The trained relevance head: how likely each of a tenant's agents is the one a message asks for.

Discovery's hand-set formula (0.75 skill + 0.25 domain, a similarity floor and ceiling) weighed a
pack's master agent, whose skills are the many messages it was asked in training, against a tenant's
own agent described by a sentence and two skills, on one scale: "what got returned at store 3 last
week and why?" went to the generalist, and every goal the domain head put in a pack's domain went to
that pack's agent, however foreign ("how do I increase my CIBIL score?"). This head is a logistic
regression over features of a (message, agent) pair that name no agent and no domain: the best and
the mean similarity of the message to the agent's texts, to its own description and skills alone,
each against the best of the tenant's other agents, the share of the message's rarer words the agent's
texts use (IDF over the tenant's agents), whether the message names it, for a pack's agent the
domain head's verdict, and how much nearer the message is to what the agent serves than to what the
tenant's users asked and no agent of its packs served (``refused``: the out-of-scope messages of the
labelled sets, by pack; "I want a home loan for a 2BHK flat" to a personal-loan pack reads like its
loans but lies nearer to the home-loan top-up it was trained to refuse). It is trained by ``make train-routing`` on (message, agent) pairs of the
labelled sets (the agent the message asked for: 1, every other agent of that tenant: 0), so it learns
how much each kind of evidence counts, for any tenant's agents. Serving needs numpy only.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Words too common to tell one agent from another.
_STOP = frozenset((
    "a", "an", "the", "to", "of", "for", "in", "on", "at", "and", "or", "my", "our", "me", "i", "we", "you",
    "it", "is", "are", "be", "do", "does", "with", "by", "from", "this", "that", "what", "how", "why", "when",
    "which", "who", "can", "could", "would", "please", "about", "all", "any", "per",
))  # fmt: skip
_WORD = re.compile(r"[a-z]+")
#: Letters of a word kept as its stem ("returned", "returns" -> "retur"; "summary", "summarise" -> "summa").
STEM_LETTERS = 5

FEATURES = (
    "similarity",
    "spec_similarity",
    "mean_top3",
    "lexical",
    "margin",
    "lexical_margin",
    "named",
    "pack",
    "pack_domain",
    "pack_other",
    "pack_similarity",
    "own_similarity",
    "own_lexical",
    "own_margin",
    "spec_margin",
    "own_spec_margin",
    "refused_similarity",
    "refused_margin",
    "served_margin",
)
#: Nearest texts averaged into a similarity to a set of texts (the refused messages, an agent's texts).
NEAREST = 3


def stems(text: str) -> frozenset[str]:
    """The stems of a text's content words (an agent's name counts as its words)."""
    words = _WORD.findall(text.lower().replace("_", " "))
    return frozenset(word[:STEM_LETTERS] for word in words if word not in _STOP and len(word) > 2)


def stem_weights(documents: Sequence[frozenset[str]]) -> dict[str, float]:
    """Inverse document frequency of each stem over a tenant's agents' texts ("store" is in all)."""
    counts = Counter(stem for document in documents for stem in document)
    return {stem: math.log((len(documents) + 1) / (n + 0.5)) for stem, n in counts.items()}


@dataclass(frozen=True, kw_only=True)
class AgentTexts:
    """What the relevance head reads of one agent."""

    name: str
    pack: bool
    """A domain pack's agent (its domain head verdict counts), not one the tenant made."""
    domain: str
    spec: np.ndarray
    """Embeddings of its description and skills, one row each."""
    examples: np.ndarray
    """Embeddings of messages it was asked in training (a pack's master agent; may be empty)."""
    stems: frozenset[str]
    """``stems`` of its name, description and skills."""
    refused: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """Embeddings of messages its tenant's users asked that no agent of its pack served (a pack's
    master agent; may be empty). The tenant's refused messages are those of all its agents."""


#: Texts this alike (cosine of embeddings) are the same text.
SAME_TEXT = 0.97


def _twins(first: AgentTexts, second: AgentTexts) -> bool:
    """Two agents whose description and skills read alike, text for text (one spec built twice)."""
    if not len(first.spec) or len(first.spec) != len(second.spec):
        return False
    return bool(np.all((first.spec @ second.spec.T).max(axis=1) >= SAME_TEXT))


def pair_features(
    query: np.ndarray,
    message_stems: frozenset[str],
    agents: Sequence[AgentTexts],
    shares: Mapping[str, float],
    weights: Mapping[str, float],
    named: Sequence[bool],
    *,
    skip_examples: Sequence[np.ndarray | None] = (),
    skip_refused: Sequence[np.ndarray | None] = (),
) -> np.ndarray:
    """One row of ``FEATURES`` per agent for a message (embedded as ``query``, its stems
    ``message_stems``). ``shares``: the domain head's probabilities (empty without one); ``weights``:
    ``stem_weights`` of the agents; ``named``: whether the message names each agent.
    ``skip_examples``: per agent, a mask of its examples to leave out (training leaves out the message
    itself); ``skip_refused`` likewise for its refused messages."""
    likeliest = max(shares.values()) if shares else 0.0
    said = sum(weights.get(stem, 0.0) for stem in message_stems) + 1.0
    measured = []
    for index, agent in enumerate(agents):
        spec = agent.spec @ query
        found = spec
        if len(agent.examples):
            examples = agent.examples @ query
            skip = skip_examples[index] if index < len(skip_examples) else None
            found = np.concatenate([spec, examples if skip is None else examples[~skip]])
        ranked = np.sort(found)[::-1]
        lexical = sum(weights.get(stem, 0.0) for stem in agent.stems & message_stems) / said
        measured.append((float(ranked[0]), float(spec.max()), float(ranked[:NEAREST].mean()), lexical))
    refused = []
    for index, agent in enumerate(agents):
        if agent.refused.size:
            skip = skip_refused[index] if index < len(skip_refused) else None
            near = agent.refused @ query
            refused.append(near if skip is None else near[~skip])
    refused_all = np.concatenate(refused) if refused else np.zeros(0)
    # How near the message is to what the tenant refused, against what its agents serve (0 without
    # refused messages: no evidence either way).
    near_refused = float(np.sort(refused_all)[::-1][:NEAREST].mean()) if refused_all.size else 0.0
    served = max((found[2] for found in measured), default=0.0)
    rows = []
    for index, agent in enumerate(agents):
        best, spec_best, top3, lexical = measured[index]
        # A copy of this agent's spec under another name is no rival: either serves the message.
        others = [
            found
            for other, found in enumerate(measured)
            if other != index and not _twins(agent, agents[other])
        ]
        margin = best - max((found[0] for found in others), default=0.3)
        spec_margin = spec_best - max((found[1] for found in others), default=0.3)
        lexical_margin = lexical - max((found[3] for found in others), default=0.0)
        pack, own = float(agent.pack), float(not agent.pack)
        domain = shares.get(agent.domain, 0.0) / likeliest if likeliest else 0.0
        rows.append(
            [
                best,
                spec_best,
                top3,
                lexical,
                margin,
                lexical_margin,
                float(named[index]),
                pack,
                pack * domain,
                pack * shares.get("other", 0.0),
                pack * best,
                own * best,
                own * lexical,
                own * margin,
                spec_margin,
                own * spec_margin,
                near_refused,
                top3 - near_refused if refused_all.size else 0.0,
                served - near_refused if refused_all.size else 0.0,
            ]
        )
    return np.asarray(rows, dtype=np.float64).reshape(len(agents), len(FEATURES))


@dataclass(frozen=True, kw_only=True)
class RelevanceHead:
    """The weights of a trained relevance head and the probabilities its decisions use."""

    coef: np.ndarray
    intercept: float
    floor: float
    """Least probability of an agent that counts as able to serve the message (none reaching it: out
    of scope), picked on the validation split."""
    made_for: float
    """Probability from which a tenant's own agent is the one made for this request, whatever the
    intent head read (a data question its agent answers), picked on the validation split."""

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        logits = features @ self.coef + self.intercept
        return np.asarray(1.0 / (1.0 + np.exp(-logits)))

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RelevanceHead:
        return cls(
            coef=np.asarray(raw["coef"], dtype=np.float64),
            intercept=float(raw["intercept"]),
            floor=float(raw["floor"]),
            made_for=float(raw["made_for"]),
        )
