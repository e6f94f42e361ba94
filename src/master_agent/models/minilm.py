"""all-MiniLM-L6-v2's sentence vectors computed with NumPy from the shipped weights, without PyTorch.

The model is a 6-layer BERT (384 hidden, 12 heads, 1,536 intermediate, exact-erf GELU) whose token
vectors are mean-pooled over the attention mask and L2-normalised, as sentence-transformers' pipeline
(``Transformer -> Pooling(mean) -> Normalize``) computes them; texts are cut at 256 word pieces, its
``max_seq_length``. The word pieces come from the model's own ``tokenizer.json`` through the
``tokenizers`` library. The weights are memory-mapped from ``model.safetensors`` (read-only, never
copied): processes on one machine share them through the page cache, and of the 47 MB word-embedding
table only the rows of words met are ever read in. A serving process so holds ~45 MB for the model,
where PyTorch and sentence-transformers held ~450 MB (measured, issue 46).
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import erf

#: Word pieces per text, as sentence-transformers cuts them for this model (``sentence_bert_config.json``).
MAX_TOKENS = 256
#: Texts run through the encoder together at most (sorted by length, so little padding is computed).
BATCH = 32
#: Float32 cells one batch's largest intermediates may take: the attention scores (rows x heads x width^2)
#: and the feed-forward layer (rows x width x 1,536). 32 texts of 256 pieces took ~300 MB at once, and a
#: serving process keeps what its allocator once grew to (issue 46: RSS per worker); 2^21 cells are 8 MB.
BATCH_CELLS = 2**21
LAYER_NORM_EPS = 1e-12
#: The safetensors dtypes the weights use.
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}

Matrix = np.ndarray[Any, np.dtype[np.float32]]


def _safetensors(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """The tensors of a safetensors file as read-only views of one memory map (format: an 8-byte
    little-endian header length, a JSON header of dtype, shape and byte offsets, then the data)."""
    with path.open("rb") as file:
        (length,) = struct.unpack("<Q", file.read(8))
        header: dict[str, Any] = json.loads(file.read(length))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + length)
    tensors: dict[str, np.ndarray[Any, Any]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        tensors[name] = data[start:end].view(_DTYPES[entry["dtype"]]).reshape(entry["shape"])
    return tensors


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix) -> Matrix:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: Matrix = (x - mean) / np.sqrt(variance + LAYER_NORM_EPS) * weight + bias
    return out


def one_blas_thread() -> None:
    """NumPy's BLAS (OpenBLAS) on one thread in this process, unless its environment names a number.

    The encoder's matrices are small (a message is tens of word pieces): OpenBLAS's threads, one per
    core, wait for each other on every product, and on a busy machine they wait for the CPU too. On
    the 2-core machine at load 15, 20 encodings of 2 texts took 51.8 s with its threads and 5.0 s with
    one; 100 texts in one call 24.0 s and 6.1 s. Every other thread of the service is free meanwhile."""
    if any(os.environ.get(name) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")):
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


class MiniLM:
    """The encoder: ``encode(texts)`` gives one unit vector of 384 floats per text."""

    def __init__(self, model_dir: Path) -> None:
        from tokenizers import Tokenizer

        one_blas_thread()

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        config = json.loads((model_dir / "config.json").read_text())
        self.heads: int = config["num_attention_heads"]
        self.layers: int = config["num_hidden_layers"]
        self.weights = _safetensors(model_dir / "model.safetensors")

    def _w(self, name: str) -> Matrix:
        return self.weights[name]

    def encode(self, texts: Sequence[str]) -> Matrix:
        vectors = np.zeros((len(texts), self._w("embeddings.word_embeddings.weight").shape[1]), np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        for chosen in self._batches(order, [len(encodings[index].ids) for index in order]):
            width = max(len(encodings[index].ids) for index in chosen)
            ids = np.zeros((len(chosen), width), np.int64)
            mask = np.zeros((len(chosen), width), np.float32)
            for row, index in enumerate(chosen):
                pieces = encodings[index].ids
                ids[row, : len(pieces)] = pieces
                mask[row, : len(pieces)] = 1.0
            vectors[chosen] = self._pooled(ids, mask)
        return vectors

    def _batches(self, order: list[int], widths: list[int]) -> list[list[int]]:
        """``order`` (texts sorted by width, ascending) cut into runs of at most ``BATCH`` texts whose
        intermediates fit ``BATCH_CELLS``: short texts go 32 at a time, the longest one or two."""
        inner = self._w("encoder.layer.0.intermediate.dense.weight").shape[0]
        batches: list[list[int]] = []
        first = 0
        while first < len(order):
            last = first + 1  # one text always goes, however long
            while last < len(order) and last - first < BATCH:
                width, rows = widths[last], last - first + 1  # ascending: the newest text is the widest
                if rows * width * max(self.heads * width, inner) > BATCH_CELLS:
                    break
                last += 1
            batches.append(order[first:last])
            first = last
        return batches

    def _pooled(self, ids: np.ndarray[Any, np.dtype[np.int64]], mask: Matrix) -> Matrix:
        """Mean of the last layer's token vectors over the mask, L2-normalised."""
        batch, width = ids.shape
        w = self._w
        x = (
            w("embeddings.word_embeddings.weight")[ids]
            + w("embeddings.position_embeddings.weight")[:width]
            + w("embeddings.token_type_embeddings.weight")[0]
        )
        x = _layer_norm(x, w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        # Padding gets no attention: the most negative float32, as transformers masks it.
        blocked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        size = x.shape[-1] // self.heads
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."

            def dense(h: Matrix, name: str, prefix: str = p) -> Matrix:
                # One matrix product over every token (a stacked product is ~5x slower in NumPy).
                flat = h.reshape(batch * width, -1) @ w(f"{prefix}{name}.weight").T
                out: Matrix = (flat + w(f"{prefix}{name}.bias")).reshape(batch, width, -1)
                return out

            def split(h: Matrix) -> Matrix:  # (batch, width, hidden) -> (batch, heads, width, size)
                return h.reshape(batch, width, self.heads, size).transpose(0, 2, 1, 3)

            q = split(dense(x, "attention.self.query"))
            k = split(dense(x, "attention.self.key"))
            v = split(dense(x, "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + blocked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, -1)
            x = _layer_norm(
                dense(context, "attention.output.dense") + x,
                w(f"{p}attention.output.LayerNorm.weight"),
                w(f"{p}attention.output.LayerNorm.bias"),
            )
            inner = dense(x, "intermediate.dense")
            inner = inner * 0.5 * (1.0 + erf(inner / np.float32(np.sqrt(2.0)))).astype(np.float32)
            x = _layer_norm(
                dense(inner, "output.dense") + x,
                w(f"{p}output.LayerNorm.weight"),
                w(f"{p}output.LayerNorm.bias"),
            )
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Matrix = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit
