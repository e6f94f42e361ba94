"""What an input mentions by meaning: a category a rule names ("alcohol", "US dollars", "database")
found in an input that words it otherwise ("wine and beer", "USD", "MySQL").

A saved query asks for it with ``%(senses)s::jsonb ? 'item'`` (``sensed_sql``); at each call the query
runner binds ``senses`` to the items of the query that the call's text mentions (``sensed``). A phrase
of the text mentions an item when the embedder puts them at least ``SENSE_MIN_SIMILARITY`` apart in
cosine similarity, where:

- the phrases are the runs of one to three words inside each segment of the text (split at line
  ends, ``|``, sentence and clause punctuation, brackets and ``label:``), a run neither starting nor
  ending with a function word;
- a segment with a negation in it ("no alcohol", "Receipt: not attached") offers no phrase (the NegEx
  idea the keyword reading uses too);
- a phrase sharing a word's start with the item offers nothing: the keyword reading already judged
  those words, and a look-alike ("Globex Consulting" for "Globex Corporation", "legal name" for
  "legal action") is no mention.

The threshold is measured per embedder on the tuning requests of ``benchmarks/eval_meta`` (item vs.
input phrases that share no word); an embedder with no measured threshold (hashing, OpenAI) senses
nothing, and the keyword reading stands alone.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence

from master_agent.capabilities.tools import lexicon
from master_agent.models.embeddings import FUNCTION_WORDS, Embedder

log = logging.getLogger(__name__)

SENSE_PARAMETER = "%(senses)s"
#: Least cosine similarity of an item and a phrase, by embedder. all-MiniLM-L6-v2: on the tuning
#: requests, the highest wrong pair was 0.634 ("lawyer" / "legal name") and the lowest right one 0.655
#: ("illness" / "Medical"), with "database" / "MySQL" at 0.667, "alcohol" / "beer" 0.773, "us dollars" /
#: "USD" 0.849.
SENSE_MIN_SIMILARITY = {"all-MiniLM-L6-v2": 0.65}
_ITEM = re.compile(r"%\(senses\)s::jsonb \? '((?:[^']|'')*)'")
_SEGMENTS = re.compile(r"[\n|;.!?()\[\]{}\"]|,\s|:\s|\s-\s")
_WORDS = re.compile(r"[a-z][a-z0-9'-]*", re.I)
_PARTS = re.compile(r"[a-z]+", re.I)
_NEGATION = re.compile(r"\b(?:no|not|without|never|non|none|zero|missing|absent|n/a)\b|n't\b", re.I)
_FUNCTION = FUNCTION_WORDS | frozenset((
    "as", "from", "was", "were", "been", "its", "these", "those", "your", "their", "his", "her", "i", "we", "you",
    "he", "she", "they", "us", "them", "so", "if", "then", "than", "but", "please",
))  # fmt: skip
#: Phrases offered per input (the first ones): bounds the embedding work of one call.
MAX_PHRASES = 400
_vectors: dict[tuple[str, str], list[float]] = {}
_lexicon_said = False


def sensed_sql(item: str) -> str:
    """The SQL test that the call's text mentions ``item`` by meaning (``%`` doubled for a statement
    with bound parameters; the item as an SQL literal)."""
    literal = item.replace("'", "''").replace("%", "%%")
    return f"({SENSE_PARAMETER}::jsonb ? '{literal}')"


def sensed_items(sql: str) -> list[str]:
    """The items a query's SQL asks ``sensed_sql`` about."""
    return sorted({found.replace("''", "'").replace("%%", "%") for found in _ITEM.findall(sql)})


def _shares_word(one: Iterable[str], other: Iterable[str]) -> bool:
    """Whether two word lists share a word's start: one word of at least 3 letters begins the other
    ("add" / "adding", "charged" / "chargeback" by their first 4), "us" / "usd" do not."""
    for a in one:
        for b in other:
            short, long = sorted((a.lower(), b.lower()), key=len)
            if len(short) >= 3 and long.startswith(short[:4]):
                return True
    return False


def phrases(text: str, *, nouns_only: bool = False) -> list[str]:
    """The runs of one to three words of ``text`` offered for a match (see the module docstring);
    ``nouns_only``: without a function word inside either ("staff turnover", not "customers to buy"),
    the shape of a thing's name."""
    out: dict[str, None] = {}
    for segment in _SEGMENTS.split(text):
        if _NEGATION.search(segment):
            continue
        words = [w.strip("'-") for w in _WORDS.findall(segment)]
        for size in (1, 2, 3):
            for start in range(len(words) - size + 1):
                run = words[start : start + size]
                if run[0].lower() in _FUNCTION or run[-1].lower() in _FUNCTION or len(run[0]) < 2:
                    continue
                if nouns_only and any(word.lower() in _FUNCTION for word in run):
                    continue
                out.setdefault(" ".join(run), None)
    return list(out)[:MAX_PHRASES]


async def _embedded(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    missing = [t for t in dict.fromkeys(texts) if (embedder.model_name, t) not in _vectors]
    if missing:
        for text, vector in zip(missing, await embedder.embed(missing), strict=True):
            _vectors[(embedder.model_name, text)] = vector
    return [_vectors[(embedder.model_name, t)] for t in texts]


async def sensed(embedder: Embedder | None, text: str, items: Sequence[str]) -> list[str]:
    """The ``items`` that ``text`` mentions by meaning: a phrase naming a kind of the item in WordNet
    (``lexicon``), or one the embedder puts near it (none without a measured embedder)."""
    offered = phrases(text)
    if not items or not offered:
        return []
    found = {item for item in items if _kind_named(item, offered, text)}
    threshold = SENSE_MIN_SIMILARITY.get(embedder.model_name) if embedder is not None else None
    if embedder is not None and threshold is not None and len(found) < len(items):
        left = [item for item in items if item not in found]
        item_vectors = await _embedded(embedder, left)
        # Each input's phrases are new: they are embedded per call, not kept.
        phrase_vectors = await embedder.embed(offered)
        for item, item_vector in zip(left, item_vectors, strict=True):
            for phrase, vector in zip(_unshared(item, offered), phrase_vectors, strict=True):
                if phrase and sum(a * b for a, b in zip(item_vector, vector, strict=True)) >= threshold:
                    found.add(item)
                    break
    return [item for item in items if item in found]


def _unshared(item: str, offered: Sequence[str]) -> list[str | None]:
    """``offered`` with each phrase sharing a word's start with ``item`` blanked (see the module
    docstring: the keyword reading judged those words)."""
    own = _PARTS.findall(item)
    return [None if _shares_word(_PARTS.findall(p), own) else p for p in offered]


def _kind_named(item: str, offered: Sequence[str], context: str) -> bool:
    """Whether a phrase of ``offered`` names a kind of ``item`` in WordNet, in the sense its
    ``context`` picks; without WordNet, no (said once in the log)."""
    global _lexicon_said
    try:
        return lexicon.kind_named(item, [p for p in _unshared(item, offered) if p], context) is not None
    except lexicon.WordNetMissing as error:
        if not _lexicon_said:
            log.warning("senses by WordNet are off: %s", error)
            _lexicon_said = True
        return False


def senses_parameter(found: Sequence[str]) -> str:
    """``sensed``'s answer as the JSON the query's ``%(senses)s::jsonb`` reads."""
    return json.dumps(list(found))
