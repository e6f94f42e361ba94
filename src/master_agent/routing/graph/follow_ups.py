"""Follow-ups: a short message that continues the served one before it, and a question that names a figure
of the tenant's data or asks for work on it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from master_agent.capabilities import DataMetric
from master_agent.capabilities.terms import (
    asks_future,
    asks_money,
    changed_between,
    duckling_parse_time,
    goal_target,
    metric_by_words,
    metric_mention,
    moves_a_figure,
    only_figure_words,
    opens_deadline,
    time_mention,
    time_window,
)
from master_agent.capabilities.tools.lexicon import names_a_share
from master_agent.models.embeddings import Embedder
from master_agent.routing.models import RouteTarget
from master_agent.routing.per_unit import distinct_count, per_unit_rate


def names_a_figure(text: str, metrics: Sequence[DataMetric]) -> str | None:
    """The name of the figure of the tenant's data ``text`` names (by name, alias or its words, in
    shorthand too), when it sets that figure no target; None otherwise (or for a figure the data
    has not: "warranty attach rate")."""
    if (units := distinct_count(text, metrics)) is not None:
        # "how many different staff made at least one sale": "at least one" says which units count,
        # and a count asked sets no target.
        return units.name
    if goal_target(text) is not None:
        return None
    mention = metric_mention(text, metrics)
    if mention.unknown:
        return None
    metric = mention.metric or (metric_by_words(text, metrics) or mention).metric
    # "what was store 3 taking an hour": a figure per a unit is named by the unit, not by a figure's name.
    metric = metric or per_unit_rate(text, metrics)
    return metric.name if metric is not None else None


#: A question after a figure that asks what caused it ("why so low?", "how come it dropped").
_WHY = re.compile(r"\b(why|how come|what caused|what's causing|reasons?)\b", re.I)


def is_figure_question(text: str, metrics: Sequence[DataMetric], now: datetime) -> bool:
    """Whether ``text`` asks for the value of one of the data's figures over a period gone by: it names
    the figure (misspelt too) and a past window, and states no target, no deadline ahead, no verb that
    moves a figure and no "why" (a cause is work, not a value), and says nothing else. A change between
    two periods gone by ("did it go up by a third between May and August?") is a question about values
    too."""
    if changed_between(text, now) is not None and names_a_figure(text, metrics) is not None:
        return not _WHY.search(text)
    return only_figure_words(text, metrics) and asks_a_value(text, metrics, now)


def asks_a_value(text: str, metrics: Sequence[DataMetric], now: datetime, *, money: bool = False) -> bool:
    """Whether ``text`` asks for a value of the data over a period gone by, whatever else it says: it
    names one of the data's figures (with ``money``, or asks an amount of money: "what did store 2 make
    on accessories"), and a past window, with no target, no deadline ahead, no verb that moves a figure
    and no "why"."""
    if _WHY.search(text) or moves_a_figure(text) or opens_deadline(text):
        return False
    if names_a_figure(text, metrics) is None and not (money and asks_money(text)):
        return False
    window = time_window(text, now, direction="future" if asks_future(text) else "past")
    return window is not None and window.end <= now + timedelta(days=1)


#: A question for a proportion of a group: "what share of store 3's phone buyers ...", "what % of orders
#: ...", "how many out of ...". English says a part of a whole with a noun WordNet files under a share,
#: proportion or fraction ("what cut of store 6's takings", ``lexicon.names_a_share``) or with "out of".
#: "How many of ..." asks a count, not a share ("how many of our branches have broken air con"): not one.
_PART_OF = re.compile(r"\b(?:what|which)\s+(?:(\w+)\s+)?(\w+|%)\s+of\b", re.I)
_PROPORTION = re.compile(
    r"\bwhat\s*%|\bhow\s+many\s+out\s+of\b|\bout\s+of\s+(?:every|each|all|how\s+many)\b", re.I
)


def asks_a_share(text: str) -> bool:
    """Whether ``text`` asks what part of a group has a property ("what share of store 3's phone buyers
    also bought a case", "what proportion of October's orders were returned"): a ratio the data
    answers with one query, whatever figure name it lacks. Not when it asks to move it (a target, a
    deadline ahead, a verb that moves a figure) or why it is what it is (work, not a value)."""
    shares = [
        found for found in _PART_OF.finditer(text) if found.group(2) == "%" or names_a_share(found.group(2))
    ]
    if not (shares or _PROPORTION.search(text)):
        return False
    # The share's noun is no verb that moves a figure ("what cut of ..." cuts nothing).
    for found in reversed(shares):
        text = text[: found.start(2)] + "share" + text[found.end(2) :]
    return not (_WHY.search(text) or moves_a_figure(text) or opens_deadline(text) or goal_target(text))


def _as_answered(message: str, data: Mapping[str, Any], metrics: Sequence[DataMetric]) -> str:
    """``message`` with the figure its answer was of, when its words do not name it ("which shop
    refunded the biggest share of its sales?" was the refund rate): a follow-up ("and the smallest?")
    asks about that figure, not one its words would be read as again."""
    figure = data.get("metric")
    said = metric_mention(message, metrics).metric
    if not figure or data.get("outcome") != "answer" or (said is not None and said.name == figure):
        return message
    return f"{message.rstrip('?.! ')} (the {figure})"


def asks_about_the_figure(message: str) -> bool:
    """Whether a follow-up to a data question asks for work on the figure: what caused it, or moving
    it (a target or a deadline ahead)."""
    deadline = time_mention(message) is not None and time_mention(message, horizons=False) is None
    return bool(_WHY.search(message)) or goal_target(message) is not None or deadline


#: "it" and "its": in a follow-up to an agent's run, what stands for that agent (or its report, which
#: is the agent's doing all the same: "from now on have it group the items by brand").
_IT = re.compile(r"\b(it)(s\b|\b)(?!')", re.I)


def agent_meant(message: str, agent: str) -> str | None:
    """``message`` with the "it" or "its" that points back read as the agent the turn before ran
    (``agent``: "going forward, leave the managers out of it" says ``leave the managers out of
    staff_leaderboard``), so the message is read for what it asks of that agent; None when it says
    neither. "it's" is no pronoun of the agent ("it's fine")."""
    if _IT.search(message) is None:
        return None
    return _IT.sub(lambda match: f"{agent}'s" if match.group(2) else agent, message)


#: Most words of a message that continues the one before when nothing serves it on its own; of one
#: that points back to it ("stretch it back to the start of the month", "just change the original").
FOLLOW_UP_WORDS = 8
POINTING_BACK_WORDS = 14
#: Words that point back to what the conversation said before ("it", "that one", "the original",
#: "instead", "actually ...").
_POINTS_BACK = re.compile(r"\b(it|its|that|them|those|same|instead|actually|original|again|then)\b", re.I)
#: Words that open a repair of what was just said ("sorry, ...", "oops", "no wait, ..."), after fillers
#: that open any reply ("hmm", "oh", "ok": "ok set a target: 15% by January" repairs nothing).
_FILLERS = r"(?:(?:oh|ah|hmm+|um+|er+|ok|okay)\W+)*"
_REPAIR_OPENER = r"(?:sorry|oops|whoops|my\s+bad|no|nah|nope|wait|actually)"
#: A repair that puts a value in place of one the turn before said (conversation analysis calls it
#: self-repair): a verb of substitution ("I meant store 8", "make that 75", "scratch 4, do 5") or a repair
#: opener a few words before the value ("sorry, 2.5 lakh only", "no wait, v2", "actually returns_weekly ...",
#: "no, 1 to 4", "sorry, week 46 is what I'm after", "no, the other store").
_SUBSTITUTES = re.compile(
    r"\b(?:i\s+meant?|meant\s+to\s+say|scratch|correction)\b"
    # "make it 15", "make that the top 4", "make it a proper system": not "make it send weekly".
    r"|\bmake\s+(?:that|it)\s+(?=\d|(?:a|an|the|just|only|half|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|twelve|fifteen|twenty|thirty|forty|fifty|sixty|ninety)\b)"
    rf"|^\W*{_FILLERS}(?:{_REPAIR_OPENER}\W+)+(?=(?:[a-z]+\W+){{0,3}}\d|\w*_\w|[a-z]\d|the\s+other\b)",
    re.I,
)
#: A reply opened by a repair points back to the turn before ("hmm no, speed matters more ...").
_OPENS_A_REPAIR = re.compile(rf"^\W*{_FILLERS}(?:no|nah|nope|sorry|oops)\b", re.I)


def corrects_previous(message: str) -> bool:
    """Whether ``message`` corrects a value of the turn before ("sorry, I meant store 8", "sorry, make
    that 75", "scratch 4, do 5"): a repair that substitutes a value, in a message not long (a long one
    opening with "sorry" is a request of its own)."""
    words = len(re.findall(r"[A-Za-z0-9']+", message))
    return words <= POINTING_BACK_WORDS and _SUBSTITUTES.search(message) is not None


#: Most words of a thread's first message too short to be read as a closing: "Help" reads like "thanks"
#: to the embedder, and a word alone asks rather than signs off.
OPENING_WORDS = 1


def is_short(message: str, most: int = FOLLOW_UP_WORDS) -> bool:
    """Whether ``message`` is no longer than a follow-up that changes a value ("oops, typo - I meant 18
    there"); a longer one says more than the value ("Heute Nachmittag frei? I mean - have I got a free
    hour this afternoon" repairs itself and asks). ``most``: the most words of a short message."""
    return len(re.findall(r"[A-Za-z0-9']+", message)) <= most


def inherits_target(
    message: str,
    target: RouteTarget,
    previous: Mapping[str, Any],
    *,
    unsure: bool = False,
    correction: bool = False,
) -> bool:
    """Whether ``message``, which on its own gets ``target``, continues the previous turn instead: it
    is short (or, pointing back to the turn before, not long), on its own it would be asked about or
    refused, or sent to the builder by a reading the intent is unsure of (``unsure``: "could you
    split that up by weekday instead" is no new agent at 0.3), and the previous turn was served. A
    ``correction`` of the turn before continues it wherever it would go on its own ("oops, I meant the
    amount refunded" is the figure asked before, not an agent that reports refunds)."""
    served = (previous.get("target") or {}).get("kind") in ("agent", "query", "builder")
    alone = target.kind in ("clarification", "out_of_scope") or unsure or correction
    words = len(re.findall(r"[A-Za-z0-9']+", _own_words(message)))
    back = _POINTS_BACK.search(message) or _OPENS_A_REPAIR.search(message)
    short = words <= FOLLOW_UP_WORDS or (words <= POINTING_BACK_WORDS and back)
    return served and alone and bool(short)


#: Messages that thank or close a thread; one said like them continues nothing.
CLOSINGS = (
    "thanks",
    "thank you so much",
    "great, thanks, that's all I needed",
    "cheers, bye for now",
    "you're a star, much appreciated",
    "perfect, appreciate the help",
    "brilliant, great work",
    "lovely job, much obliged",
    "that'll do me, thanks a million",
    # Signing off rather than thanking ("that's me finished", "talk soon").
    "that's everything from me, signing off now",
    "ok I'm off, speak soon",
)
#: Least cosine similarity of a closing to one of ``CLOSINGS``, by embedder (an embedder with none
#: measured finds no closing). all-MiniLM-L6-v2, on the follow-ups of the routing evaluation's train and
#: tuning parts and eval-truth's tuning parts (tuning9 included), a time said judged without it
#: (``is_closing``): of the messages that continued their thread and read nearer a closing than a
#: go-ahead, the highest that says more than a time was 0.394 ("thanks. can you create an instagram post
#: bragging about it"); those nearer a go-ahead go on whatever their nearness ("fine, apply for that"
#: 0.445, "ok that works, go ahead" 0.53). Closings that state the speaker is done rather than thank
#: read lowest: "brilliant. it's 5 o'clock, I'm logging off" 0.405, "cheers, that's me sorted" 0.429,
#: then "thanks a ton, you're a lifesaver" 0.472. The floor sits in the gap between 0.394 and 0.405;
#: "ok and the week after" (0.399 without its time) is nearer a go-ahead, and times said with next to
#: nothing else ("3pm", "7th of June", 0.401) are never closings.
CLOSING_MIN_SIMILARITY = {"all-MiniLM-L6-v2": 0.40}
#: Messages that agree to what the turn before offered ("ok that works, go ahead"): said as politely as
#: a closing, they ask for the work. A message nearer one of these than every closing is no closing (on
#: the routing evaluation's follow-ups, every go-ahead is nearer these, every closing the closings).
GO_AHEADS = (
    "ok, go ahead",
    "yes, do it",
    "sounds good, proceed with that",
    "fine, send it",
    "perfect, book it",
    "great, apply for it",
    "that works for me, carry on",
)
_ASKS = re.compile(r"[?\d]")
#: The reason of a closing's routing decision (its reply thanks the user; nothing is refused).
CLOSES_THE_CONVERSATION = "closes the conversation: nothing is asked"
_closing_vectors: dict[str, tuple[list[list[float]], list[list[float]]]] = {}


async def is_closing(message: str, embedder: Embedder, metrics: Sequence[DataMetric]) -> bool:
    """Whether ``message`` only thanks or closes the thread ("thanks a ton, you're a lifesaver"): said
    like a closing, more than like a go-ahead ("ok that works, go ahead"), it asks nothing (no question
    mark, number or figure of the data). A time it says is judged without: what is left must read as a
    closing on its own ("that's me done for the day", "cheers, talk tomorrow": the speaker's own day,
    no window of a request; "ok and the week after" without its time reads as no closing)."""
    floor = CLOSING_MIN_SIMILARITY.get(getattr(embedder, "model_name", ""))
    own = _without_times(message)
    if floor is None or _ASKS.search(own) or names_a_figure(message, metrics):
        return False
    if own != message and len(re.findall(r"[A-Za-z']{2,}", own)) < 2:
        return False  # a time said with next to nothing else is a follow-up ("3pm", "now november")
    name = str(getattr(embedder, "model_name", ""))
    if name not in _closing_vectors:
        _closing_vectors[name] = (await embedder.embed(list(CLOSINGS)), await embedder.embed(list(GO_AHEADS)))
    closings, go_aheads = _closing_vectors[name]
    clauses = [clause for clause in _CLAUSE_BREAK.split(own) if re.search(r"[A-Za-z]{2,}", clause)]
    vectors = await embedder.embed([own, *clauses] if len(clauses) > 2 else [own])

    def nearness(vector: Sequence[float]) -> tuple[float, float]:
        return max(_cosine(vector, text) for text in closings), max(
            _cosine(vector, text) for text in go_aheads
        )

    def closes(vector: Sequence[float]) -> bool:
        closing, go_ahead = nearness(vector)
        return closing >= floor and closing > go_ahead

    if closes(vectors[0]):
        return True
    # Signed off at both ends ("ok thank you, I'll upload the slip tomorrow after 10, bye"): what is said
    # between is the user's own plan, unless it reads as agreeing to go ahead ("thanks, send it to Raj,
    # bye") as much as ``FRAMED_GO_AHEAD``.
    framed = len(vectors) > 3 and closes(vectors[1]) and closes(vectors[-1])
    return framed and all(nearness(vector)[1] < FRAMED_GO_AHEAD for vector in vectors[2:-1])


#: Where a message's clauses part: a sentence's or a clause's punctuation, or a dash between words.
_CLAUSE_BREAK = re.compile(r"\s*(?:[,;:.!]+|\s[-\u2013]+\s)\s*")
#: Least similarity to a go-ahead of a clause between two sign-offs that makes the message a request.
#: all-MiniLM-L6-v2 on the labelled sets' messages framed by sign-offs: "I'll upload the slip" 0.46
#: (a plan), "I'm logging off" 0.26; said by hand, "send it to Raj" 0.54 (a request).
FRAMED_GO_AHEAD = 0.5


def _without_times(message: str) -> str:
    """``message`` without the times it says (Duckling's: "tomorrow after 10", "10 o'clock", "at half
    five"): a closing's times are the speaker's own day, and their digits ask nothing."""
    spans = sorted(duckling_parse_time(message), key=lambda span: span["start"], reverse=True)
    for span in spans:
        message = f"{message[: span['start']]} {message[span['end'] :]}"
    return re.sub(r"\s+", " ", message).strip()


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5
    return dot / norms if norms else 0.0


def _own_words(message: str) -> str:
    """``message`` without the time and the target it states: "what if we gave it till the end of
    March?" is as short as "what if we gave it later?"."""
    own = message
    if (said := time_mention(own)) and said in own:
        own = own.replace(said, " ", 1)
    if (target := goal_target(own)) is not None and target.words and target.words in own:
        own = own.replace(target.words, " ", 1)
    return own
