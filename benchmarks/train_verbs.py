"""Trains the assistant's verb head (``make train-verbs``): which of its actions a request asks for, as a
multinomial logistic regression over the local sentence embedding of the request (names, days and
times masked: ``requests.masked``) and of its first words, beside hashed counts of its words and word
pairs. The mix of features, C and class weighting are picked on the validation rows. The confidence
(temperature scaling) and the confidence below which the assistant asks rather than acts (the floor) are
fitted on readings the head did not train on *and* that are wrong often enough to measure: out-of-fold
readings of the training rows (``FOLD_REPEATS`` x ``FOLDS``-fold stratified cross-validation, same mix,
C and weighting) pooled with the validation readings. Validation alone came to hold no wrong reading:
its temperature ran to the grid's lowest and its floor (the lowest at which every validation reading
above it is right) to 0.0, and the assistant acted on every reading. The floor sits just above one of
the pool's wrong write readings, the one that costs least (a write done on a wrong reading costs
``WRONG_WRITE_COST`` questions asked), so it is never zero; with no wrong write reading in the pool the
trainer stops rather than guess. Written to ``master_agent/domains/assistant/verb_head.json``.

Training rows: the pack's own example requests (``requests.EXAMPLES``) and ``eval_assistant/verbs.json``
"train" (assistant messages of the routing sets ``eval_routing/train*.json``, written from the user's
side, with the verb each asks for labelled by hand). Validation: its "validation" rows (from
``eval_routing/validation*.json``) and the first turns of ``eval_assistant/tuning.json``,
``probes.json``, ``probes2.json`` and ``tuning2.json``, their verb taken from the case's category (a case of
two verbs, ``multi_step``, is left out). The held-out sets are never read.
Needs scikit-learn (the ``dev`` extra); serving needs only numpy.
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
from benchmarks.train_routing import TEMPERATURES, _softmax, nll
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold

from master_agent.domains.assistant.requests import (
    EXAMPLES,
    VERB_HEAD_PATH,
    WRITES,
    imperative_verb,
    opening,
    request_texts,
)
from master_agent.models.embeddings import LocalMiniLMEmbedder
from master_agent.routing.intent_head import Features

SETS = Path(__file__).parent / "eval_assistant"
#: A tuning case's verb by its category (a clarification or an ambiguity case: by its first words).
CATEGORY_VERBS = {
    "create_event": "schedule",
    "hour_rule": "schedule",
    "reschedule": "reschedule",
    "cancel_event": "cancel_event",
    "free_slots": "free_slots",
    "summarise_mail": "read_mail",
    "send_mail": "send_mail",
    "draft_edit": "send_mail",
    "contact_lookup": "contact",
    "list_events": "agenda",
    "unsupported": "unsupported",
}
C_GRID = (1.0, 4.0, 16.0, 64.0)
LEXICAL_DIM = 2048
LEXICAL_WEIGHTS = (0.0, 0.5, 1.0)
#: A write done on a wrong reading costs as much as this many questions asked of the user.
WRONG_WRITE_COST = 3
#: Cross-validation of the training rows for the floor: repeated so that the floor does not hang on one
#: shuffle (one 5-fold split alone put it anywhere from 0.76 to 0.96 over three seeds).
FOLDS = 5
FOLD_REPEATS = 3


def _case_verb(case: dict[str, Any]) -> str | None:
    verb = CATEGORY_VERBS.get(case["category"])
    if verb is not None:
        return verb
    first = case["turns"][0].lower()
    if case["category"] == "clarification_answer":
        return "reschedule" if any(w in first for w in ("move", "reschedule")) else "schedule"
    if case["category"] in ("ambiguous", "unknown_person", "preview_decision"):
        if first.startswith(("schedule", "book", "set up", "invite")):
            return "schedule"
        if first.startswith(("email", "write", "tell", "send", "draft", "let", "message")):
            return "send_mail"
    return None


def rows() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    labelled = json.loads((SETS / "verbs.json").read_text())
    train = [(text, verb) for verb, texts in EXAMPLES.items() for text in texts]
    train += [(row["message"], row["verb"]) for row in labelled["train"]]
    validation = [(row["message"], row["verb"]) for row in labelled["validation"]]
    for part in ("tuning", "probes", "probes2", "tuning2"):
        if not (SETS / f"{part}.json").exists():
            continue
        for case in json.loads((SETS / f"{part}.json").read_text()):
            verb = _case_verb(case)
            if verb is not None:
                validation.append((case["turns"][0], verb))
    return train, validation


async def vectors(embedder: LocalMiniLMEmbedder, texts: list[str]) -> np.ndarray:
    masked = request_texts(texts)
    whole = await embedder.embed(masked)
    first = await embedder.embed([opening(text) for text in masked])
    return np.asarray([[*w, *f] for w, f in zip(whole, first, strict=True)], dtype=np.float64)


def featured(x: np.ndarray, texts: list[str], features: Features) -> np.ndarray:
    masked = request_texts(texts)
    return np.asarray([features.of(list(row), text) for row, text in zip(x, masked, strict=True)])


def out_of_fold(
    f_train: np.ndarray, y_train: list[str], labels: list[str], c: float, weighting: str | None
) -> np.ndarray:
    """Each training row's logits from models that did not see it, once per repeat (rows in the order of
    ``y_train``, repeated ``FOLD_REPEATS`` times)."""
    y = np.asarray(y_train)
    folds = RepeatedStratifiedKFold(n_splits=FOLDS, n_repeats=FOLD_REPEATS, random_state=0)
    logits = np.zeros((FOLD_REPEATS, len(y), len(labels)))
    for index, (fit_rows, held_rows) in enumerate(folds.split(f_train, y)):
        model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting).fit(
            f_train[fit_rows], y[fit_rows]
        )
        if [str(label) for label in model.classes_] != labels:
            raise SystemExit(f"fold {index}: a verb has too few training rows for {FOLDS} folds")
        logits[index // FOLDS, held_rows] = f_train[held_rows] @ model.coef_.T + model.intercept_
    return logits.reshape(FOLD_REPEATS * len(y), len(labels))


def asking_floor(probs: np.ndarray, truth: np.ndarray, labels: list[str]) -> float:
    """The confidence below which a write reading is asked about: just above one of the pool's wrong
    write readings, the one whose floor costs least (ties: the lower floor). Acting or asking only changes
    at a wrong reading, so no other floor costs less; zero is not a candidate."""
    top, guess = probs.max(axis=1), probs.argmax(axis=1)
    writes = np.asarray([labels[g] in WRITES for g in guess])
    wrong = writes & (guess != truth)
    if not wrong.any():
        raise SystemExit("no wrong write reading out of fold or in validation: the floor cannot be measured")

    def cost(threshold: float) -> float:
        asked = writes & (top < threshold)
        wrong_done = wrong & (top >= threshold)
        return WRONG_WRITE_COST * float(wrong_done.sum()) + float(asked.sum())

    candidates = sorted({min(1.0, round(float(p) + 0.001, 3)) for p in top[wrong]})
    floor = min(candidates, key=lambda t: (cost(t), t))
    print(
        f"floor {floor}: of {int(writes.sum())} pooled write readings ({int(wrong.sum())} wrong), "
        f"{int((writes & (top < floor)).sum())} asked, {int((wrong & (top >= floor)).sum())} wrong done"
    )
    return floor


async def main(write: bool) -> dict[str, Any]:
    train, validation = rows()
    embedder = LocalMiniLMEmbedder()
    train_texts, val_texts = [t for t, _ in train], [t for t, _ in validation]
    x_train, x_val = await vectors(embedder, train_texts), await vectors(embedder, val_texts)
    y_train, y_val = [v for _, v in train], [v for _, v in validation]
    print(f"train {len(train)} rows {dict(Counter(y_train))}; validation {len(validation)} rows")
    best: tuple[float, Any] | None = None
    for weight in LEXICAL_WEIGHTS:
        features = Features(lexical_dim=LEXICAL_DIM if weight else 0, lexical_weight=weight)
        f_train, f_val = featured(x_train, train_texts, features), featured(x_val, val_texts, features)
        for c in C_GRID:
            for weighting in (None, "balanced"):
                model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting)
                model.fit(f_train, y_train)
                right = float(np.mean(model.predict(f_val) == np.asarray(y_val)))
                print(f"  lexical {weight} C {c} {weighting}: validation {right:.1%}")
                if best is None or right > best[0]:
                    best = (right, (features, c, weighting, model, f_train, f_val))
    assert best is not None
    right, (features, c, weighting, model, f_train, f_val) = best
    labels = [str(label) for label in model.classes_]
    truth = np.asarray([labels.index(v) for v in y_val])
    logits = f_val @ model.coef_.T + model.intercept_
    pooled_logits = np.vstack([out_of_fold(f_train, y_train, labels, c, weighting), logits])
    pooled_truth = np.concatenate([np.asarray([labels.index(v) for v in y_train] * FOLD_REPEATS), truth])
    temperature = min(TEMPERATURES, key=lambda t: nll(pooled_logits, pooled_truth, t))
    probs = _softmax(logits / temperature)
    top, guess = probs.max(axis=1), probs.argmax(axis=1)
    # Asking matters where acting on a wrong reading changes something: a reading of a write (an event
    # or an email) below ``ask_below`` is confirmed with the user first (the floor: ``asking_floor``).
    ask_below = asking_floor(_softmax(pooled_logits / temperature), pooled_truth, labels)
    writes = np.asarray([labels[g] in WRITES for g in guess])
    acted = ~writes | (top >= ask_below)
    print(
        f"chosen: lexical {features.lexical_weight} C {c} {weighting}: validation {right:.1%}; "
        f"temperature {temperature}; ask below {ask_below}: acts without asking on {acted.mean():.0%} of validation, "
        f"right on {float(np.mean(guess[acted] == truth[acted])) if acted.any() else math.nan:.1%} of those"
    )
    for text, verb, g, p in zip(val_texts, y_val, guess, top, strict=True):
        if labels[g] != verb or (labels[g] in WRITES and p < ask_below):
            mark = "wrong" if labels[g] != verb else "asked"
            print(f"    {mark}: {text!r}: {verb} read as {labels[g]} ({p:.2f})")
    head = {
        "embedder": embedder.model_name,
        "labels": labels,
        "coef": [[round(float(v), 5) for v in row] for row in model.coef_],
        "intercept": [round(float(v), 5) for v in model.intercept_],
        "temperature": temperature,
        "ask_below": ask_below,
        "features": {"lexical_dim": features.lexical_dim, "lexical_weight": features.lexical_weight},
        "validation_accuracy": round(right, 4),
        "floor_rule": f"temperature and floor on out-of-fold ({FOLD_REPEATS}x{FOLDS}) + validation readings, "
        f"a wrong write costing {WRONG_WRITE_COST} questions",
        # The verbs its training requests open with: a clause after "and" opened by one is a step.
        "openings": sorted({verb for text in train_texts if (verb := imperative_verb(text)) is not None}),
    }
    if write:
        VERB_HEAD_PATH.write_text(json.dumps(head, separators=(",", ":")) + "\n")
        print(f"wrote {VERB_HEAD_PATH}")
    return head


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dry-run", action="store_true", help="report, do not write the head")
    asyncio.run(main(write=not parser.parse_args().dry_run))
