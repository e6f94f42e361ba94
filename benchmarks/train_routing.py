"""Trains the front door's intent head (``make train-routing``): a multinomial logistic regression over
the local sentence embedding of labelled messages and hashed counts of their words and word pairs; the
features' mix, C and class weighting picked on the validation splits, its confidence calibrated there
(temperature scaling); the domain head likewise. Written to ``master_agent/routing/intent_head.json``.

The relevance head (``master_agent.routing.relevance``), which of a tenant's agents a message asks
for, is trained on (message, agent) pairs of the same messages against the agents the runner gives
each tenant (a pack's master agent with its training messages, the retail tenant's ``TENANT_AGENTS``);
the domain head's verdicts on training messages come from heads fitted without them (five folds).

Training data: ``benchmarks/eval_routing/train.json``, ``train2.json``, ``train3.json``, ``train5.json`` and
``tuning6.json`` (the fifth and sixth batches' tuning parts; five batches of messages written from the user's
side by separate helpers, never from the code), two thirds of ``tuning7.json`` and ``tuning8.json`` (the seventh and eighth batches' tuning parts)
and the shipped exemplars (generic and every pack's); ``validation.json``, ``validation2.json``, ``validation3.json``
and the other thirds of ``tuning7.json`` and ``tuning8.json`` choose. The held-out splits are never read here. Needs scikit-learn (the ``dev`` extra); serving needs only numpy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from master_agent.capabilities import registered_domain_packs
from master_agent.models.embeddings import LocalMiniLMEmbedder
from master_agent.routing.discovery import AgentCard, agent_texts, names_agent
from master_agent.routing.exemplars import GENERIC_EXEMPLARS
from master_agent.routing.intent import message_vector, strip_entities
from master_agent.routing.intent_head import HEAD_PATH, REFUSED, Features, load_head
from master_agent.routing.relevance import FEATURES, pair_features, stem_weights, stems

SETS = Path(__file__).parent / "eval_routing"
#: The labelled batches, where present (the second, third and fifth arrived later; the fourth is held out).
#: ``name:train`` / ``name:validation``: a tuning part shared between the two (``split_part``), so that
#: validation holds messages of the newest batch's voices that the heads never trained on.
TRAIN_FILES = (
    "train.json",
    "train2.json",
    "train3.json",
    "train5.json",
    "tuning6.json",
    "tuning7.json:train",
    "tuning8.json:train",
)
VALIDATION_FILES = (
    "validation.json",
    "validation2.json",
    "validation3.json",
    "tuning7.json:validation",
    "tuning8.json:validation",
)
#: Every ``VALIDATION_EVERY``-th message of each (tenant kind, intent) of a shared tuning part validates.
VALIDATION_EVERY = 3
#: The query kinds the service answers itself; a question about anything else goes to an agent.
QUERY_KINDS = ("data", "knowledge", "outcome", "list_agents")


#: Whether the intent head learns out-of-scope messages as a class of their own (``REFUSED``, read
#: as an EXECUTE unless the head is sure of it) rather than as EXECUTEs (``--without-refused``).
REFUSED_CLASS = True


def eval_label(intent: str, target: str | None) -> str:
    """The head's label for a labelled message: the sets' intents in the service's terms. META_BUILD
    (a system of agents) is a CREATE for the builder; META_OPERATE is an EXECUTE (what serves it is
    discovery's answer); OUT_OF_SCOPE is ``REFUSED`` (an EXECUTE without ``REFUSED_CLASS``); CLARIFY
    is AMBIGUOUS; a question no built-in query kind answers (a loan's instalment) goes to an agent:
    EXECUTE."""
    if intent == "QUERY":
        return f"QUERY:{target}" if target in QUERY_KINDS else "EXECUTE"
    return {
        "META_BUILD": "CREATE",
        "OUT_OF_SCOPE": REFUSED if REFUSED_CLASS else "EXECUTE",
        "META_OPERATE": "EXECUTE",
        "CLARIFY": "AMBIGUOUS",
    }.get(intent, intent)


#: Probabilities of ``REFUSED`` tried as the point from which a message is refused outright.
REFUSE_FROM = tuple(round(0.5 + 0.05 * step, 2) for step in range(10))


def refuse_threshold(probabilities: np.ndarray, refused: np.ndarray) -> tuple[float, int]:
    """The probability of ``REFUSED`` from which refusing outright gains most on validation (refused
    messages caught less others refused; the highest of equals), and the gain; 1.0 when none gains."""
    best, gained = 1.0, 0
    for threshold in sorted(REFUSE_FROM, reverse=True):
        taken = probabilities >= threshold
        gain = int(np.sum(taken & refused)) - int(np.sum(taken & ~refused))
        if gain > gained:
            best, gained = threshold, gain
    return best, gained


C_GRID = (1.0, 4.0, 16.0, 64.0)
#: Hashed buckets of words and word pairs beside the embedding, and the weights tried for them (0: the
#: embedding alone).
LEXICAL_DIM = 4096
LEXICAL_WEIGHTS = (0.0, 0.5, 1.0)
TEMPERATURES = tuple(round(0.3 + 0.05 * step, 2) for step in range(55))


#: The master agent of each tenant kind's pack, as the labelled sets name what it does.
MASTER_TARGETS = {
    "retail": ("master_agent",),
    "queries": ("master_agent",),
    "assistant": ("calendar", "mail", "contacts"),
    "lending": ("loan",),
}
PACK_OF_KIND = {"queries": "retail"}

#: Agents the retail tenant created for itself, which the labelled sets' retail, builder and queries
#: messages name (described here from their names, not from the sets' messages).
TENANT_AGENTS = (
    {
        "name": "staff_leaderboard",
        "description": "Ranks a store's sales staff in a leaderboard by accessory attach rate",
        "skills": ["rank salespeople by attach rate", "show the staff leaderboard"],
    },
    {
        "name": "returns_digest",
        "description": "A weekly digest of product returns per store",
        "skills": ["summarise last week's returns per store", "returns digest"],
    },
    {
        "name": "weekly_sales_summary",
        "description": "Summarises each week's sales per store",
        "skills": ["weekly sales summary per store"],
    },
    {
        "name": "refund_rate_reporter",
        "description": "Reports the refund rate of each store",
        "skills": ["report the refund rate per store"],
    },
    # The agent systems the meta tenant's messages operate (built by the meta-orchestrator).
    {
        "name": "support_ticket_triage",
        "description": "A system of agents that triages support tickets by urgency and drafts replies",
        "skills": ["triage support tickets", "evaluate or debug the ticket triage system"],
    },
    {
        "name": "invoice_intake",
        "description": "A system of agents that reads incoming invoices and extracts their fields",
        "skills": ["process incoming invoices", "evaluate or debug the invoice intake system"],
    },
    {
        "name": "lead_qualifier",
        "description": "A system of agents that enriches and scores sales leads",
        "skills": ["qualify sales leads", "evaluate or debug the lead qualifier system"],
    },
)


def split_part(rows: list[dict[str, Any]], part: str) -> list[dict[str, Any]]:
    """The ``train`` or ``validation`` part of a tuning part's rows: within each (tenant kind, intent), in
    file order (the files are shuffled), every ``VALIDATION_EVERY``-th row from the second validates, so
    both parts keep the batch's mix and no message is in both. ``tune`` / ``check``: halves the same way
    (every second row checks), so that a round of work on the front door's rules tunes on one half of a
    new batch and reads the other as its own held-out part."""
    every, second = (
        (2, part == "check") if part in ("tune", "check") else (VALIDATION_EVERY, part == "validation")
    )
    seen: Counter[tuple[str, str]] = Counter()
    found = []
    for row in rows:
        key = (row["tenant_kind"], row["intent"])
        in_second = seen[key] % every == 1
        seen[key] += 1
        if in_second == second:
            found.append(row)
    return found


def rows_of(files: tuple[str, ...]) -> list[dict[str, Any]]:
    """The labelled rows of ``files`` (``name:part``: that part of a shared tuning file), where present."""
    found: list[dict[str, Any]] = []
    for spec in files:
        name, _, part = spec.partition(":")
        if (SETS / name).exists():
            rows = json.loads((SETS / name).read_text())
            found += split_part(rows, part) if part else rows
    return found


def master_rows(files: tuple[str, ...] = TRAIN_FILES) -> dict[str, list[str]]:
    """Messages each pack's master agent was asked, by pack."""
    found: dict[str, list[str]] = {}
    for row in rows_of(files):
        kind = row["tenant_kind"]
        if row["intent"] in ("EXECUTE", "QUERY") and row["target"] in MASTER_TARGETS.get(kind, ()):
            found.setdefault(PACK_OF_KIND.get(kind, kind), []).append(row["message"])
    return found


def refused_rows(files: tuple[str, ...] = TRAIN_FILES) -> dict[str, list[str]]:
    """Messages no agent of the tenant's pack served (out of scope), by the pack of the tenant they were
    sent to (the retail tenant takes the builder's, the meta tenant's and the data questions')."""
    found: dict[str, list[str]] = {}
    for row in rows_of(files):
        if row["intent"] == "OUT_OF_SCOPE":
            kind = row["tenant_kind"]
            found.setdefault(kind if kind in PACK_TENANT_KINDS else "retail", []).append(row["message"])
    return found


def domain_rows(files: tuple[str, ...] = TRAIN_FILES, exemplars: bool = True) -> list[tuple[str, str]]:
    """Messages labelled with the pack whose master agent serves them, or ``other``: the messages of
    each pack's master agent, out-of-scope ones, and the shipped EXECUTE exemplars."""
    packs = registered_domain_packs()
    rows = [(text, pack) for pack, texts in master_rows(files).items() for text in texts]
    rows += [(row["message"], "other") for row in rows_of(files) if row["intent"] == "OUT_OF_SCOPE"]
    if not exemplars:
        return rows
    shipped = [*GENERIC_EXEMPLARS, *(e for pack in packs.values() for e in pack.routing_examples)]
    rows += [
        (e.text, e.domain if e.domain in packs else "other")
        for e in shipped
        if e.action == "EXECUTE" and e.domain
    ]
    return rows


#: The follow-up pairs of the validation splits (the runner scores them beside their messages).
VALIDATION_FOLLOW_UPS = (
    "followups_tuning.json",
    "followups_train2.json",
    "followups_train3.json",
    "followups_tuning7.json",
    "followups_tuning8.json",
)


def validation_follow_ups() -> tuple[list[str], list[bool]]:
    """The validation splits' follow-up messages as the intent head reads them, and whether each is out
    of scope as labelled."""
    rows = rows_of(VALIDATION_FOLLOW_UPS)
    return [head_text(row) for row in rows], [row["expected"]["intent"] == "OUT_OF_SCOPE" for row in rows]


def follow_up_threshold(probabilities: np.ndarray, refused: list[bool]) -> float:
    """The probability of ``REFUSED`` of a follow-up read alone from which it is refused after a served
    turn (``IntentHead.follow_up_refuse_from``): the validation splits' follow-up messages, refused or
    not as labelled, the most gained (``refuse_threshold``)."""
    threshold, gained = refuse_threshold(probabilities, np.array(refused))
    print(f"a follow-up refused from {threshold} (validation follow-ups: {gained} more right than wrong)")
    return threshold


async def follow_up_threshold_of(path: Path) -> float:
    """``follow_up_threshold`` for the head written at ``path`` (its own weights and temperature)."""
    head = load_head.__wrapped__(path)
    if head is None or REFUSED not in head.labels:
        return 1.0
    embedder = LocalMiniLMEmbedder()
    texts, refused = validation_follow_ups()
    shares = [head.probabilities(await message_vector(embedder, text), text)[REFUSED] for text in texts]
    return follow_up_threshold(np.asarray(shares), refused)


def head_text(row: dict[str, Any]) -> str:
    """A labelled message as the intent head reads it at its tenant (``Features.read``: with
    ``--mask-agents``, the names of the tenant's agents masked)."""
    names = [card.name for card in agents_of(row["tenant_kind"], {}, {})]
    return Features(mask_agents=MASK_AGENTS).read(row["message"], names)


def labelled(files: tuple[str, ...]) -> list[tuple[str, str]]:
    """The messages of ``files`` as the intent head reads them, with their labels."""
    return [(head_text(row), eval_label(row["intent"], row["target"])) for row in rows_of(files)]


def exemplar_rows() -> list[tuple[str, str]]:
    found = list(GENERIC_EXEMPLARS)
    for pack in registered_domain_packs().values():
        found.extend(pack.routing_examples)
    return [(e.text, f"QUERY:{e.query_kind}" if e.action == "QUERY" else e.action) for e in found]


async def embed(embedder: LocalMiniLMEmbedder, texts: list[str]) -> np.ndarray:
    vectors = await embedder.embed([strip_entities(text) or text for text in texts])
    return np.asarray(vectors, dtype=np.float64)


def featured(vectors: np.ndarray, texts: list[str], features: Features) -> np.ndarray:
    return np.asarray([features.of(vector, text) for vector, text in zip(vectors, texts, strict=True)])


def eval_label_execute(label: str) -> str:
    """A head label with ``REFUSED`` read as the EXECUTE it is served as."""
    return "EXECUTE" if label == REFUSED else label


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    weights = np.exp(shifted)
    return np.asarray(weights / weights.sum(axis=1, keepdims=True))


def nll(logits: np.ndarray, truth: np.ndarray, temperature: float) -> float:
    probs = _softmax(logits / temperature)
    return float(-np.mean(np.log(np.clip(probs[np.arange(len(truth)), truth], 1e-12, 1.0))))


#: ``--quick``: only the neighbourhood of what the full grid chose in sessions 6 and 7 (word counts at
#: half or full weight, balanced classes, C 16 or 64) for both heads: 4 fits a head, not 24 (the full
#: grid took 20 minutes on the shared machine, most of it fits never chosen).
QUICK_GRID = {"weights": (0.5, 1.0), "weightings": ("balanced",), "C": (16.0, 64.0)}
QUICK = False
#: ``--mask-agents``: the intent head reads messages with their tenant's agent names masked
#: (``intent_head.agents_masked``).
MASK_AGENTS = False


def _grid(mask_agents: bool) -> list[tuple[Features, float, str | None]]:
    weights, weightings, cs = (
        (QUICK_GRID["weights"], QUICK_GRID["weightings"], QUICK_GRID["C"])
        if QUICK
        else (LEXICAL_WEIGHTS, ("balanced", None), C_GRID)
    )
    return [
        (
            Features(
                lexical_dim=LEXICAL_DIM if weight else 0,
                lexical_weight=float(weight),
                mask_agents=mask_agents,
            ),
            float(c),
            weighting,
        )
        for weight in weights
        for weighting in weightings
        for c in cs
    ]


def fit_best(
    name: str,
    train: tuple[np.ndarray, list[str], list[str]],
    validation: tuple[np.ndarray, list[str], list[str]],
    mask_agents: bool = False,
) -> tuple[LogisticRegression, Features, float, dict[str, Any]]:
    """The grid's model best on validation (accuracy, then log-loss), refitted on training only."""
    (x_train, train_texts, y_train), (x_val, val_texts, y_val) = train, validation
    best: tuple[float, float, Features, float, str | None] | None = None
    for features, c, weighting in _grid(mask_agents):
        model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting)
        model.fit(featured(x_train, train_texts, features), y_train)
        seen = [i for i, label in enumerate(y_val) if label in set(model.classes_)]
        probs = model.predict_proba(featured(x_val[seen], [val_texts[i] for i in seen], features))
        truth = np.array([list(model.classes_).index(y_val[i]) for i in seen])
        accuracy = float(np.mean(probs.argmax(axis=1) == truth)) * len(seen) / len(y_val)
        loss = float(-np.mean(np.log(np.clip(probs[np.arange(len(truth)), truth], 1e-12, 1.0))))
        print(
            f"  {name}: lexical {features.lexical_weight:<4g} C={c:<5g} class_weight={weighting!s:8s} "
            f"validation accuracy {accuracy:.1%} log-loss {loss:.3f}"
        )
        if best is None or (accuracy, -loss) > (best[0], -best[1]):
            best = (accuracy, loss, features, c, weighting)
    assert best is not None
    accuracy, _, features, c, weighting = best
    model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting)
    model.fit(featured(x_train, train_texts, features), y_train)
    chosen = {"C": c, "class_weight": str(weighting), "lexical_weight": features.lexical_weight}
    print(f"{name} chosen: {chosen}; validation accuracy {accuracy:.1%}")
    return model, features, accuracy, chosen


def _features_json(features: Features) -> dict[str, Any]:
    return {
        "lexical_dim": features.lexical_dim,
        "lexical_weight": features.lexical_weight,
        "mask_agents": features.mask_agents,
    }


#: The pack whose tenant each kind of labelled message is sent to (the others go to the retail tenant,
#: which has ``TENANT_AGENTS`` besides its master agent).
PACK_TENANT_KINDS = ("assistant", "lending")
RELEVANCE_C = (0.1, 0.3, 1.0, 3.0)
RELEVANCE_FLOORS = tuple(round(0.1 + 0.05 * step, 2) for step in range(15))
CROSS_FOLDS = 5


def agents_of(kind: str, examples: dict[str, list[str]], refused: dict[str, list[str]]) -> list[AgentCard]:
    """The runnable agents of the tenant a labelled message of ``kind`` goes to, as discovery sees
    them; ``examples``: the training messages of each pack's master agent; ``refused``: the training
    messages no agent of each pack served."""
    packs = registered_domain_packs()
    pack = packs[kind if kind in PACK_TENANT_KINDS else "retail"]
    master = pack.master
    cards = [
        AgentCard(
            name=master["name"],
            description=master["description"],
            skills=tuple(master.get("skills") or ()),
            domain=master.get("domain") or pack.name,
            runnable=True,
            examples=tuple(examples.get(pack.name, ())),
            refused=tuple(refused.get(pack.name, ())),
        )
    ]
    if kind not in PACK_TENANT_KINDS:
        cards += [
            AgentCard(
                name=agent["name"],
                description=agent["description"],
                skills=tuple(agent["skills"]),
                domain=pack.name,
                runnable=True,
                source="tenant",
            )
            for agent in TENANT_AGENTS
        ]
    return cards


def wanted_agent(row: dict[str, Any], cards: list[AgentCard]) -> str | bool | None:
    """The agent a labelled message asks for among ``cards``: its name, None (none: out of scope), or
    False when the row teaches no choice of agent (a built-in query, a create, an agent not named)."""
    intent, target = row["intent"], row.get("target")
    if intent == "OUT_OF_SCOPE":
        return None
    if eval_label(intent, target) != "EXECUTE":
        return False
    names = [card.name for card in cards]
    if target in names:
        return str(target)
    if target in MASTER_TARGETS.get(row["tenant_kind"], ()) or len(cards) == 1:
        return names[0]
    return False


async def relevance_pairs(
    embedder: LocalMiniLMEmbedder,
    rows: list[dict[str, Any]],
    domain_probabilities: list[dict[str, float]],
    leave_out_self: bool,
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str, str | bool | None]]]:
    """Features and labels of every (message, agent) pair, each pair's (row, agent, ``wanted_agent``);
    with ``leave_out_self``, a message is not among its master agent's examples (training rows)."""
    examples, refused = master_rows(), refused_rows()
    vectors = await embed(embedder, [row["message"] for row in rows])
    cached: dict[str, tuple[list[AgentCard], list[Any], dict[str, float]]] = {}
    features, labels, groups = [], [], []
    for index, (row, shares) in enumerate(zip(rows, domain_probabilities, strict=True)):
        kind = row["tenant_kind"] if row["tenant_kind"] in PACK_TENANT_KINDS else "retail"
        if kind not in cached:
            cards = agents_of(kind, examples, refused)
            matrices = [
                await embed(embedder, [card.description, *card.skills, *card.examples, *card.refused])
                for card in cards
            ]
            agents = [agent_texts(card, matrix) for card, matrix in zip(cards, matrices, strict=True)]
            cached[kind] = (cards, agents, stem_weights([agent.stems for agent in agents]))
        cards, agents, weights = cached[kind]
        wanted = wanted_agent(row, cards)
        message = row["message"]
        skip = [
            np.array([text == message for text in card.examples], dtype=bool)
            if leave_out_self and card.examples
            else None
            for card in cards
        ]
        skip_refused = [
            np.array([text == message for text in card.refused], dtype=bool)
            if leave_out_self and card.refused
            else None
            for card in cards
        ]
        found = pair_features(
            vectors[index],
            stems(strip_entities(message) or message),
            agents,
            shares,
            weights,
            [names_agent(message, card.name) for card in cards],
            skip_examples=skip,
            skip_refused=skip_refused,
        )
        for card, pair in zip(cards, found, strict=True):
            features.append(pair)
            labels.append(int(card.name == wanted))
            groups.append((index, card.name, wanted))
    return np.asarray(features), np.asarray(labels), groups


Pairs = tuple[np.ndarray, np.ndarray, list[tuple[int, str, str | bool | None]]]


def teaching(pairs: Pairs) -> Pairs:
    """The pairs of messages that teach a choice of agent (or none)."""
    features, labels, groups = pairs
    keep = [i for i, (_, _, wanted) in enumerate(groups) if wanted is not False]
    return features[keep], labels[keep], [groups[i] for i in keep]


def relevance_accuracy(
    probabilities: np.ndarray, groups: list[tuple[int, str, str | bool | None]], floor: float
) -> float:
    """Share of messages whose likeliest agent (or none below ``floor``) is the one asked for."""
    best: dict[int, tuple[float, str, str | bool | None]] = {}
    for probability, (index, name, wanted) in zip(probabilities, groups, strict=True):
        if index not in best or probability > best[index][0]:
            best[index] = (float(probability), name, wanted)
    hits = [(name if p >= floor else None) == wanted for p, name, wanted in best.values()]
    return sum(hits) / len(hits)


def cross_fitted_domains(
    texts: list[str],
    domains: list[tuple[str, str]],
    features: Features,
    c: float,
    weighting: str | None,
    vectors: np.ndarray,
    domain_vectors: np.ndarray,
) -> list[dict[str, float]]:
    """The domain head's probabilities for training messages from heads fitted without them (five
    folds), so the relevance head learns how far the domain head is trusted on new messages."""
    found: list[dict[str, float]] = [{} for _ in texts]
    x_texts = featured(vectors, texts, features)
    x_domains = featured(domain_vectors, [t for t, _ in domains], features)
    folds = np.arange(len(texts)) % CROSS_FOLDS
    for fold in range(CROSS_FOLDS):
        held = {texts[i] for i in np.flatnonzero(folds == fold)}
        keep = [i for i, (text, _) in enumerate(domains) if text not in held]
        model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting)
        model.fit(x_domains[keep], [domains[i][1] for i in keep])
        for i in np.flatnonzero(folds == fold):
            found[i] = dict(
                zip(
                    map(str, model.classes_),
                    map(float, model.predict_proba(x_texts[i : i + 1])[0]),
                    strict=True,
                )
            )
    return found


def fit_relevance(train: Pairs, validation: Pairs, readings: dict[int, tuple[bool, bool]]) -> dict[str, Any]:
    """The relevance head best on validation (C and the floor) and its ``made_for`` probability.
    ``readings``: by validation row, (the intent head read a built-in query or AMBIGUOUS, it was right)."""
    x_train, y_train, _ = teaching(train)
    x_val, _, groups = teaching(validation)
    best: tuple[float, float, float] | None = None
    for c in RELEVANCE_C:
        model = LogisticRegression(C=c, max_iter=5000).fit(x_train, y_train)
        probabilities = model.predict_proba(x_val)[:, 1]
        for floor in RELEVANCE_FLOORS:
            accuracy = relevance_accuracy(probabilities, groups, floor)
            # Of equals, the higher floor: an agent barely likelier than nothing is no answer.
            if best is None or (accuracy, floor) > (best[0], best[2]):
                best = (accuracy, c, floor)
        print(
            f"  relevance head: C={c:<4g} validation accuracy {max(relevance_accuracy(probabilities, groups, f) for f in RELEVANCE_FLOORS):.1%}"
        )
    assert best is not None
    accuracy, c, floor = best
    model = LogisticRegression(C=c, max_iter=5000).fit(x_train, y_train)
    probabilities = model.predict_proba(validation[0])[:, 1]
    own = {agent["name"] for agent in TENANT_AGENTS}
    tops: dict[int, tuple[float, str, str | bool | None]] = {}
    for probability, (index, name, wanted) in zip(probabilities, validation[2], strict=True):
        if index not in tops or probability > tops[index][0]:
            tops[index] = (float(probability), name, wanted)
    # Where the intent head reads a built-in query or nothing clear, the likeliest agent, one of the
    # tenant's own, takes the message from ``made_for`` on: right when it is the agent asked for, wrong
    # when the head's reading was right. The threshold that gains most (the highest of equals).
    outcomes = [
        (p, name == wanted, right)
        for index, (p, name, wanted) in tops.items()
        if name in own and index in readings and readings[index][0]
        for right in [readings[index][1]]
    ]
    made_for, gained = 1.0, 0
    for threshold in sorted({round(p, 2) for p, _, _ in outcomes}, reverse=True):
        taken = [(hit, right) for p, hit, right in outcomes if p >= threshold]
        gain = sum(hit for hit, _ in taken) - sum(right and not hit for hit, right in taken)
        if gain > gained:
            made_for, gained = threshold, gain
    print(
        f"relevance head chosen: C={c}, floor {floor}, made_for {made_for}; validation accuracy {accuracy:.1%}"
    )
    return {
        "features": list(FEATURES),
        "coef": [round(float(v), 5) for v in model.coef_[0]],
        "intercept": round(float(model.intercept_[0]), 5),
        "floor": floor,
        "made_for": max(made_for, floor),
        "trained_on": {"pairs": len(y_train), "C": c, "validation_accuracy": round(accuracy, 4)},
    }


async def main() -> dict[str, Any]:
    embedder = LocalMiniLMEmbedder()
    train = labelled(TRAIN_FILES) + exemplar_rows()
    validation = labelled(VALIDATION_FILES)
    train_texts = [text for text, _ in train]
    val_texts = [text for text, _ in validation]
    x_train, x_val = await embed(embedder, train_texts), await embed(embedder, val_texts)
    y_train, y_val = [label for _, label in train], [label for _, label in validation]
    print(f"train {len(train)} ({Counter(y_train)})")
    print(f"validation {len(validation)} ({Counter(y_val)})")
    model, features, accuracy, chosen = fit_best(
        "intent head", (x_train, train_texts, y_train), (x_val, val_texts, y_val), MASK_AGENTS
    )
    labels = [str(label) for label in model.classes_]
    known = [i for i, label in enumerate(y_val) if label in labels]
    truth = np.array([labels.index(y_val[i]) for i in known])
    logits = (
        featured(x_val[known], [val_texts[i] for i in known], features) @ model.coef_.T + model.intercept_
    )
    temperature = min(TEMPERATURES, key=lambda t: nll(logits, truth, t))
    print(
        f"temperature {temperature} (validation NLL {nll(logits, truth, 1.0):.3f} -> "
        f"{nll(logits, truth, temperature):.3f})"
    )
    calibrated = _softmax(logits / temperature)
    as_execute = [eval_label_execute(labels[i]) for i in calibrated.argmax(axis=1)]
    print(
        "intent head, out of scope read as EXECUTE: validation accuracy "
        f"{np.mean([as_execute[p] == eval_label_execute(y_val[i]) for p, i in enumerate(known)]):.1%}"
    )
    refuse_from, gained = 1.0, 0
    if REFUSED in labels:
        # A refusal outright also cuts a follow-up from its thread ("Our fiscal year starts on 1 May."
        # answering a question): the validation splits' follow-up messages count too, refused or not
        # as labelled.
        follow_texts, follow_refused = validation_follow_ups()
        x_follow = featured(await embed(embedder, follow_texts), follow_texts, features)
        follow_probs = _softmax((x_follow @ model.coef_.T + model.intercept_) / temperature)
        refuse_from, gained = refuse_threshold(
            np.concatenate([calibrated[:, labels.index(REFUSED)], follow_probs[:, labels.index(REFUSED)]]),
            np.array([y_val[i] == REFUSED for i in known] + follow_refused),
        )
    print(f"refused outright from {refuse_from} (validation: {gained} more right than wrong)")
    follow_up_refuse_from = 1.0
    if REFUSED in labels:
        follow_up_refuse_from = follow_up_threshold(follow_probs[:, labels.index(REFUSED)], follow_refused)
    domains, domains_val = domain_rows(), domain_rows(VALIDATION_FILES, exemplars=False)
    domain_texts, domain_val_texts = [t for t, _ in domains], [t for t, _ in domains_val]
    domain_model, domain_features, _, domain_chosen = fit_best(
        "domain head",
        (await embed(embedder, domain_texts), domain_texts, [label for _, label in domains]),
        (await embed(embedder, domain_val_texts), domain_val_texts, [label for _, label in domains_val]),
    )
    print(f"domain head: {len(domains)} messages ({Counter(label for _, label in domains)})")
    train_rows, val_rows = rows_of(TRAIN_FILES), rows_of(VALIDATION_FILES)
    weighting = None if domain_chosen["class_weight"] == "None" else domain_chosen["class_weight"]
    train_shares = cross_fitted_domains(
        [row["message"] for row in train_rows],
        domains,
        domain_features,
        float(domain_chosen["C"]),
        weighting,
        await embed(embedder, [row["message"] for row in train_rows]),
        await embed(embedder, domain_texts),
    )
    val_messages = [row["message"] for row in val_rows]
    val_shares = [
        dict(zip(map(str, domain_model.classes_), map(float, probabilities), strict=True))
        for probabilities in domain_model.predict_proba(
            featured(await embed(embedder, val_messages), val_messages, domain_features)
        )
    ]
    read = _softmax(logits / temperature).argmax(axis=1)
    readings = {
        index: (
            labels[read[position]].startswith(("QUERY", "AMBIGUOUS")),
            labels[read[position]] == y_val[index],
        )
        for position, index in enumerate(known)
    }
    relevance = fit_relevance(
        await relevance_pairs(embedder, train_rows, train_shares, leave_out_self=True),
        await relevance_pairs(embedder, val_rows, val_shares, leave_out_self=False),
        readings,
    )
    head = {
        "embedder": embedder.model_name,
        "labels": labels,
        "coef": [[round(float(v), 5) for v in row] for row in model.coef_],
        "intercept": [round(float(v), 5) for v in model.intercept_],
        "temperature": temperature,
        "features": _features_json(features),
        "master_examples": master_rows(),
        "refused_examples": refused_rows(),
        "domains": {
            "labels": [str(label) for label in domain_model.classes_],
            "coef": [[round(float(v), 5) for v in row] for row in domain_model.coef_],
            "intercept": [round(float(v), 5) for v in domain_model.intercept_],
            "features": _features_json(domain_features),
            "trained_on": {"messages": len(domains), **domain_chosen},
        },
        "relevance": relevance,
        "refuse_from": refuse_from,
        "follow_up_refuse_from": follow_up_refuse_from,
        "trained_on": {
            "messages": len(train),
            "files": [f for f in TRAIN_FILES if (SETS / f.partition(":")[0]).exists()],
            **chosen,
        },
        "validation_accuracy": round(accuracy, 4),
    }
    return head


def write_head(head: dict[str, Any], out: Path) -> None:
    out.write_text(json.dumps(head, separators=(",", ":")) + "\n")
    print(f"wrote {out} ({math.ceil(out.stat().st_size / 1024)} KiB)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dry-run", action="store_true", help="train and report, write nothing")
    parser.add_argument(
        "--without-refused",
        action="store_true",
        help="learn out-of-scope messages as EXECUTEs, as before the REFUSED class (for comparison)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="try only the grid's neighbourhood of its past choices"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=HEAD_PATH,
        help="where to write the head (default: the shipped one); benchmarks/select_routing.py reads a "
        "head written elsewhere to compare it end to end with the shipped one",
    )
    parser.add_argument(
        "--mask-agents",
        action="store_true",
        help="the intent head reads messages with their tenant's agent names masked (intent_head.agents_masked)",
    )
    parser.add_argument(
        "--follow-ups-only",
        action="store_true",
        help="train nothing: pick the follow-up refusal threshold of the head at --out (its weights as "
        "they are) on the validation follow-ups and write it into that head",
    )
    arguments = parser.parse_args()
    if arguments.follow_ups_only:
        head_json = json.loads(arguments.out.read_text())
        head_json["follow_up_refuse_from"] = asyncio.run(follow_up_threshold_of(arguments.out))
        if not arguments.dry_run:
            write_head(head_json, arguments.out)
        raise SystemExit(0)
    REFUSED_CLASS, QUICK, MASK_AGENTS = not arguments.without_refused, arguments.quick, arguments.mask_agents
    trained = asyncio.run(main())
    if not arguments.dry_run:
        write_head(trained, arguments.out)
