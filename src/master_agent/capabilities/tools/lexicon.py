"""Kinds of things by WordNet: "lager" is a kind of alcohol, "attorney" names a lawyer, "handgun" a
weapon. A rule's category is mentioned by an input phrase whose noun sense lies under one of the
category's noun senses in WordNet's hypernym tree (or is that sense).

WordNet 3.0 is read from Debian's ``wordnet-base`` dictionary files (``/usr/share/wordnet``; ``make
install`` installs the package) with nltk's ``WordNetCorpusReader``. Those files lack the ``lexnames``
list nltk wants (the 45 lexicographer file names of WordNet 3.0, given here) and say "WordNet 3.0",
which nltk would try to map to its own copy: nothing is mapped, no multilingual data is read.

Measured on ``benchmarks/senses/pairs.json`` (``make eval-senses``): what WordNet says is rarely wrong
and often silent (phrases it has no entry for: "power banks", "MySQL", "charged twice").
Two limits keep a sense from reaching too far:

- only a word's first ``SENSES`` noun senses count (WordNet lists them by frequency): "rod" is no gun
  ("gat", its sixth sense), "lager" is still a beer (its second, after "laager");
- a category whose sense has more than ``MAX_KINDS`` kinds under it ("person", "event", "material",
  "device") is too broad to be sensed this way: nearly any input names one of its kinds.
"""

from __future__ import annotations

import io
import itertools
import logging
import re
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any, Literal

from master_agent.capabilities.tools.wordnet_index import IndexFile, LemmaIndex

log = logging.getLogger(__name__)

#: Where Debian's ``wordnet-base`` puts the WordNet 3.0 database files.
WORDNET_DIR = Path("/usr/share/wordnet")
#: Noun senses of a word that count, the most frequent first.
SENSES = 2
#: Most kinds (hyponyms, transitively) a category's sense may have to be sensed through WordNet.
MAX_KINDS = 1000
#: WordNet 3.0's lexicographer files, in their numbered order (``lexnames(5WN)``).
_LEXNAMES = [
    "adj.all",
    "adj.pert",
    "adv.all",
    "noun.Tops",
    "noun.act",
    "noun.animal",
    "noun.artifact",
    "noun.attribute",
    "noun.body",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.feeling",
    "noun.food",
    "noun.group",
    "noun.location",
    "noun.motive",
    "noun.object",
    "noun.person",
    "noun.phenomenon",
    "noun.plant",
    "noun.possession",
    "noun.process",
    "noun.quantity",
    "noun.relation",
    "noun.shape",
    "noun.state",
    "noun.substance",
    "noun.time",
    "verb.body",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.competition",
    "verb.consumption",
    "verb.contact",
    "verb.creation",
    "verb.emotion",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
    "verb.weather",
    "adj.ppl",
]


class WordNetMissing(LookupError):
    """WordNet's files or nltk are not installed."""


#: What nltk's package imports for its classifiers, collocation tests and translation aligners, each in a
#: ``try/except ImportError`` with a fallback: ~43 MB of modules in every serving process (issue 46), of
#: which WordNet's reader uses none (``retail.analytics`` keeps scipy.stats out of it for the same reason).
NLTK_OPTIONAL = ("scipy.stats", "sklearn")


@contextmanager
def _without(modules: Sequence[str]) -> Iterator[None]:
    """Imports of ``modules`` not yet imported fail while the block runs (and work again after it)."""
    blocked = [name for name in modules if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # import's own "not importable" mark
    try:
        yield
    finally:
        for name in blocked:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]


@cache
def wordnet(root: Path = WORDNET_DIR) -> Any:
    """nltk's reader over the WordNet 3.0 files in ``root`` (read once per process)."""
    if not (root / "data.noun").is_file():
        raise WordNetMissing(
            f"WordNet 3.0 is not installed: {root}/data.noun is missing. Install Debian's 'wordnet-base' "
            "package ('make install' does: apt-get install wordnet-base)."
        )
    try:
        with _without(NLTK_OPTIONAL):
            import nltk  # type: ignore[import-untyped]
            from nltk.corpus.reader.wordnet import WordNetCorpusReader  # type: ignore[import-untyped]
    except ImportError as error:
        raise WordNetMissing("nltk is not installed: run 'make install' (pip install nltk).") from error

    class _DebianWordNet(WordNetCorpusReader):  # type: ignore[misc]
        def open(self, file: str) -> Any:
            if file == "lexnames":
                return io.StringIO("".join(f"{i:02d}\t{name}\t0\n" for i, name in enumerate(_LEXNAMES)))
            return super().open(file)

        def map_wn(self, version: str = "wordnet") -> None:
            return None  # these files are the WordNet nltk would map from: nothing to map

        def _load_lemma_pos_offset_map(self) -> None:
            # Looked up in the index files, not read whole into ~70 MB of objects per process.
            self._lemma_pos_offset_map = LemmaIndex(root, self.satellite_offsets)

    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))  # nltk reads corpora only under its data paths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": none are used
        return _DebianWordNet(str(root), None)


def warm() -> None:
    """Read WordNet's index and open its data files once, off the event loop: a graph factory and the
    readers run inside a server's loop, where the first read of WordNet's files would block it (and
    ``langgraph dev`` refuses blocking calls)."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return
    for pos in ("n", "v", "a", "r"):
        for sense in reader.synsets("set", pos)[:1]:
            sense.hypernyms()
            sense.lemmas()


def available() -> bool:
    try:
        wordnet()
    except WordNetMissing:
        return False
    return True


def _senses(words: Iterable[str]) -> list[Any]:
    reader = wordnet()
    lemma = "_".join(w.lower() for w in words)
    base = reader.morphy(lemma, "n")
    return list(reader.synsets(base, "n")[:SENSES]) if base else []


#: A sense is chosen over a word's others when its fit to the context is this much higher.
CONTEXT_MARGIN = 0.1
#: Context words read per phrase (the first ones): bounds the similarity work of one call.
MAX_CONTEXT = 24
_CONTEXT_WORD = re.compile(r"[a-z]{4,}")
#: Words of four letters or more that say nothing of a sense.
_STOP = frozenset(
    [
        "into",
        "onto",
        "from",
        "with",
        "without",
        "that",
        "this",
        "these",
        "those",
        "their",
        "there",
        "them",
        "they",
        "then",
        "than",
        "what",
        "when",
        "where",
        "which",
        "while",
        "will",
        "would",
        "have",
        "been",
        "were",
        "your",
        "yours",
        "ours",
        "also",
        "just",
        "only",
        "over",
        "some",
        "each",
        "every",
        "other",
        "about",
        "after",
        "before",
        "please",
    ]
)


def _content(text: str) -> list[str]:
    return [w for w in _CONTEXT_WORD.findall(text.lower().replace("_", " ")) if w not in _STOP]


def _signature(synset: Any) -> frozenset[str]:
    """The word starts (5 letters) of a sense's gloss, examples and names, and of its hypernyms'."""
    texts = [synset.definition(), *synset.examples(), *synset.lemma_names()]
    for hypernym in synset.hypernyms():
        texts += [hypernym.definition(), *hypernym.lemma_names()]
    return frozenset(w[:5] for text in texts for w in _content(text))


def _fit(synset: Any, context: list[list[Any]], words: frozenset[str]) -> float:
    """How well a sense fits its context (a simplified extended Lesk with a taxonomy term): the mean
    of its three best Wu-Palmer similarities to the context's nouns, plus half a point per context
    word its gloss or its hypernyms' share ("ridden into battle" for a charger that is a horse)."""
    best = sorted(
        (max((synset.wup_similarity(other) or 0.0) for other in senses) for senses in context if senses),
        reverse=True,
    )
    return sum(best[:3]) / 3 + 0.5 * len(_signature(synset) & words)


def _in_context(senses: list[Any], own: Iterable[str], context: str) -> list[Any]:
    """The senses of a phrase that its context picks: the one fitting the context's other nouns best
    ("phone charger" is the device, "rode his charger into battle" the horse), or all of them when
    none fits clearly better (``CONTEXT_MARGIN``) or there is no context."""
    if len(senses) < 2 or not context:
        return senses
    reader = wordnet()
    skip = {w.lower() for w in own}
    found = [w for w in _content(context) if w not in skip][:MAX_CONTEXT]
    nouns = [list(reader.synsets(base, "n")[:SENSES]) for w in found if (base := reader.morphy(w, "n"))]
    words = frozenset(w[:5] for w in found)
    fits = sorted(((_fit(s, nouns, words), i) for i, s in enumerate(senses)), reverse=True)
    if fits[0][0] - fits[1][0] < CONTEXT_MARGIN:
        return senses
    return [senses[fits[0][1]]]


@cache
def _category(item: str) -> frozenset[Any]:
    """The senses of ``item`` that can be sensed (see ``MAX_KINDS``)."""
    out = set()
    for synset in _senses(item.split()):
        if sum(1 for _ in synset.closure(lambda s: s.hyponyms() + s.instance_hyponyms())) <= MAX_KINDS:
            out.add(synset)
    return frozenset(out)


@cache
def _kinds_of(phrase: str, context: str = "") -> frozenset[Any]:
    """What ``phrase`` names and everything it is a kind of, in the sense its ``context`` picks."""
    out = set()
    for synset in _in_context(_senses(phrase.split()), phrase.split(), context):
        out.add(synset)
        out.update(synset.closure(lambda s: s.hypernyms() + s.instance_hypernyms()))
    return frozenset(out)


def kind_named(item: str, phrases: Iterable[str], context: str = "") -> str | None:
    """The first of ``phrases`` that names a kind of ``item`` (or ``item`` in other words), if any,
    each phrase in the sense ``context`` (the text it was found in) picks."""
    category = _category(item)
    if not category:
        return None
    return next((phrase for phrase in phrases if category & _kinds_of(phrase, context)), None)


def knows_kinds(item: str) -> bool:
    """Whether WordNet knows kinds of ``item`` to sense it by (False without WordNet)."""
    try:
        return bool(_category(item))
    except WordNetMissing:
        return False


def a_kind_of(item: str) -> str | None:
    """One kind of ``item`` as words (the first, in WordNet's order, whose name shares no word with
    the item: "alcohol" gives "brew"), for a case an input words otherwise; None when WordNet is
    missing or knows no kind of it."""
    try:
        category = sorted(_category(item), key=lambda s: s.name())
    except WordNetMissing:
        return None
    own = {w.lower() for w in item.split()}
    for synset in category:
        for kind in sorted(synset.hyponyms(), key=lambda s: s.name()):
            for lemma in kind.lemma_names():
                words = str(lemma).lower().replace("_", " ")
                if not own & set(words.split()) and not any(w[:4] in words for w in own if len(w) >= 4):
                    return words
    return None


def a_synonym(item: str) -> str | None:
    """``item`` in other words: another name WordNet gives its first sense, sharing no word with it
    ("alcohol" gives "intoxicant"); None when WordNet is missing or gives none."""
    try:
        category = _category(item)
        senses = [s for s in _senses(item.split()) if s in category]
    except WordNetMissing:
        return None
    own = {w.lower() for w in item.split()}
    for lemma in senses[0].lemma_names() if senses else []:
        words = str(lemma).lower().replace("_", " ")
        if not own & set(words.split()) and not any(w[:4] in words for w in own if len(w) >= 4):
            return words
    return None


def a_near_miss(item: str) -> str | None:
    """A thing close to ``item`` but not of it, as words: the most used sibling under the item's
    first sense's broader kinds that is no kind of the item ("alcohol" gives "coffee"), for a
    case a system matching too loosely answers wrongly; None when WordNet is missing or knows none
    that tagged text uses (WordNet's rarer siblings are where its tree and everyday use part ways)."""
    try:
        category = _category(item)
        senses = [s for s in _senses(item.split()) if s in category]
    except WordNetMissing:
        return None
    if not senses:
        return None
    own = {w.lower() for w in item.split()}
    siblings = {s for broader in senses[0].hypernyms() for s in broader.hyponyms() if s not in category}
    lemmas = sorted(
        (lemma for sibling in siblings for lemma in sibling.lemmas()),
        key=lambda lemma: (-lemma.count(), lemma.name()),
    )
    for lemma in lemmas:
        words = str(lemma.name()).lower().replace("_", " ")
        if lemma.count() < 1:
            break  # a sibling no tagged text uses is no everyday near miss
        if own & set(words.split()) or any(w[:4] in words for w in own if len(w) >= 4):
            continue
        if not category & _kinds_of(words):
            return words
    return None


#: WordNet's part-of-speech digit in a sense key (``lemma%1:...``): noun, verb, adjective, adverb,
#: adjective satellite (an adjective).
_SENSE_POS = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}


@cache
def _word_classes(root: Path = WORDNET_DIR) -> tuple[IndexFile, frozenset[str]] | None:
    """WordNet's noun lemmas (``index.noun``, looked up in the file), and those of them whose senses as
    another part of speech were tagged more often in WordNet's corpus (``cntlist.rev``) than their noun
    senses; None without WordNet's files. Read from the files themselves (no nltk): a tenth of a second,
    once per process. Only the verdicts are kept: the counts per lemma took 17 MB in every serving
    process, and a set of the 117k nouns 11 MB."""
    if not (root / "index.noun").is_file() or not (root / "cntlist.rev").is_file():
        return None
    nouns = IndexFile(root / "index.noun")
    counts: dict[str, dict[str, int]] = {}
    with (root / "cntlist.rev").open(encoding="utf-8") as lines:
        for line in lines:
            key, _, count = line.split()
            lemma, _, sense = key.partition("%")
            pos = _SENSE_POS.get(sense[:1])
            if pos:
                by_pos = counts.setdefault(lemma, {})
                by_pos[pos] = by_pos.get(pos, 0) + int(count)
    other_first = frozenset(
        lemma
        for lemma, by_pos in counts.items()
        if by_pos.get("n", 0) < max(by_pos.values()) and lemma in nouns
    )
    return nouns, other_first


def noun_first(word: str) -> bool | None:
    """Whether WordNet reads ``word`` (or its singular) as a noun at least as often as as any other part
    of speech: "store", "week", "invoice" are; "borrow", "need", "take" (verbs), "around", "just"
    (adverbs) and words WordNet lacks ("iphone", "mujhe") are not. None without WordNet's files."""
    classes = _word_classes()
    if classes is None:
        return None
    nouns, other_first = classes
    word = word.lower()
    for lemma in (word, word[:-1] if word.endswith("s") else "", word[:-2] if word.endswith("es") else ""):
        if lemma and lemma in nouns:
            return lemma not in other_first
    return False


#: WordNet's senses of a part said against its whole: a share of something (cut, slice, split, portion),
#: a proportion (percentage, rate) and a fraction. Not part.n.01, whose kin are any piece of a thing
#: (a brand, a member, a size).
_SHARE_SENSES = ("share.n.01", "proportion.n.01", "ratio.n.01", "fraction.n.01")


@cache
def names_a_share(word: str) -> bool:
    """Whether a sense of the noun ``word`` (or its singular) is a part said against its whole, in
    WordNet's hierarchy ("cut", "slice", "split", "portion", "percentage", "fraction"); "day", "kind",
    "brand" are not. False without WordNet's files."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return False
    base = reader.morphy(word.lower(), "n")
    if base is None:
        return False
    roots = {reader.synset(name) for name in _SHARE_SENSES}
    return any(
        roots.intersection(above for path in sense.hypernym_paths() for above in path)
        for sense in reader.synsets(base, "n")
    )


#: WordNet's senses of having and keeping things (have, own, keep, stock): a verb of one of them states
#: what is held, where a verb of possession else tells of things changing hands (sell, buy, trade).
_HOLDING_SENSES = ("have.v.01", "own.v.01", "keep.v.01", "stock.v.01")
#: Auxiliaries: they carry the tense, not the event.
#: WordNet's sense of what is left over ("left", "remaining", "leftover"): said of things still held.
_REMAINING_SENSE = "leftover.s.01"
_AUXILIARIES = frozenset({"is", "are", "am", "be", "being", "do", "does", "'s", "'re", "will", "can"})
_PAST_AUXILIARIES = frozenset({"did", "was", "were", "had", "been"})
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def event_or_state(text: str) -> Literal["event", "state"] | None:
    """Whether ``text``'s verbs tell of an event (a verb in a past form: "sold", "came back", "has
    moved"; or a verb of things changing hands: "sell", "buy") or of a state ("are sitting in the back
    room", "do we have in stock"), by WordNet's verb forms and its lexicographer files. Nouns that are
    also verbs ("store", "room") are read as nouns, a gerund as its verb. None: no verb at all ("how
    many phones at store 2"), or WordNet is not installed."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return None
    holding = {lemma for name in _HOLDING_SENSES for lemma in reader.synset(name).lemma_names()}
    remaining = set(reader.synset(_REMAINING_SENSE).lemma_names())
    verbs = 0
    tokens = _WORD.findall(text.lower())
    for index, token in enumerate(tokens):
        if token in _PAST_AUXILIARIES:
            return "event"
        if token in _AUXILIARIES or token in remaining:
            # "are left", "remaining": what is still there is a state.
            verbs += 1
            continue
        if token == "got" and {"have", "has", "'ve", "we've"} & set(tokens[max(0, index - 2) : index]):
            verbs += 1  # "have we got": had now, nothing got
            continue
        base = reader.morphy(token, "v")
        if not base or (not token.endswith("ing") and noun_first(token)):
            continue
        verbs += 1
        if base != token and not token.endswith(("ing", "s")):
            return "event"  # a past form: "sold", "came", "moved"
        senses = reader.synsets(base, "v")
        if senses and senses[0].lexname() == "verb.possession" and base not in holding:
            return "event"
    return "state" if verbs else None


def phrasal_verb_meanings(text: str) -> dict[str, frozenset[str]]:
    """The verbs of two words ``text`` says that WordNet lists as one ("come back", "bring back", "give
    back"), each with the one-word verbs of its first two senses: "came back" -> {"return"}. Empty
    without WordNet."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return {}
    tokens = _WORD.findall(text.lower())
    found: dict[str, frozenset[str]] = {}
    for first, second in itertools.pairwise(tokens):
        base = reader.morphy(first, "v")
        senses = reader.synsets(f"{base}_{second}", "v")[:2] if base else []
        words = frozenset(lemma for sense in senses for lemma in sense.lemma_names() if "_" not in lemma)
        if words:
            found[f"{first} {second}"] = words
    return found


def verb_base(word: str) -> str | None:
    """``word``'s verb in WordNet ("returns" -> "return"); None when it is none or WordNet is missing."""
    try:
        base = wordnet().morphy(word.lower(), "v")
    except WordNetMissing:
        return None
    return str(base) if base else None


def names_a_person(word: str) -> bool:
    """Whether WordNet's first sense of the noun ``word`` is a person ("customers", "shoppers"); False
    for anything else or without WordNet."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return False
    base = reader.morphy(word.lower(), "n")
    senses = reader.synsets(base, "n")[:1] if base else []
    return bool(senses) and senses[0].lexname() == "noun.person"


#: WordNet's senses of whoever buys, the people a sales table's rows are of: "customers", "shoppers",
#: "buyers", "clients", "consumers", "people" name all of them; "students" or "seniors" name some.
_BUYER_SENSES = frozenset(
    {"customer.n.01", "buyer.n.01", "shopper.n.01", "consumer.n.01", "person.n.01", "people.n.01"}
)


def names_the_buyers(word: str) -> bool:
    """Whether the noun ``word`` is, in one of its first two WordNet senses, whoever buys ("customers",
    "clients", "shoppers"), not a kind of them ("students", "trainees"); False without WordNet."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return False
    base = reader.morphy(word.lower(), "n")
    return bool(base) and any(sense.name() in _BUYER_SENSES for sense in reader.synsets(base, "n")[:2])


def a_set_phrase(words: Sequence[str]) -> bool:
    """Whether WordNet lists ``words`` as one adverb or adjective ("for example", "on average", "for
    sure", "on time"): said of how, never of which rows; False without WordNet."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return False
    name = "_".join(word.lower() for word in words)
    return any(sense.pos() in ("r", "a", "s") for sense in reader.synsets(name))


#: WordNet's verb frames with an object ("Somebody ----s something", "Something ----s somebody", "Somebody
#: ----s something to somebody", ...), by their numbers in ``frames(5WN)``.
_OBJECT_FRAMES = frozenset({8, 9, 10, 11, 14, 15, 16, 17, 18, 19, 20, 21, 24, 25, 26, 30, 31, 32, 33, 34, 35})


def takes_an_object(phrase: str) -> bool:
    """Whether the verb ``phrase`` ("bring back", "came back") takes an object in its first sense, by
    WordNet's verb frames: someone brings something back; someone who comes back is who moves."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return False
    first, _, rest = phrase.lower().partition(" ")
    base = reader.morphy(first, "v")
    name = f"{base}_{rest.replace(' ', '_')}" if base else ""
    senses = reader.synsets(name, "v")[:1] if name else []
    frames = {
        frame
        for sense in senses
        for lemma in sense.lemmas()
        if lemma.name() == name
        for frame in lemma.frame_ids()
    }
    return bool(frames & _OBJECT_FRAMES)


#: Senses of an event word that count for ``event_relatives`` (WordNet lists them by frequency).
EVENT_SENSES = 2


@cache
def event_relatives(word: str) -> tuple[str, ...]:
    """The one-word names WordNet gives the event ``word`` names, other than its own forms: its
    first senses' synonyms as a verb and a noun, the nouns and verbs derived from them, and those
    derivations' own first senses' synonyms ("born": birth; "shipped": shipment, dispatch;
    "purchase": buy, buying). An input labels a date by any of them ("Date of birth", "Dispatch
    date"); empty when WordNet is missing."""
    try:
        reader = wordnet()
    except WordNetMissing:
        return ()
    word = word.lower()
    found: dict[str, None] = {}

    def senses(name: str) -> list[Any]:
        out: list[Any] = []
        for pos in ("v", "n"):
            base = reader.morphy(name, pos)
            out += reader.synsets(base, pos)[:EVENT_SENSES] if base else []
        return out

    bases = {reader.morphy(word, pos) or word for pos in ("v", "n")}
    derived: list[str] = []
    for synset in senses(word):
        for lemma in synset.lemmas():
            found[lemma.name().lower()] = None
            if lemma.name().lower() in bases:
                derived += [d.name().lower() for d in lemma.derivationally_related_forms()]
    for name in derived:
        found[name] = None
        for synset in senses(name):
            found.update({lemma.name().lower(): None for lemma in synset.lemmas()})
    own = {word[:4], *(b[:4] for b in bases)}
    names = [w for w in found if "_" not in w and w[:4] not in own and len(w) >= 3]
    # A verb's irregular forms, which share no stem with it ("buy": bought, "send": sent).
    irregular = [form for form, lemmas in reader._exception_map["v"].items() if set(lemmas) & set(names)]
    return tuple(dict.fromkeys([*names, *(f for f in irregular if "_" not in f and f[:4] not in own)]))
