"""Trains the front door's intent head (``make train-routing``): a multinomial logistic regression over
the local sentence embeddings of labelled messages, hyper-parameters picked on the validation split, its
confidence calibrated there (temperature scaling), written to ``master_agent/routing/intent_head.json``.

Training data: ``benchmarks/eval_routing/train.json`` (messages written from the user's side by a
separate helper, never from the code) and the shipped exemplars (generic and every pack's). The
held-out split is never read here. Needs scikit-learn (the ``dev`` extra); serving needs only numpy.
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
from master_agent.routing.intent_head import HEAD_PATH

SETS = Path(__file__).parent / "eval_routing"
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


C_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
TEMPERATURES = tuple(round(0.3 + 0.05 * step, 2) for step in range(55))


#: The master agent of each tenant kind's pack, as the labelled sets name what it does.
MASTER_TARGETS = {
    "retail": ("master_agent",),
    "queries": ("master_agent",),
    "assistant": ("calendar", "mail", "contacts"),
    "lending": ("loan",),
}
PACK_OF_KIND = {"queries": "retail"}


def master_rows() -> dict[str, list[str]]:
    """Training messages each pack's master agent was asked, by pack."""
    found: dict[str, list[str]] = {}
    for row in json.loads((SETS / "train.json").read_text()):
        kind = row["tenant_kind"]
        if row["intent"] in ("EXECUTE", "QUERY") and row["target"] in MASTER_TARGETS.get(kind, ()):
            found.setdefault(PACK_OF_KIND.get(kind, kind), []).append(row["message"])
    return found


def domain_rows() -> list[tuple[str, str]]:
    """Messages labelled with the pack whose master agent serves them, or ``other``: the training
    messages of each pack's master agent, out-of-scope ones, and the shipped EXECUTE exemplars."""
    packs = registered_domain_packs()
    rows = [(text, pack) for pack, texts in master_rows().items() for text in texts]
    rows += [
        (row["message"], "other")
        for row in json.loads((SETS / "train.json").read_text())
        if row["intent"] == "OUT_OF_SCOPE"
    ]
    exemplars = [*GENERIC_EXEMPLARS, *(e for pack in packs.values() for e in pack.routing_examples)]
    rows += [
        (e.text, e.domain if e.domain in packs else "other")
        for e in exemplars
        if e.action == "EXECUTE" and e.domain
    ]
    return rows


def labelled(name: str) -> list[tuple[str, str]]:
    rows = json.loads((SETS / name).read_text())
    return [(row["message"], eval_label(row["intent"], row["target"])) for row in rows]


def exemplar_rows() -> list[tuple[str, str]]:
    found = list(GENERIC_EXEMPLARS)
    for pack in registered_domain_packs().values():
        found.extend(pack.routing_examples)
    return [(e.text, f"QUERY:{e.query_kind}" if e.action == "QUERY" else e.action) for e in found]


async def embed(embedder: LocalMiniLMEmbedder, texts: list[str]) -> np.ndarray:
    vectors = await embedder.embed([strip_entities(text) or text for text in texts])
    return np.asarray(vectors, dtype=np.float64)


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    weights = np.exp(shifted)
    return np.asarray(weights / weights.sum(axis=1, keepdims=True))


def nll(logits: np.ndarray, truth: np.ndarray, temperature: float) -> float:
    probs = _softmax(logits / temperature)
    return float(-np.mean(np.log(np.clip(probs[np.arange(len(truth)), truth], 1e-12, 1.0))))


async def main(write: bool) -> dict[str, Any]:
    embedder = LocalMiniLMEmbedder()
    train = labelled("train.json") + exemplar_rows()
    validation = labelled("validation.json")
    x_train = await embed(embedder, [text for text, _ in train])
    x_val = await embed(embedder, [text for text, _ in validation])
    labels = sorted({label for _, label in train})
    index = {label: i for i, label in enumerate(labels)}
    y_train = np.array([index[label] for _, label in train])
    known = [i for i, (_, label) in enumerate(validation) if label in index]
    y_val = np.array([index[validation[i][1]] for i in known])
    x_val = x_val[known]
    print(f"train {len(train)} ({Counter(label for _, label in train)})")
    print(f"validation {len(validation)} ({len(validation) - len(known)} with a label unseen in training)")

    best: tuple[float, float, str] | None = None
    for weighting in ("balanced", None):
        for c in C_GRID:
            model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting)
            model.fit(x_train, y_train)
            accuracy = float(np.mean(model.predict(x_val) == y_val))
            print(f"  C={c:<6g} class_weight={weighting!s:8s} validation accuracy {accuracy:.1%}")
            if best is None or accuracy > best[0]:
                best = (accuracy, c, str(weighting))
    assert best is not None
    accuracy, c, weighting = best
    model = LogisticRegression(C=c, max_iter=4000, class_weight=None if weighting == "None" else "balanced")
    model.fit(x_train, y_train)
    logits = x_val @ model.coef_.T + model.intercept_
    temperature = min(TEMPERATURES, key=lambda t: nll(logits, y_val, t))
    print(
        f"chosen: C={c:g} class_weight={weighting}; validation accuracy {accuracy:.1%}; "
        f"temperature {temperature} (validation NLL {nll(logits, y_val, 1.0):.3f} -> "
        f"{nll(logits, y_val, temperature):.3f})"
    )
    domains = domain_rows()
    domain_model = LogisticRegression(C=c, max_iter=4000, class_weight="balanced")
    domain_model.fit(await embed(embedder, [text for text, _ in domains]), [label for _, label in domains])
    print(f"domain head: {len(domains)} messages ({Counter(label for _, label in domains)})")
    head = {
        "embedder": embedder.model_name,
        "labels": labels,
        "coef": [[round(float(v), 6) for v in row] for row in model.coef_],
        "intercept": [round(float(v), 6) for v in model.intercept_],
        "temperature": temperature,
        "master_examples": master_rows(),
        "domains": {
            "labels": [str(label) for label in domain_model.classes_],
            "coef": [[round(float(v), 6) for v in row] for row in domain_model.coef_],
            "intercept": [round(float(v), 6) for v in domain_model.intercept_],
        },
        "trained_on": {"messages": len(train), "C": c, "class_weight": weighting},
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
