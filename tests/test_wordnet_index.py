"""WordNet's lemma index looked up in its sorted files (``capabilities.tools.wordnet_index``) answers as the
dictionary nltk's reader builds of them, which it replaces in every serving process (issue 46)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections import defaultdict
from typing import Any

import pytest

from master_agent.capabilities.tools import lexicon
from master_agent.capabilities.tools.wordnet_index import POS_FILES, IndexFile, LemmaIndex


@pytest.fixture(scope="module")
def nltk_index() -> dict[str, dict[str, list[int]]]:
    """nltk's own dictionary, read by its own loader over the same files."""
    reader = lexicon.wordnet()
    index: defaultdict[str, dict[str, list[int]]] = defaultdict(dict)
    shadow: Any = type("Shadow", (), {})()
    shadow.open, shadow.satellite_offsets = reader.open, reader.satellite_offsets
    shadow._FILEMAP, shadow._lemma_pos_offset_map = reader._FILEMAP, index
    from nltk.corpus.reader.wordnet import WordNetCorpusReader  # type: ignore[import-untyped]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        WordNetCorpusReader._load_lemma_pos_offset_map(shadow)
    return dict(index)


@pytest.fixture(scope="module")
def index() -> LemmaIndex:
    return LemmaIndex(lexicon.WORDNET_DIR, lexicon.wordnet().satellite_offsets)


def test_every_lemma_is_listed_once_in_order(index: LemmaIndex, nltk_index: dict[str, Any]) -> None:
    assert list(index) == sorted(nltk_index)


def test_lemmas_have_nltks_entries(index: LemmaIndex, nltk_index: dict[str, Any]) -> None:
    lemmas = sorted(nltk_index)
    # Every 25th, and the first and last of each file (the ends of a binary search).
    sample = set(lemmas[::25])
    for suffix in POS_FILES.values():
        names = list(IndexFile(lexicon.WORDNET_DIR / f"index.{suffix}").lemmas())
        sample |= {names[0], names[-1]}
    # An adjective with satellite senses, one without, words of one and of every part of speech.
    sample |= {"good", "bad", "abasement", "set", "quickly", "run", "a_cappella", "store"}
    for lemma in sorted(sample):
        assert index[lemma] == nltk_index[lemma], lemma


def test_a_word_wordnet_lacks_has_no_entry(index: LemmaIndex) -> None:
    for word in ("iphone", "mujhe", "", "zzzzzz", "!", "ice cream"):
        assert word not in index
        assert index[word] == {}  # as nltk's defaultdict answers
    assert "ice_cream" in index


def test_the_reader_looks_lemmas_up_in_the_files() -> None:
    reader = lexicon.wordnet()
    assert isinstance(reader._lemma_pos_offset_map, LemmaIndex)
    assert [sense.name() for sense in reader.synsets("stores", "n")][:2] == ["shop.n.01", "store.n.02"]
    assert reader.morphy("ran", "v") == "run"
    assert reader.synset("dog.n.01").lemma_names()[0] == "dog"
    assert "s" in {sense.pos() for sense in reader.synsets("quick")}  # satellites, read from index.adj


def test_reading_wordnet_imports_neither_scipy_stats_nor_sklearn() -> None:
    """nltk's package would import both for classifiers and statistics WordNet never uses (~43 MB in
    every serving process); they are imported as usual afterwards."""
    script = (
        "import sys\n"
        "from master_agent.capabilities.tools import lexicon\n"
        "lexicon.wordnet().synsets('store')\n"
        "print(sorted(name for name in ('scipy.stats', 'sklearn') if name in sys.modules))\n"
        "import scipy.stats, sklearn\n"
        "print(scipy.stats.norm.cdf(0.0), sklearn.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["[]", "0.5 sklearn"]
