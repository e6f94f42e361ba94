"""WordNet's lemma index looked up in its own files, in place of the dictionary nltk's reader builds of it.

nltk's ``WordNetCorpusReader`` reads the four ``index.*`` files whole into a dictionary of lemma -> part of
speech -> synset offsets: 147k lemmas, about 70 MB of Python objects in every serving process (issue 46:
memory per worker). The files are sorted by lemma (byte order), so a lemma is found by a binary search
over the file's lines instead. The files are memory-mapped read-only: their pages are the page cache's,
shared by every process on the machine, and only the pages a search touches are read in. What a process
keeps of its own is the start of each line (an array of 4-byte offsets, 0.6 MB) and the entries of the
lemmas it looked up lately.
"""

from __future__ import annotations

import heapq
import mmap
from bisect import bisect_left
from collections.abc import Iterator, Set
from functools import lru_cache
from pathlib import Path

import numpy as np

#: The parts of speech nltk keys its index by, and the file of each; ``s`` (adjective satellite) is read
#: from the adjectives' entries, as nltk does.
POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
ADJ, ADJ_SAT = "a", "s"
#: Entries of lemmas looked up lately, kept: routing looks up the same few thousand words again and again.
CACHED_LEMMAS = 8192


class IndexFile:
    """One ``index.<pos>`` file: its lines found by lemma through a binary search."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as file:
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
            # Read once, apart from the map, so the map's pages stay out of this process until searched.
            ends = np.flatnonzero(np.frombuffer(file.read(), dtype=np.uint8) == ord("\n"))
        starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.uint32)
        # The licence at the top: lines that begin with two spaces (they sort before every lemma).
        first = 0
        while first < len(starts) and self._map[int(starts[first]) : int(starts[first]) + 2] == b"  ":
            first += 1
        self._starts = starts[first:]

    def __len__(self) -> int:
        return len(self._starts)

    def _lemma_at(self, line: int) -> bytes:
        start = int(self._starts[line])
        return self._map[start : self._map.find(b" ", start)]

    def offsets(self, lemma: bytes) -> list[int] | None:
        """The synset offsets of ``lemma`` in this part of speech, in the file's order; None if it has none."""
        line = bisect_left(range(len(self._starts)), lemma, key=self._lemma_at)
        if line == len(self._starts) or self._lemma_at(line) != lemma:
            return None
        start = int(self._starts[line])
        fields = self._map[start : self._map.find(b"\n", start)].split()
        # lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...
        return [int(field) for field in fields[-int(fields[2]) :]]

    def __contains__(self, lemma: object) -> bool:
        return isinstance(lemma, str) and self.offsets(lemma.encode()) is not None

    def lemmas(self) -> Iterator[str]:
        for line in range(len(self._starts)):
            yield self._lemma_at(line).decode()


class LemmaIndex:
    """What nltk's reader keeps as ``_lemma_pos_offset_map``: ``index[lemma]`` is a dictionary of part of
    speech -> synset offsets, empty for a lemma WordNet lacks (nltk's is a ``defaultdict(dict)``)."""

    def __init__(self, root: Path, satellites: Set[int]) -> None:
        self._files = {pos: IndexFile(root / f"index.{suffix}") for pos, suffix in POS_FILES.items()}
        self._satellites = satellites
        self._entry = lru_cache(maxsize=CACHED_LEMMAS)(self._read_entry)

    def _read_entry(self, lemma: str) -> dict[str, list[int]]:
        key = lemma.encode()
        entry: dict[str, list[int]] = {}
        for pos, index in self._files.items():
            offsets = index.offsets(key)
            if offsets is None:
                continue
            entry[pos] = offsets
            if pos == ADJ:
                entry[ADJ_SAT] = [offset for offset in offsets if offset in self._satellites]
        return entry

    def __getitem__(self, lemma: str) -> dict[str, list[int]]:
        return self._entry(lemma)

    def get(self, lemma: str, default: dict[str, list[int]] | None = None) -> dict[str, list[int]] | None:
        return self._entry(lemma) or default

    def __contains__(self, lemma: object) -> bool:
        return isinstance(lemma, str) and bool(self._entry(lemma))

    def __iter__(self) -> Iterator[str]:
        """Every lemma once, in byte order."""
        previous = None
        for lemma in heapq.merge(*(index.lemmas() for index in self._files.values())):
            if lemma != previous:
                yield lemma
                previous = lemma

    def __len__(self) -> int:
        return sum(1 for _ in self)
