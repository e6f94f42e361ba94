"""Trains the answer head (``make train-answers``): what a user's answer to a draft or a preview does to
it (accept, cancel, revise, or other: a message about something else), as a multinomial logistic
regression over the local sentence embedding of the answer. The runtime reads answers by its rules first
(``runtime.proposals.read_feedback``: "approve", "change X to Y", "cancel"); the head reads the ones no
rule reads ("that works", "off you go", "👍", "correct, go on then"), and only to accept or cancel:

- C and class weighting are picked on the validation rows;
- each of the two is acted on only at or above its own floor: just above the most confident reading of
  it that was wrong, among out-of-fold readings of the training rows (``FOLD_REPEATS`` x ``FOLDS``-fold
  stratified cross-validation) pooled with the validation readings. An answer read as accepting that
  did not accept sends a mail or books an event nobody approved, so no wrong reading in the pool is acted on.

Rows: ``eval_assistant/answers.json`` ("train" and "validation", written from the user's side) and,
for validation only, the answers that end the tuning cases' drafts (``tuning*.json``, probes): a case
that ends done was approved by its last turn, one that ends cancelled was withdrawn by it. The held-out
sets are never read. Written to ``master_agent/runtime/answer_head.json``. Needs scikit-learn (the
``dev`` extra); serving needs only numpy.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import RepeatedStratifiedKFold

from master_agent.models.embeddings import LocalMiniLMEmbedder
from master_agent.runtime.answer_head import ACTED_ON, ANSWER_HEAD_PATH, answer_text_read

SETS = Path(__file__).parent / "eval_assistant"
C_GRID = (0.5, 2.0, 8.0, 32.0)
FOLDS = 5
FOLD_REPEATS = 3
#: The tuning parts whose last answers are validation rows (held-out parts never).
TUNING_PARTS = (
    "tuning",
    "probes",
    "probes2",
    "tuning2",
    "tuning3",
    "tuning4",
    "tuning5",
    "tuning6",
    "tuning7",
)


def test_rows() -> list[tuple[str, str]]:
    """The test answers: never trained on, never used to pick C, weighting or a floor; only reported."""
    labelled = json.loads((SETS / "answers.json").read_text())
    return [(text, label) for label, texts in labelled.get("test", {}).items() for text in texts]


def acted_on(
    probs: np.ndarray, truth: np.ndarray, labels: list[str], floors: dict[str, float]
) -> dict[str, Any]:
    """Per label acted on: the answers read as it at or above its floor, the right ones, and how many are."""
    top = probs.argmax(axis=1)
    sure = probs.max(axis=1)
    counts: dict[str, Any] = {}
    for label in ACTED_ON:
        read = (top == labels.index(label)) & (sure >= floors[label])
        counts[label] = {
            "read": int(read.sum()),
            "right": int((read & (truth == label)).sum()),
            "of": int((truth == label).sum()),
        }
    return counts


def rows() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    labelled = json.loads((SETS / "answers.json").read_text())
    train = [(text, label) for label, texts in labelled["train"].items() for text in texts]
    validation = [(text, label) for label, texts in labelled["validation"].items() for text in texts]
    for part in TUNING_PARTS:
        path = SETS / f"{part}.json"
        if "heldout" in part or not path.exists():
            continue
        for case in json.loads(path.read_text()):
            outcome = case["expected"].get("outcome")
            if len(case["turns"]) < 2 or outcome not in ("done", "cancelled"):
                continue
            validation.append((case["turns"][-1], "accept" if outcome == "done" else "cancel"))
    return train, validation


async def vectors(embedder: LocalMiniLMEmbedder, texts: list[str]) -> np.ndarray:
    return np.asarray(await embedder.embed([answer_text_read(text) for text in texts]), dtype=np.float64)


def _softmax(logits: np.ndarray) -> np.ndarray:
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def out_of_fold(
    x: np.ndarray, y: np.ndarray, labels: list[str], c: float, weighting: str | None
) -> np.ndarray:
    folds = RepeatedStratifiedKFold(n_splits=FOLDS, n_repeats=FOLD_REPEATS, random_state=0)
    probs = np.zeros((FOLD_REPEATS, len(y), len(labels)))
    for index, (fit_rows, held_rows) in enumerate(folds.split(x, y)):
        model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting).fit(x[fit_rows], y[fit_rows])
        probs[index // FOLDS, held_rows] = model.predict_proba(x[held_rows])
    return probs.reshape(FOLD_REPEATS * len(y), len(labels))


def floor_of(label: str, probs: np.ndarray, truth: np.ndarray, labels: list[str]) -> float:
    """Just above the most confident wrong reading of ``label`` in the pool (1.0: never acted on)."""
    index = labels.index(label)
    read = probs.argmax(axis=1) == index
    wrong = read & (truth != label)
    if not wrong.any():
        return round(float(probs[read, index].min()) if read.any() else 1.0, 3)
    return min(1.0, round(float(probs[wrong, index].max()) + 0.001, 3))


async def main(write: bool) -> dict[str, Any]:
    train, validation = rows()
    embedder = LocalMiniLMEmbedder()
    x_train = await vectors(embedder, [text for text, _ in train])
    x_val = await vectors(embedder, [text for text, _ in validation])
    y_train = np.asarray([label for _, label in train])
    y_val = np.asarray([label for _, label in validation])
    labels = sorted(set(y_train))
    best: tuple[float, float, str | None] | None = None
    best_score = -1.0
    for c in C_GRID:
        for weighting in (None, "balanced"):
            model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting).fit(x_train, y_train)
            score = float((model.predict(x_val) == y_val).mean())
            print(f"C={c} weighting={weighting}: validation {score:.1%}")
            if score > best_score:
                best, best_score = (c, 0.0, weighting), score
    assert best is not None
    c, _, weighting = best
    model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting).fit(x_train, y_train)
    pool_probs = np.concatenate(
        [out_of_fold(x_train, y_train, labels, c, weighting), model.predict_proba(x_val)]
    )
    pool_truth = np.concatenate([np.tile(y_train, FOLD_REPEATS), y_val])
    floors = {label: floor_of(label, pool_probs, pool_truth, labels) for label in ACTED_ON}
    acted = acted_on(model.predict_proba(x_val), y_val, labels, floors)
    test = test_rows()
    x_test = await vectors(embedder, [text for text, _ in test]) if test else np.zeros((0, x_train.shape[1]))
    y_test = np.asarray([label for _, label in test])
    test_probs = model.predict_proba(x_test) if test else np.zeros((0, len(labels)))
    tested = acted_on(test_probs, y_test, labels, floors)
    test_accuracy = (
        float((test_probs.argmax(axis=1) == np.asarray([labels.index(y) for y in y_test])).mean())
        if test
        else 0.0
    )
    print(f"picked C={c} weighting={weighting}: validation {best_score:.1%} over {len(y_val)} answers")
    for label, counts in acted.items():
        print(
            f"{label}: floor {floors[label]}; validation answers acted on as {label}: {counts['read']} "
            f"({counts['right']} right) of {counts['of']} that are"
        )
    print(f"test (never tuned on): accuracy {test_accuracy:.1%} over {len(y_test)} answers")
    for label, counts in tested.items():
        print(
            f"{label}: test answers acted on as {label}: {counts['read']} ({counts['right']} right) of {counts['of']}"
        )
    head = {
        "embedder": embedder.model_name,
        "labels": labels,
        "coef": model.coef_.tolist(),
        "intercept": model.intercept_.tolist(),
        "floors": floors,
        "trained_on": len(train),
        "validation": {"rows": len(y_val), "accuracy": round(best_score, 4), "acted": acted},
        "test": {"rows": len(y_test), "accuracy": round(test_accuracy, 4), "acted": tested},
        "c": c,
        "class_weight": weighting,
    }
    if write:
        ANSWER_HEAD_PATH.write_text(json.dumps(head) + "\n")
        print(f"written to {ANSWER_HEAD_PATH}")
    return head


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dry-run", action="store_true", help="train and print, write nothing")
    arguments = parser.parse_args()
    asyncio.run(main(write=not arguments.dry_run))
