"""A request's clauses that ask to see what will be done before it is done ("show me before you book
it", "don't send yet", "confirm with me before changing it", "hold it until I say so", "let me read it
first"). They say how the request is to be carried out, not what it is: every write of the pack is a
draft or a preview the user approves before anything runs, so such a clause is already honoured and is
taken out before the request is read. Left in, its words became the request's (an invite titled
"... : don't book it yet", "10 to 11" read with its words as 10:50, "before changing it" read as a
cancel).

A clause is one when it asks the user's own review (a verb of seeing or approving with "me" or "I", or
"preview it") before or until the change, or forbids the change for now (don't ... yet / until / first).
"""

from __future__ import annotations

import re

#: Where a request's clauses part: sentences, commas, dashes and "but"/"and" opening a clause.
_CLAUSE = re.compile(
    r"(?:[.;!]+\s+|,\s*|\s+[-–—]\s+|\s+(?=(?:but|and)\s+(?:don'?t|do\s+not|let|show|ask|hold|"
    r"check|confirm|run|preview|i\s+want|wait)\b))",
    re.I,
)
#: The user's review asked for: "show me", "let me see/read/check", "ask/check/confirm with me",
#: "run it by me", "I want to read it", "preview it (first)", "wait for my ok".
_REVIEW = re.compile(
    r"\b(?:show\s+(?:it\s+)?(?:to\s+)?me|let\s+me\s+(?:see|read|check|look\s+at|review|approve|have\s+a\s+look)"
    # "let me check with Tom first" is the user asking someone else, not reviewing the change.
    r"(?!\s+with\b)|"
    r"(?:ask|check\s+with|confirm\s+with|run\s+it\s+(?:by|past))\s+me|i\s+(?:want|need|'d\s+like)\s+to\s+"
    r"(?:see|read|check|review|approve)|preview\s+(?:it|that|this|the\s+\w+)|wait\s+for\s+my\s+\w+|"
    r"until\s+i\s+say\s+so)\b",
    re.I,
)
#: When the review comes: first, before the change, until the user says, or "yet".
_BEFORE = re.compile(
    r"\b(?:first|before|until|till|yet|beforehand)\b|\bmy\s+(?:ok|okay|go|approval|say)\b", re.I
)
#: The change forbidden for now: "don't send yet", "do not book it until I say", "don't touch the event".
_NOT_YET = re.compile(
    r"^\W*(?:(?:but|and|just|please|ok)\W+)*(?:don'?t|do\s+not|dont)\s+(?:\w+\s+){0,3}?"
    r"(?:yet|until\b.*|till\b.*|first|just\s+yet)\W*$",
    re.I,
)
#: "don't apply it", "do not execute the change": the change itself not carried out yet.
_NOT_APPLIED = re.compile(
    r"^\W*(?:(?:but|and|just|please)\W+)*(?:don'?t|do\s+not|dont)\s+(?:apply|execute|commit|action|"
    r"make)\s+(?:it|that|this|the\s+change|anything)(?:\s+(?:yet|now|straight\s+away))?\W*$",
    re.I,
)
#: "just a mail, don't touch the event": the user rules out a change the request does not ask for.
_HANDS_OFF = re.compile(
    r"^\W*(?:(?:but|and|just)\W+)*(?:don'?t|do\s+not|dont)\s+(?:touch|change|move)\s+the\s+"
    r"(?:event|meeting|invite|calendar)\W*$",
    re.I,
)
_HOLD = re.compile(r"^\W*(?:(?:but|and|just|please)\W+)*hold\s+(?:it|off|on)\b.*\b(?:until|till)\b", re.I)


def asks_review_first(clause: str) -> bool:
    """Whether a clause asks to see or approve the change before it is made, or forbids it for now."""
    if _REVIEW.search(clause) and (_BEFORE.search(clause) or re.search(r"\bpreview\b", clause, re.I)):
        return True
    return any(rule.match(clause) for rule in (_NOT_YET, _NOT_APPLIED, _HOLD, _HANDS_OFF))


def without_review_clauses(request: str) -> str:
    """The request without its clauses asking to see the change first; the request as written when
    every clause would go (a message that only asks to see something is a request of its own)."""
    parts = _CLAUSE.split(request)
    kept = [part for part in parts if part.strip() and not asks_review_first(part)]
    if len(kept) == len([part for part in parts if part.strip()]) or not kept:
        return request
    # Clauses rejoined with the separators they had before the first dropped one is not needed: the
    # readers after this read words, days, times and people, and a comma keeps the clauses apart.
    return ", ".join(part.strip(" ,;") for part in kept).strip()
