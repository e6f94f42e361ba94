"""A message that asks more than one thing of the data, split into its questions.

People ask "store 4's takings in August, and how many phones did they sell?", "June vs July", "revenue,
number of sales and attach rate for store 3", "and was that the most of any store?". Each question is
answered on its own by the data handler; answering the first alone, as a success, drops the rest.

The split is read from the message's own clauses (sentences, and the coordinations, lists and "vs" between
them), and a clause is a question of its own only when it names a figure (read by the same readers the data
handler uses), another period for the figure before it, or a ranking, share or change of it. A store or a
period said once ("Store 1, June: ...") holds for every question, as people mean it. A clause that names
the figure before it again ("revenue and turnover") is the same question.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from master_agent.capabilities.terms import goal_target, moves_a_figure, time_mention
from master_agent.routing.intent import message_entities

#: What a question asks of the figure it is about: the figure itself, which store led, the store's place
#: among all of them, its share of the whole, or the figure over another period set against it.
Role = Literal["figure", "winner", "rank", "share", "period"]

#: Where one clause ends and the next begins: a sentence's end, a comma or semicolon, a coordinating
#: word, a slash or arrow between list items, a dash or colon set apart by spaces, "vs", "compared with".
_BOUNDARY = re.compile(
    r"\s*[,;]\s*(?:and\s+|plus\s+|&\s*)?(?:also\s+)?"
    r"|\s+(?:and|plus|also|&|then|vs\.?|versus)\s+(?:also\s+|then\s+|is\s+that\s+|was\s+that\s+)?"
    r"|\s+(?:compared?\s+(?:with|to)|against)\s+"
    r"|\s*(?:->|(?<!\d)/(?!\d)|\+|\s[-\u2013\u2014:]\s)\s*"
    r"|(?<=\w):\s+",
    re.I,
)
#: A question about the store's place among all the stores.
_RANK = re.compile(r"\brank(?:ed|ing|s)?\b|\bposition\b|\bwhat\s+place\b", re.I)
#: A question for the store that led or trailed.
_WINNER = re.compile(
    r"\b(?:which|what)\s+(?:store|shop|branch)\b|\bthe\s+(?:most|least|highest|lowest|best|worst|top)\b"
    r"|\b(?:led|leader|lead)\b",
    re.I,
)
#: A question for one store's part of the whole.
_SHARE = re.compile(r"\bshare\b|\bproportion\b|\bpercentage\s+of\b|%\s+of\b|\bslice\b", re.I)
#: Words that ask for the change or its direction (not a bare "vs": both figures answer that).
_CHANGE = re.compile(
    r"\bcompared?\b|\bcomparison\b|\bup\s+or\s+down\b|\bdown\s+or\s+up\b|\brise\s+or\s+fall\b"
    r"|\bmore\s+or\s+less\b|%\s*change\b|\bpercent(?:age)?\s+change\b|\bchange[ds]?\b|\bby\s+how\s+(?:many|much)\b"
    r"|\b(?:up|down)\s+on\b|\bhigher\s+or\s+lower\b|\bbetter\s+or\s+worse\b",
    re.I,
)
#: Words before a period that relate it to another ("from July", "on August"), not part of it.
_LEADING = re.compile(r"^(?:(?:from|since|on|about|to|than|for|over|with|in|during)\s+)+", re.I)
#: A clause that qualifies a question rather than asking one: a negation ("not added up", "not the rate"),
#: a subordinate clause ("when an accessory was attached", "of the phones ... sold"), the measure of a
#: ranking ("going by attach rate"), a restriction ("trained staff only"), a figure of what was just said
#: ("number of them").
_QUALIFIER = re.compile(
    r"^\s*(?:not|no|without|never|don'?t|when|whenever|if|while|of|among|i\.?e|e\.?g|going\s+by|measured\s+by|"
    r"judged\s+by|based\s+on|in\s+terms\s+of|by|in\s+(?:money|value|dollars|euros|pounds|rupees))\b"
    r"|^\s*(?:up|rise|higher|better|more)\s+or\s+(?:down|fall|lower|worse|less)\W*$|\bonly\W*$|\bof\s+(?:them|those|these|it)\b",
    re.I,
)
#: A clause that says what is not wanted.
_NEGATED = re.compile(r"^\s*(?:not|no|without|never|don'?t)\b", re.I)
#: Where a sentence ends (the next one starts).
_SENTENCE_END = re.compile(r"(?<=[?!])\s+|(?<=[a-z0-9%)]{3}[.])\s+", re.I)
#: Words in brackets: an aside, never cut.
_BRACKETED = re.compile(r"\([^)]*\)?")
#: A sentence's first word that asks or bids (a sentence that does neither tells).
_ASKING = re.compile(
    r"^\s*(?:also|and|plus)\b|^\s*(?:so\s+)?(?:what|what's|whats|how|which|who|whom|where|when|did|does|do|is|"
    r"was|were|are|can|could|would|will|give|tell|show|get|list|pull|send|need|i\s+need|please|pls)\b",
    re.I,
)
#: Joiners that set one figure against another ("vs", "compared with", "against").
_COMPARING = re.compile(r"\b(?:vs\.?|versus|against|compared?)\b", re.I)
#: Stores listed by number: "stores 1, 3 and 7", "stores 2, 4, 6 & 8".
_STORE_LIST = re.compile(r"\b(?:stores|shops|branches)\s+\d+(?:\s*,\s*\d+)*\s*,?\s*(?:and|&)\s*\d+\b", re.I)
#: A store said by number ("store 4", "s6", "stores 1, 3 and 7").
_STORE = re.compile(r"\b(?:stores?|shops?|branch(?:es)?|s)\s*#?\d+\b", re.I)


@dataclass(frozen=True)
class Asked:
    """One question of a message: its words (with the store and period said once for all put in), what
    it asks of its figure, and for a question about another question's figure, which one."""

    text: str
    role: Role = "figure"
    of: int | None = None
    store: int | None = None
    period: str | None = None


#: What figure a clause names, as the data handler reads it: a key that is the same for two names of one
#: figure ("revenue", "turnover"), or None when it names none.
FigureOf = Callable[[str], Awaitable[str | None]]


@dataclass(frozen=True)
class _Clause:
    text: str
    start: int
    end: int
    figure: str | None
    period: str | None
    store: bool
    joiner: str = ""


def _sentences(message: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(message):
        spans.append((start, match.start()))
        start = match.end()
    spans.append((start, len(message)))
    return [(lo, hi) for lo, hi in spans if message[lo:hi].strip()]


def _clauses(message: str) -> list[tuple[int, int, str, bool]]:
    """The message cut at its boundaries: (start, end, the words that joined it to the clause before,
    whether it is a sentence that tells rather than asks). A sentence that tells ("We're in Melbourne, so
    our winter.", "Gross is fine.") is one clause; an asking one is cut, never inside the period it names
    ("between July and September") nor inside brackets."""
    found: list[tuple[int, int, str, bool]] = []
    sentences = _sentences(message)
    # With no sentence that asks, the message is the request in whatever form ("Store 6 refunds: June vs July").
    asking = [span for span in sentences if _asks(message[span[0] : span[1]])] or sentences
    for lo, hi in sentences:
        sentence = message[lo:hi]
        if (lo, hi) not in asking:
            found.append((lo, hi, "", True))
            continue
        protected = [(m.start(), m.end()) for m in _BRACKETED.finditer(sentence)]
        mention = time_mention(sentence)
        if mention and (at := sentence.lower().find(mention.lower())) >= 0:
            protected.append((at, at + len(mention)))
        start, joiner = 0, ""
        for match in _BOUNDARY.finditer(sentence):
            if any(a < match.start() < b for a, b in protected):
                continue
            found.append((lo + start, lo + match.start(), joiner, False))
            start, joiner = match.end(), match.group(0)
        found.append((lo + start, hi, joiner, False))
    return [c for c in found if message[c[0] : c[1]].strip(" ?.!,;:-()")]


def _asks(sentence: str) -> bool:
    """Whether a sentence asks something: its question mark, or a first word that asks or bids."""
    return sentence.rstrip().endswith("?") or _ASKING.match(sentence) is not None


def _another_period(clause: _Clause, held: str | None) -> bool:
    """Whether a clause naming a period asks the figure before over it ("and for last month?", "June vs
    July", "up or down on August?"), not the rest of one period ("over June and July", "Saturday to
    Monday", "aug -> sep")."""
    if clause.period is None or clause.store or held is None or clause.period == held:
        return False
    if _COMPARING.search(clause.joiner):
        return True
    rest = clause.text.replace(clause.period, " ")
    return re.search(r"[^\W\d_]", rest) is not None


def _role(text: str) -> Role | None:
    if _RANK.search(text):
        return "rank"
    if _SHARE.search(text):
        return "share"
    if _WINNER.search(text):
        return "winner"
    return None


async def split_questions(message: str, figure_of: FigureOf) -> list[Asked]:
    """The questions ``message`` asks of the data, in the order asked; one when it asks one thing."""
    if goal_target(message) is not None or (moves_a_figure(message) and not _asks(message)):
        return [Asked(message)]  # a goal ("to 9% attach and cut its refund rate"), not a question of data
    clauses = []
    for start, end, joiner, tells in _clauses(message):
        text = message[start:end].strip()
        if tells or _QUALIFIER.search(text):
            # Context or a qualifier of a question ("going by attach rate", "not the rate"): no question.
            clauses.append(_Clause(text, start, end, None, None, False, joiner))
            continue
        clauses.append(
            _Clause(
                text, start, end, await figure_of(text), time_mention(text), bool(_STORE.search(text)), joiner
            )
        )
    groups: list[list[_Clause]] = []
    roles: list[Role] = []
    waiting: list[_Clause] = []  # what comes before the first figure ("Store 1, June:") holds for it
    for clause in clauses:
        role = _role(clause.text) if clause.figure is None else None
        if clause.figure is not None and groups and (_RANK.search(clause.text) or _SHARE.search(clause.text)):
            # "what share of that day's chain turnover was store 2's": a share or place of a figure, which
            # its figure alone would answer wrongly as a success.
            role = "rank" if _RANK.search(clause.text) else "share"
            groups.append([clause])
            roles.append(role)
            continue
        if clause.figure is not None:
            last = groups[-1] if groups else None
            figures = [c.figure for c in last or [] if c.figure]
            if last is not None and roles[-1] == "figure" and figures and figures[-1] == clause.figure:
                held = next((c.period for c in last if c.period), None)
                if not clause.period or not held or clause.period == held:
                    last.append(clause)  # "revenue and turnover": one figure named twice
                    continue
            groups.append([*waiting, clause])
            roles.append("figure")
            waiting = []
        elif not groups:
            waiting.append(clause)
        elif role is not None:
            groups.append([clause])
            roles.append(role)
        elif _another_period(clause, next((c.period for c in groups[-1] if c.period), None)):
            groups.append([clause])  # "and for last month?", "June vs July": the figure over another period
            roles.append("period")
        else:
            groups[-1].append(clause)  # "stores 1, 3 and 7", "how many": part of the question before
    if not groups or len(groups) == 1:
        return [Asked(message)]
    return _shared(message, groups, roles)


def _shared(message: str, groups: list[list[_Clause]], roles: list[Role]) -> list[Asked]:
    """Each group as a question, the store and the period said once put into those that name none."""
    entities = message_entities(message)
    store = entities.get("store_id") if isinstance(entities.get("store_id"), int) else None
    periods = [c.period for group in groups for c in group if c.period]
    said_once = periods[0] if periods else None
    # What comes before the first figure ("s6 last qtr ->", "Store 1, June:") is said for every question.
    lead = next((i for i, c in enumerate(groups[0]) if c.figure is not None), 0)
    preamble = message[groups[0][0].start : groups[0][lead - 1].end].strip(" -:,>") if lead else ""
    asked: list[Asked] = []
    last_figure = 0
    for index, (group, role) in enumerate(zip(groups, roles, strict=True)):
        # A group is a run of clauses: its words as written, between its first and its last, but for
        # what it says is not wanted ("not added up"), which no reader should take for a figure.
        text = message[group[0].start : group[-1].end]
        for clause in group:
            if _NEGATED.match(clause.text):
                text = text.replace(clause.text, " ")
        text = text.strip(" -:,?.!")
        own_store = any(c.store for c in group)
        if role == "figure":
            last_figure = index
        base = asked[last_figure] if role != "figure" and asked else None
        period = next((c.period for c in group if c.period), None)
        if role == "period" and base is not None:
            # "up or down on August", "the % change from July", "how about yesterday": the period alone.
            period = _LEADING.sub("", period or "")
            # The figure of the question before, over this period.
            held = _LEADING.sub("", base.period or "")
            if held and held in base.text:
                text = base.text.replace(held, period or "", 1)
            else:
                text = f"{base.text} {period}"
            asked.append(Asked(text, "period", last_figure, base.store, period))
            continue
        if index and role == "figure" and preamble and period is None:
            text, own_store = f"{text} {preamble}", own_store or bool(_STORE.search(preamble))
            period = time_mention(preamble)
        if period is None and said_once and role == "figure":
            text, period = f"{text} {said_once}", said_once
        if not own_store and store is not None and role == "figure":
            text = f"{text} at store {store}"
        mine = message_entities(text).get("store_id")
        asked.append(
            Asked(
                text,
                role,
                None if role == "figure" else last_figure,
                mine if isinstance(mine, int) else store,
                period if role == "figure" else (base.period if base else said_once),
            )
        )
    return asked


def per_store(message: str) -> list[Asked] | None:
    """One figure asked for three or more stores listed by number ("stores 1, 3 and 7"): a question for
    each store (two stores are set side by side by the data handler itself), without what is said not
    to be wanted ("not added up"). None when no such list is said."""
    listed = _STORE_LIST.search(message)
    if listed is None:
        return None
    stores = [int(n) for n in re.findall(r"\d+", listed.group(0))]
    if len(set(stores)) < 3:
        return None
    kept = message
    for start, end, _, _ in _clauses(message):
        if _NEGATED.match(message[start:end].strip()):
            kept = kept.replace(message[start:end], " ")
    listed = _STORE_LIST.search(kept)
    assert listed is not None
    return [
        Asked(f"{kept[: listed.start()]}store {store}{kept[listed.end() :]}".strip(" -,"), store=store)
        for store in dict.fromkeys(stores)
    ]


def asks_change(message: str) -> bool:
    """Whether the message asks for the change or direction between the figures it names."""
    return _CHANGE.search(message) is not None
