"""Trains the front door's intent head (``make train-routing``): a multinomial logistic regression over
the local sentence embedding of labelled messages and hashed counts of their words and word pairs; the
features' mix, C and class weighting picked on the validation splits, its confidence calibrated there
(temperature scaling); the domain head likewise. Written to ``master_agent/routing/intent_head.json``.

Training data: ``benchmarks/eval_routing/train.json`` and ``train2.json`` (two batches of messages
written from the user's side by separate helpers, never from the code) and the shipped exemplars
(generic and every pack's); ``validation.json`` and ``validation2.json`` choose. The held-out splits
are never read here. Needs scikit-learn (the ``dev`` extra); serving needs only numpy.
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
from master_agent.evolution.embeddings import LocalMiniLMEmbedder
from master_agent.routing.exemplars import GENERIC_EXEMPLARS
from master_agent.routing.intent import strip_entities
from master_agent.routing.intent_head import HEAD_PATH, Features

SETS = Path(__file__).parent / "eval_routing"
#: The labelled batches, where present (the second arrived later).
TRAIN_FILES = ("train.json", "train2.json")
VALIDATION_FILES = ("validation.json", "validation2.json")
#: The query kinds the service answers itself; a question about anything else goes to an agent.
QUERY_KINDS = ("data", "knowledge", "outcome", "list_agents")


def eval_label(intent: str, target: str | None) -> str:
    """The head's label for a labelled message: the sets' intents in the service's terms. META_BUILD
    (a system of agents) is a CREATE for the builder; OUT_OF_SCOPE and META_OPERATE are EXECUTEs (what
    serves them is discovery's answer); CLARIFY is AMBIGUOUS; a question no built-in query kind
    answers (a loan's instalment) goes to an agent: EXECUTE."""
    if intent == "QUERY":
        return f"QUERY:{target}" if target in QUERY_KINDS else "EXECUTE"
    return {
        "META_BUILD": "CREATE",
        "OUT_OF_SCOPE": "EXECUTE",
        "META_OPERATE": "EXECUTE",
        "CLARIFY": "AMBIGUOUS",
    }.get(intent, intent)


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


def rows_of(files: tuple[str, ...]) -> list[dict[str, Any]]:
    return [row for name in files if (SETS / name).exists() for row in json.loads((SETS / name).read_text())]


def master_rows(files: tuple[str, ...] = TRAIN_FILES) -> dict[str, list[str]]:
    """Messages each pack's master agent was asked, by pack."""
    found: dict[str, list[str]] = {}
    for row in rows_of(files):
        kind = row["tenant_kind"]
        if row["intent"] in ("EXECUTE", "QUERY") and row["target"] in MASTER_TARGETS.get(kind, ()):
            found.setdefault(PACK_OF_KIND.get(kind, kind), []).append(row["message"])
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


def labelled(files: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(row["message"], eval_label(row["intent"], row["target"])) for row in rows_of(files)]


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


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    weights = np.exp(shifted)
    return np.asarray(weights / weights.sum(axis=1, keepdims=True))


def nll(logits: np.ndarray, truth: np.ndarray, temperature: float) -> float:
    probs = _softmax(logits / temperature)
    return float(-np.mean(np.log(np.clip(probs[np.arange(len(truth)), truth], 1e-12, 1.0))))


def _grid() -> list[tuple[Features, float, str | None]]:
    return [
        (Features(lexical_dim=LEXICAL_DIM if weight else 0, lexical_weight=weight), c, weighting)
        for weight in LEXICAL_WEIGHTS
        for weighting in ("balanced", None)
        for c in C_GRID
    ]


def fit_best(
    name: str,
    train: tuple[np.ndarray, list[str], list[str]],
    validation: tuple[np.ndarray, list[str], list[str]],
) -> tuple[LogisticRegression, Features, float, dict[str, Any]]:
    """The grid's model best on validation (accuracy, then log-loss), refitted on training only."""
    (x_train, train_texts, y_train), (x_val, val_texts, y_val) = train, validation
    best: tuple[float, float, Features, float, str | None] | None = None
    for features, c, weighting in _grid():
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
    return {"lexical_dim": features.lexical_dim, "lexical_weight": features.lexical_weight}


async def main(write: bool) -> dict[str, Any]:
    embedder = LocalMiniLMEmbedder()
    train = labelled(TRAIN_FILES) + exemplar_rows()
    validation = labelled(VALIDATION_FILES)
    train_texts, val_texts = [text for text, _ in train], [text for text, _ in validation]
    x_train, x_val = await embed(embedder, train_texts), await embed(embedder, val_texts)
    y_train, y_val = [label for _, label in train], [label for _, label in validation]
    print(f"train {len(train)} ({Counter(y_train)})")
    print(f"validation {len(validation)} ({Counter(y_val)})")
    model, features, accuracy, chosen = fit_best(
        "intent head", (x_train, train_texts, y_train), (x_val, val_texts, y_val)
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
    domains, domains_val = domain_rows(), domain_rows(VALIDATION_FILES, exemplars=False)
    domain_texts, domain_val_texts = [t for t, _ in domains], [t for t, _ in domains_val]
    domain_model, domain_features, _, domain_chosen = fit_best(
        "domain head",
        (await embed(embedder, domain_texts), domain_texts, [label for _, label in domains]),
        (await embed(embedder, domain_val_texts), domain_val_texts, [label for _, label in domains_val]),
    )
    print(f"domain head: {len(domains)} messages ({Counter(label for _, label in domains)})")
    head = {
        "embedder": embedder.model_name,
        "labels": labels,
        "coef": [[round(float(v), 5) for v in row] for row in model.coef_],
        "intercept": [round(float(v), 5) for v in model.intercept_],
        "temperature": temperature,
        "features": _features_json(features),
        "master_examples": master_rows(),
        "domains": {
            "labels": [str(label) for label in domain_model.classes_],
            "coef": [[round(float(v), 5) for v in row] for row in domain_model.coef_],
            "intercept": [round(float(v), 5) for v in domain_model.intercept_],
            "features": _features_json(domain_features),
            "trained_on": {"messages": len(domains), **domain_chosen},
        },
        "trained_on": {
            "messages": len(train),
            "files": [f for f in TRAIN_FILES if (SETS / f).exists()],
            **chosen,
        },
        "validation_accuracy": round(accuracy, 4),
    }
    if write:
        HEAD_PATH.write_text(json.dumps(head, separators=(",", ":")) + "\n")
        print(f"wrote {HEAD_PATH} ({math.ceil(HEAD_PATH.stat().st_size / 1024)} KiB)")
    return head


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dry-run", action="store_true", help="train and report, write nothing")
    asyncio.run(main(write=not parser.parse_args().dry_run))
