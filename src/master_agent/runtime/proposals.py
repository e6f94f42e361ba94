"""Risk tiers of tool calls and the proposals of high-risk ones (seed 002), for every pack.

A tool declares its risk in ``metadata["risk"]`` (default ``low``) and may raise it by its arguments
with ``metadata["risk_of"]`` (args -> risk or None; e.g. an email to more than ten people is high); an
agent spec's ``tool_risks`` replaces the declared risk, never the raise by arguments. The tools step
acts on it:

- low: the call runs and its result is shown;
- medium: the call is shown as a draft and waits (``interrupt()``) for approve, cancel or a change;
- high: the call does not run. Its preview is stored as a pending proposal and the flow ends. A later
  flow of the same thread accepts it ("please execute the proposed plan"), revises it ("change X to Y
  in the proposal") or cancels it; the call then runs only by claiming an accepted proposal with the
  same tool and arguments, once (a crash between claim and result never sends twice).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from datetime import datetime
from typing import Any, Literal

from langchain_core.tools import BaseTool
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.capabilities.spec import Risk

RISKS: tuple[Risk, ...] = ("low", "medium", "high")
Feedback = Literal["accept", "cancel", "revise"]
ProposalStatus = Literal["pending", "accepted", "executing", "executed", "failed", "cancelled", "revised"]

#: What a user can answer to a preview or a draft (shown with each).
HOW_TO_ANSWER = (
    "Reply 'please execute the proposed plan' to accept, 'change X to Y in the proposal' to revise, "
    "or 'cancel'."
)

#: Words that praise what is shown: an answer of nothing else ("great", "perfect!", "lovely, thanks")
#: takes it as it stands.
_PRAISE = r"great|perfect|good|fine|nice|cool|excellent|lovely|brilliant|awesome|splendid|wonderful"
_PRAISED = re.compile(
    rf"^(?=.*\b(?:{_PRAISE})\b)\s*(?:(?:ok(?:ay)?|all|so|very|thanks|thank\s+you|{_PRAISE})[,.!]*\s*)+$", re.I
)
_ACCEPT = re.compile(
    r"^\s*(?:(?:ok(?:ay)?|yes|yep|yeah|" + _PRAISE + r"|thanks|"
    r"thank\s+you|alright|all\s+right|right|now|then|so)[,.!]?\s*|please\s+)*"
    r"(?:(?:execute|go ahead|go for it|proceed|approve[ds]?|accept(?:ed)?|confirm(?:ed)?|send|book it|"
    r"do (?:it|both|them|all|that)|run it|ship it|fire away|go on|yes|yep|yeah|yup|ok(?:ay)?|sure|"
    r"looks (?:good|right|fine|great)|sounds good|lgtm)\b"
    # A bare "go" is a go-ahead, as is a bare "y"; "go back to Friday" is not.
    r"|(?:go|y)\s*[.!]*\s*$)",
    re.I,
)
_CANCEL = re.compile(
    # "ok forget it then", "hmm, never mind": the agreeing word opens a withdrawal, it approves nothing.
    r"^\s*(?:(?:no|nope|nah|ok(?:ay)?|hmm+|well|actually|oh|right)[,.!]?\s*|please\s+)*"
    r"(?:cancel|abort|stop|never\s*mind|forget|scrap|discard|drop|don'?t|do not|reject(?:ed)?|no|nope|nah|"
    r"hold\s+(?:off|on|it)|leave\s+it|not\s+now|skip\s+it)\b",
    re.I,
)
#: "the subject should be 'X' instead", "subject: X": one argument set to a new value.
_SET = re.compile(
    r"^\s*(?:(?:make|let)\s+)?(?:the\s+)?(?P<old>[a-z][a-z ]{1,30}?)\s+(?:should\s+be|to\s+be|:)\s+"
    r"['\"]?(?P<new>.+?)['\"]?(?:\s+instead)?\s*[.!]?\s*$",
    re.I,
)
_CHANGE = re.compile(
    r"\b(?:change|replace|make)\s+['\"]?(?P<old>.+?)['\"]?\s+(?:to|with|into)\s+['\"]?(?P<new>.+?)['\"]?"
    r"(?:\s+in\s+the\s+(?:proposal|plan|draft|preview|email|invite|event))?\s*[.!]?\s*$",
    re.I,
)


#: What users call a draft's arguments, by the arguments it may be (the first the draft has is set):
#: an email's subject is its title, an event's summary its title or name.
FIELD_WORDS: dict[str, tuple[str, ...]] = {
    "subject": ("subject", "summary"),
    "subject line": ("subject", "summary"),
    "title": ("subject", "summary"),
    "heading": ("subject", "summary"),
    "headline": ("subject", "summary"),
    "name": ("summary", "subject"),
    "body": ("body",),
    "text": ("body",),
    "message": ("body",),
    "wording": ("body",),
}
_FIELD = "|".join(sorted((re.escape(word) for word in FIELD_WORDS), key=len, reverse=True))
#: "make the subject 'X'", "use the subject line X", "subject: X", "set its title as X": a named argument
#: and its new value, the verb before it optional.
_FIELD_SET = re.compile(
    r"^\s*(?:(?:ok(?:ay)?|and|actually|also|please|now|can|could)[,.!]?\s+)*(?P<verb>(?:make|set|use|put|"
    r"give\s+it|have|update|change)\s+)?(?:it\s+|the\s+|its\s+|a\s+|as\s+)*(?:new\s+)?(?P<field>"
    + _FIELD
    + r")"
    r"\s*(?:(?P<sep>should\s+(?:be|read|say)|to\s+be|to\s+read|to|as|into|read|say|be|=|:)\s*:?\s*|\s+)['\"‘“]?(?P<new>[^'\"’”]+?)['\"’”]?"
    r"(?:\s+instead)?(?:,?\s+please)?\s*[.!]?\s*$",
    re.I,
)
#: "retitle it to X", "rename it X", "call it X": its title set.
_RETITLE = re.compile(
    r"^\s*(?:(?:ok(?:ay)?|and|actually|please)[,.!]?\s+)*(?:retitle|rename|title|call|name)\s+(?:it|the\s+"
    r"(?:email|mail|draft|message|note|event|invite))\s+(?:to\s+|as\s+)?['\"‘“]?(?P<new>[^'\"’”]+?)['\"’”]?"
    r"(?:\s+instead)?\s*[.!]?\s*$",
    re.I,
)


def _field_change(text: str) -> tuple[str, str] | None:
    """The argument a message names (in the user's words) and the value it gives it, or None."""
    found = _FIELD_SET.match(text)
    # "subject: X", "make the subject X"; not "message Priya that ..." (a request, no verb or colon).
    if found is not None and (found.group("verb") or found.group("sep")):
        return found.group("field").lower(), found.group("new").strip()
    found = _RETITLE.match(text)
    if found is not None:
        return "title", found.group("new").strip()
    return None


def _argument(named: str, args: dict[str, Any]) -> str | None:
    """The argument of ``args`` the user's words for it name ("subject line", "title"), or None."""
    key = named.lower().replace(" ", "_")
    if key in args:
        return key
    return next((name for name in FIELD_WORDS.get(named.lower(), ()) if name in args), None)


#: The words a correction opens with before what it changes: "no wait, ...", "oh sorry, ...".
_OPENING_NO = re.compile(r"^\s*(?:(?:no|oh|wait|actually|sorry|hmm+|hang\s+on)\b[,.!]?\s*)+", re.I)
_LEADING_SIGNS = re.compile(r"^[^\w'\"‘“]+")


def read_feedback(text: str) -> Feedback | None:
    """What a message says about a proposal or a draft: accept, cancel, revise (a change), or None.
    Emoji and punctuation before the words are no part of them ("👍 yes")."""
    text = _LEADING_SIGNS.sub("", text)
    if (
        _CHANGE.search(text)
        or _SET.search(text)
        or _field_change(text) is not None
        # "actually no, make it 11:30": the "no" is to what is shown, the rest a change of it.
        or points_at_what_waits(text)
        or _MEANT.search(text) is not None
        # "no wait, send it to the whole team instead": the "no" is to what is shown, not a cancel.
        or (_INSTEAD.search(text) is not None and not _CANCEL.match(_OPENING_NO.sub("", text)))
        # "scrap that, make it Omar instead": what is shown is withdrawn for the change said after it.
        or _withdrawn_for_a_change(text)
    ):
        return "revise"
    if _CANCEL.match(text):
        return "cancel"
    if _PRAISED.match(text) or approves_all_said(text):
        return "accept"
    return None


#: What an approval may say besides its approving words: the verb of what it approves and words
#: pointing at what is shown ("yes, send it to all of them", "ok fire it off now", "go ahead with both").
#: Any other word ("yeah nah", "do it tomorrow", "yes if Tom agrees") says more than yes: the rules do
#: not read such an answer as an approval (the answer head may, by its meaning, above its floor).
_POINTING = "it that this these those them both all of each every everyone everybody one ones him her me"
_LINKING = "to with the a as is and now then round around on through off out away ahead shown drafted written proposed"
_POLITE = "please pls plz thanks thank you thx sir i'm that's it's thing like exactly right correct"
_ASSENT = "ok okay yes yeah yep yup sure alright"
_DOING = "send book cancel delete remove drop move reschedule schedule invite email mail forward reply post do go run"
_DOING_TOO = "fire ship proceed confirm approve execute"
_SHOWN = "message note invitation event meeting draft booking change changes plan preview proposal slot time"
_APPROVAL_WORDS = frozenset(
    " ".join(
        (_POINTING, _LINKING, _POLITE, _ASSENT, _DOING, _DOING_TOO, _SHOWN, _PRAISE.replace("|", " "))
    ).split()
)
_WORD = re.compile(r"[^\W_]+(?:'[a-z]+)?", re.I)


def opens_with_approval(text: str) -> bool:
    """Whether an answer opens with approving words ("yeah, go with thursday"), whatever follows."""
    return _ACCEPT.match(_LEADING_SIGNS.sub("", text)) is not None


def approves_all_said(text: str) -> bool:
    """Whether an answer is an approval and nothing else: approving words ("yes", "go ahead", "looks
    good"), each maybe followed by the verb of what it approves and words pointing at it; never an
    answer that goes on to hedge, defer or take it back ("yes, actually no", "sure, after lunch")."""
    rest = _LEADING_SIGNS.sub("", text)
    approved = False
    while (found := _ACCEPT.match(rest)) is not None and found.end() > 0:
        approved = True
        rest = rest[found.end() :]
        words = list(_WORD.finditer(rest))
        # The approving words' tail: the verb and pointing words up to the next approving phrase.
        taken = 0
        for word in words:
            if word.group().lower() not in _APPROVAL_WORDS or _ACCEPT.match(rest[word.start() :]):
                break
            taken = word.end()
        rest = _LEADING_SIGNS.sub("", rest[taken:])
    return approved and not _WORD.search(rest)


#: What is shown withdrawn in so many words before more is said: "scrap that, ...", "no, cancel it -".
_WITHDRAWN = re.compile(
    r"^\W*(?:(?:no|nah|nope|oh|wait|actually|sorry|hmm+|ok(?:ay)?)\W+)*(?:scrap|cancel|forget|drop|ditch|"
    r"discard|bin|kill|undo)\s+(?:that|it|this)\b\W+(?=\w)",
    re.I,
)


def _withdrawn_for_a_change(text: str) -> bool:
    """Whether a message withdraws what is shown only to say how it should be instead ("scrap that,
    make it Omar instead", "cancel it, Thursday at 4 instead"): a change of it, not a cancel."""
    withdrawn = _WITHDRAWN.match(text)
    if withdrawn is None:
        return False
    rest = text[withdrawn.end() :]
    # "no, cancel it instead" says nothing after its cancel: a cancel.
    said = _INSTEAD.search(rest) is not None and bool(_INSTEAD.sub(" ", rest).strip(" ,.;!-"))
    return said or points_at_what_waits(rest) or bool(_CHANGE.search(rest)) or _field_change(rest) is not None


#: A change to what waits for the user, opened by a verb and a word that points at it: "move it to
#: 12-1 instead", "make it 3pm", "oh wait, change that to Friday".
_POINTED_CHANGE = re.compile(
    r"^\W*(?:(?:oh|ok(?:ay)?|wait|actually|no|sorry|hmm+|and|also|but|please)\W+)*(?:move|make|change|shift|"
    r"push|pull|bring|put|switch|turn|address|set)\s+(?:it|that|this|them)\s+\S",
    re.I,
)
#: "rather" of a change ("Friday rather"), not of a refusal ("I'd rather not").
_INSTEAD = re.compile(r"\b(?:instead|rather(?!\s+not\b))\b", re.I)
#: The most words a change said with "instead" and no pointing word may have.
_SHORT_CHANGE_WORDS = 5


def points_at_what_waits(text: str) -> bool:
    """Whether a message opens as a change of something it points at ("move it to 12-1 instead"):
    it states no request of its own."""
    return _POINTED_CHANGE.search(text) is not None


def changes_what_waits(text: str) -> bool:
    """Whether a message asks a change of the draft or preview waiting for the user ("move it to
    12-1 instead", "Friday instead"), rather than making a request of its own."""
    if read_feedback(text) == "revise" or points_at_what_waits(text):
        return True
    # "Friday instead", "12-1 instead please": a few words; "let's do the budget sync at 4 instead" names
    # an event of its own and is a request, never a change of what waits.
    return _INSTEAD.search(text) is not None and len(text.split()) <= _SHORT_CHANGE_WORDS


#: Words that approve a change outright, wherever they stand in an answer ("10:30 works, go ahead");
#: "ok" or "sure" before a value only acknowledge the question.
_GO = re.compile(
    r"\b(?:go\s+ahead|go\s+for\s+it|book\s+it|send\s+it|do\s+it|proceed|approved?|confirm(?:ed)?|"
    r"lock\s+it\s+in|put\s+it\s+in)\b",
    re.I,
)


def approves(text: str) -> bool:
    """Whether an answer to a question also approves the change it completes: one of its clauses says
    "go ahead" (or the like), and none cancels or changes anything."""
    clauses = [part for part in re.split(r"[,;.!]+\s*|\s+(?:and|then|so)\s+", text) if part.strip()]
    said = [read_feedback(part) for part in clauses]
    # "go ahead once Tom confirms", "do it tomorrow": a go-ahead that says more approves nothing yet.
    go = [part for part in clauses if _GO.search(part) and not _says_more(_GO.sub(" ", part))]
    return bool(go) and "cancel" not in said and "revise" not in said


def _says_more(text: str) -> bool:
    """Whether words besides an approval's own and those pointing at what it approves remain."""
    return any(word.group().lower() not in _APPROVAL_WORDS for word in _WORD.finditer(text))


#: A correction that names only the right value: "sorry, I meant the 15th, fix that", "I mean 3pm".
_MEANT = re.compile(
    r"\bi\s+mean(?:t)?\s+(?:to\s+say\s+)?(?:the\s+)?(?P<new>[^,;!?]+?)\s*(?:[,;!?]|\.(?:\s|$)|\s+not\b|"
    r"\s+instead\b|\s+there\b|$)",
    re.I,
)
_WEEKDAY_NAMES = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_MONTH_NAMES = "january|february|march|april|may|june|july|august|september|october|november|december"
#: Kinds of value a correction may name, each the pattern of its values: the draft's one value of the
#: kind the correction names is the one it corrects.
_VALUE_KINDS = (
    re.compile(r"\b\d{1,2}(?:st|nd|rd|th)\b", re.I),
    re.compile(rf"\b(?:{_WEEKDAY_NAMES})\b", re.I),
    re.compile(rf"\b(?:{_MONTH_NAMES})\b", re.I),
    re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.I),
    re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?%?(?![\w.])"),
)


def _corrected(args: dict[str, Any], text: str) -> dict[str, Any] | None:
    """``args`` with a correction that names only the right value applied ("I meant the 15th"): the
    one value of its kind the draft's strings hold (a day of the month, a weekday, a month, a clock
    time, a number) becomes it. None when the text is no such correction, or the draft holds none or
    several values of that kind (which one is meant is not guessed)."""
    found = _MEANT.search(text)
    if found is None:
        return None
    new = found.group("new").strip()
    kind = next((pattern for pattern in _VALUE_KINDS if pattern.fullmatch(new)), None)
    if kind is None:
        return None
    held = {
        value.group(0).lower()
        for item in args.values()
        for string in ([item] if isinstance(item, str) else item if isinstance(item, list) else [])
        if isinstance(string, str)
        for value in kind.finditer(string)
    }
    if len(held) != 1 or new.lower() in held:
        return None
    old = re.compile(r"(?<!\w)" + re.escape(held.pop()) + r"(?!\w)", re.I)

    def apply(value: Any) -> Any:
        if isinstance(value, str):
            return old.sub(new, value)
        if isinstance(value, list):
            return [apply(item) for item in value]
        return value

    return {key: apply(value) for key, value in args.items()}


#: Words of a change that point at the draft itself, never at words in it.
_REFERENCES = frozenset({"it", "this", "that", "them", "the draft", "the email", "the mail", "the invite"})


def revise_args(args: dict[str, Any], text: str) -> dict[str, Any]:
    """``args`` with "change X to Y" of ``text`` applied to every string in them (case-insensitive,
    keeping a leading capital); unchanged when the text names no change or nothing in them matches."""
    field = _field_change(text)
    if field is not None and (key := _argument(field[0], args)) is not None:
        # "make the subject 'X'", "retitle it to X": the argument the words name becomes X.
        return {**args, key: field[1]}
    match = _CHANGE.search(text) or _SET.search(text)
    if match is None:
        return _corrected(args, text) or dict(args)
    old, new = match.group("old").strip(), match.group("new").strip()
    # "change the subject to X": the words name an argument (its name, with spaces for underscores,
    # or what users call it: ``FIELD_WORDS``): that argument becomes X, whatever it held.
    named = _argument(re.sub(r"^(?:the|its|my)\s+", "", old, flags=re.I), args)
    if named is not None and isinstance(args[named], str | None):
        return {**args, named: new}
    if old.lower() in _REFERENCES:
        # "make it to Emma instead": "it" is the draft, not words in it (every "it" inside "submit"
        # and "item" was replaced); such an answer is the tool's own to read, or not applied.
        return dict(args)
    # Whole words only: "change Fri to Mon" leaves "Friday" alone rather than making "Monday" of it
    # unasked, and a short word never changes the inside of another.
    pattern = re.compile(r"(?<!\w)" + re.escape(old) + r"(?!\w)", re.I)

    def replacement(found: re.Match[str]) -> str:
        # "Budget freeze" -> "Hiring freeze": a capital where the replaced text had one.
        return new[:1].upper() + new[1:] if found.group(0)[:1].isupper() else new

    def apply(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(replacement, value)
        if isinstance(value, list):
            return [apply(item) for item in value]
        if isinstance(value, dict):
            return {key: apply(item) for key, item in value.items()}
        return value

    return {key: apply(value) for key, value in args.items()}


def call_risk(tool: BaseTool, args: dict[str, Any], override: Risk | None = None) -> Risk:
    """The risk of one call: the agent's override or the tool's declared risk, raised (never lowered)
    by the tool's ``risk_of`` rule for these arguments."""
    metadata = tool.metadata or {}
    declared = override or metadata.get("risk") or "low"
    risk: Risk = declared if declared in RISKS else "high"  # an unknown risk is treated as the highest
    rule = metadata.get("risk_of")
    if callable(rule):
        raised = rule(args)
        if raised in RISKS and RISKS.index(raised) > RISKS.index(risk):
            risk = raised
    return risk


def args_digest(args: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(args, sort_keys=True, default=str).encode()).hexdigest()


class Proposal(BaseModel):
    """A preview of a high-risk call (a row of ``proposals``)."""

    proposal_id: str
    tenant_id: str
    thread_id: str
    agent: str
    tool: str
    args: dict[str, Any]
    risk: Risk
    preview: dict[str, Any]
    status: ProposalStatus
    feedback: str | None = None
    result: Any = None
    created_at: datetime | None = None

    def view(self) -> dict[str, Any]:
        """What the user (and a later flow's context) sees of it."""
        return {
            "proposal_id": self.proposal_id,
            "tool": self.tool,
            "args": self.args,
            "risk": self.risk,
            "status": self.status,
            "feedback": self.feedback,
            "preview": self.preview,
        }


_COLUMNS = "proposal_id::text, tenant_id, thread_id, agent, tool, args, risk, preview, status, feedback, result, created_at"
INSERT_PROPOSAL = f"""
INSERT INTO proposals (proposal_id, tenant_id, thread_id, agent, tool, args, args_digest, risk, preview, status)
VALUES (%(proposal_id)s, %(tenant_id)s, %(thread_id)s, %(agent)s, %(tool)s, %(args)s, %(digest)s, %(risk)s,
        %(preview)s, 'pending')
ON CONFLICT (proposal_id) DO UPDATE SET updated_at = proposals.updated_at
RETURNING {_COLUMNS}
"""
SELECT_OPEN = f"""
SELECT {_COLUMNS} FROM proposals
WHERE tenant_id = %s AND thread_id = %s AND status = 'pending'
ORDER BY created_at DESC LIMIT 1
"""
ANSWER_PROPOSAL = f"""
UPDATE proposals SET status = %s, feedback = %s, updated_at = now()
WHERE proposal_id = %s AND tenant_id = %s AND status = 'pending'
RETURNING {_COLUMNS}
"""
CLAIM_PROPOSAL = f"""
UPDATE proposals SET status = 'executing', updated_at = now()
WHERE proposal_id = (
    SELECT proposal_id FROM proposals
    WHERE tenant_id = %s AND thread_id = %s AND tool = %s AND args_digest = %s AND status = 'accepted'
    ORDER BY created_at DESC LIMIT 1
    FOR UPDATE SKIP LOCKED
)
RETURNING {_COLUMNS}
"""
FINISH_PROPOSAL = """
UPDATE proposals SET status = %s, result = %s, updated_at = now()
WHERE proposal_id = %s AND status = 'executing'
"""
LIST_PROPOSALS = f"""
SELECT {_COLUMNS} FROM proposals
WHERE tenant_id = %(tenant_id)s AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
ORDER BY created_at DESC LIMIT %(limit)s OFFSET %(offset)s
"""


class ProposalBook:
    """The ``proposals`` table."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool

    async def _one(self, query: str, params: Any) -> Proposal | None:
        async with self._pool.connection() as conn:
            row = await (await conn.execute(query, params)).fetchone()
        return None if row is None else Proposal.model_validate(row)

    async def propose(
        self,
        *,
        tenant_id: str,
        thread_id: str,
        call_id: str,
        agent: str,
        tool: str,
        args: dict[str, Any],
        risk: Risk,
        preview: dict[str, Any],
    ) -> Proposal:
        """Store a pending proposal. The id derives from the call, so a step run again after a crash
        finds the proposal it stored before instead of storing a second one."""
        proposal_id = uuid.uuid5(uuid.NAMESPACE_URL, f"proposal:{tenant_id}:{thread_id}:{agent}:{call_id}")
        stored = await self._one(
            INSERT_PROPOSAL,
            {
                "proposal_id": proposal_id,
                "tenant_id": tenant_id,
                "thread_id": thread_id,
                "agent": agent,
                "tool": tool,
                "args": Jsonb(args),
                "digest": args_digest(args),
                "risk": risk,
                "preview": Jsonb(preview),
            },
        )
        assert stored is not None
        return stored

    async def open_proposal(self, tenant_id: str, thread_id: str) -> Proposal | None:
        """The thread's latest proposal still waiting for the user."""
        return await self._one(SELECT_OPEN, (tenant_id, thread_id))

    async def answer(
        self, proposal: Proposal, status: Literal["accepted", "cancelled", "revised"], feedback: str
    ) -> Proposal | None:
        """Record the user's answer to a pending proposal (None: it was answered already)."""
        return await self._one(ANSWER_PROPOSAL, (status, feedback, proposal.proposal_id, proposal.tenant_id))

    async def claim(self, tenant_id: str, thread_id: str, tool: str, args: dict[str, Any]) -> Proposal | None:
        """Take the accepted proposal of exactly this call for running it (None: there is none)."""
        return await self._one(CLAIM_PROPOSAL, (tenant_id, thread_id, tool, args_digest(args)))

    async def finish(self, proposal: Proposal, *, ok: bool, result: Any) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                FINISH_PROPOSAL,
                ("executed" if ok else "failed", Jsonb(result), proposal.proposal_id),
            )

    async def list(
        self,
        tenant_id: str,
        *,
        thread_id: str | None = None,
        status: ProposalStatus | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Proposal]:
        """The tenant's proposals, newest first (of one thread, in one status)."""
        params = {
            "tenant_id": tenant_id,
            "thread_id": thread_id,
            "status": status,
            "limit": limit,
            "offset": offset,
        }
        async with self._pool.connection() as conn:
            cursor = await conn.execute(LIST_PROPOSALS, params)
            return [Proposal.model_validate(row) for row in await cursor.fetchall()]
