"""Trains the lending pack's fact head (``make train-facts``): which documented product fact
(``domains/lending/facts.py`` FACTS) a customer's question asks about, or ``none``, as a multinomial
logistic regression over the local sentence embedding of the question.

Training rows: each fact's own phrasings and ``eval_lending/facts.json`` "train". Validation: its
"validation" rows (written apart from the training rows) and the question steps of
``eval_lending/tuning.json`` and ``probes.json`` (``must_answer_question`` at ``question_step``; the
``off_topic_steps`` as ``none``). The held-out set is never read. C and the class weighting are picked
on validation, the confidence calibrated there (temperature scaling), and ``answer_above`` is the least
confidence at which no validation question is answered with a wrong fact (a wrong answer costs more
than the "I can answer questions about ..." fallback), and at least an even chance. Written to
``master_agent/domains/lending/fact_head.json``. Needs scikit-learn (the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.train_routing import TEMPERATURES, _softmax, nll
from sklearn.linear_model import LogisticRegression

from master_agent.domains.lending.facts import FACT_HEAD_PATH, FACTS, NONE, questions
from master_agent.models.embeddings import LocalMiniLMEmbedder

SETS = Path(__file__).parent / "eval_lending"
C_GRID = (0.5, 1.0, 4.0, 16.0, 64.0)
#: ``answer_above`` is never below an even chance, however few validation errors there are.
MIN_ANSWER = 0.5


def _steps(case: dict[str, Any]) -> list[tuple[str, str]]:
    expected = case["expected"]
    rows: list[tuple[str, str]] = []
    said = [step.get("say") for step in case["steps"]]
    topic, at = expected.get("must_answer_question"), expected.get("question_step")
    if topic and at is not None and said[at]:
        rows += [(question, topic) for question in questions(said[at])[:1]]
    for step in expected.get("off_topic_steps") or []:
        if said[step]:
            rows += [(question, NONE) for question in questions(said[step])]
    return rows


def rows() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    labelled = json.loads((SETS / "facts.json").read_text())
    train = [(phrasing, fact.topic) for fact in FACTS for phrasing in fact.phrasings]
    train += [(row["text"], row["topic"]) for row in labelled["train"]]
    validation = [(row["text"], row["topic"]) for row in labelled["validation"]]
    for part in ("tuning", "probes"):
        for case in json.loads((SETS / f"{part}.json").read_text()):
            validation += _steps(case)
    return train, validation


async def main(write: bool) -> dict[str, Any]:
    train, validation = rows()
    embedder = LocalMiniLMEmbedder()
    x_train = np.asarray(await embedder.embed([t for t, _ in train]), dtype=np.float64)
    x_val = np.asarray(await embedder.embed([t for t, _ in validation]), dtype=np.float64)
    y_train, y_val = [v for _, v in train], [v for _, v in validation]
    print(f"train {len(train)} rows {dict(Counter(y_train))}; validation {len(validation)} rows")
    best: tuple[float, Any] | None = None
    for c in C_GRID:
        for weighting in (None, "balanced"):
            model = LogisticRegression(C=c, max_iter=4000, class_weight=weighting)
            model.fit(x_train, y_train)
            right = float(np.mean(model.predict(x_val) == np.asarray(y_val)))
            labels = [str(label) for label in model.classes_]
            truth = np.asarray([labels.index(v) for v in y_val])
            fitted = x_val @ model.coef_.T + model.intercept_
            # Ties on accuracy go to the surer head (the lower validation log-loss, calibrated).
            loss = min(nll(fitted, truth, t) for t in TEMPERATURES)
            print(f"  C {c} {weighting}: validation {right:.1%}, log-loss {loss:.3f}")
            if best is None or (right, -loss) > best[0]:
                best = ((right, -loss), (c, weighting, model))
    assert best is not None
    (right, _), (c, weighting, model) = best
    labels = [str(label) for label in model.classes_]
    truth = np.asarray([labels.index(v) for v in y_val])
    logits = x_val @ model.coef_.T + model.intercept_
    temperature = min(TEMPERATURES, key=lambda t: nll(logits, truth, t))
    probs = _softmax(logits / temperature)
    top, guess = probs.max(axis=1), probs.argmax(axis=1)
    facts = np.asarray([labels[g] != NONE for g in guess])
    wrong = facts & (guess != truth)
    # The least threshold above which no fact answer on validation is wrong.
    answer_above = max(MIN_ANSWER, round(float(max(top[wrong], default=0.0)) + 0.01, 3))
    answered = facts & (top >= answer_above)
    asked = np.asarray([v != NONE for v in y_val])
    print(
        f"chosen: C {c} {weighting}: validation {right:.1%}; temperature {temperature}; answer above "
        f"{answer_above}: {int((answered & (guess == truth)).sum())}/{int(asked.sum())} questions answered "
        f"with their fact, {int((answered & ~asked).sum())}/{int((~asked).sum())} other messages answered"
    )
    for (text, topic), g, p in zip(validation, guess, top, strict=True):
        if labels[g] != topic or (labels[g] != NONE and p < answer_above):
            print(
                f"    {'wrong' if labels[g] != topic else 'unsure'}: {text!r}: {topic} read as {labels[g]} ({p:.2f})"
            )
    head = {
        "embedder": embedder.model_name,
        "labels": labels,
        "coef": [[round(float(v), 5) for v in row] for row in model.coef_],
        "intercept": [round(float(v), 5) for v in model.intercept_],
        "temperature": temperature,
        "answer_above": answer_above,
        "validation_accuracy": round(right, 4),
    }
    if write:
        FACT_HEAD_PATH.write_text(json.dumps(head, separators=(",", ":")) + "\n")
        print(f"wrote {FACT_HEAD_PATH}")
    return head


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dry-run", action="store_true", help="report, do not write the head")
    asyncio.run(main(write=not parser.parse_args().dry_run))
