"""Personal-assistant domain pack (seed 002): the user's email, calendar and contacts over IMAP, SMTP,
CalDAV and CardDAV, on the tenant's own servers or the embedded local ones."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any
from zoneinfo import ZoneInfo

from psycopg_pool import AsyncConnectionPool

from master_agent.capabilities import DomainPack, MissingInformation
from master_agent.capabilities.spec import routing_examples
from master_agent.capabilities.tools.context import ToolContext
from master_agent.domains.assistant.agents import MASTER
from master_agent.domains.assistant.people import attendees_asked, people_named
from master_agent.domains.assistant.providers import Contact, ProviderError
from master_agent.domains.assistant.requests import (
    EXAMPLES,
    WHEN,
    WRITES,
    Action,
    ActionReader,
    Reading,
    action_reader,
    imperative_verb,
    sure_request,
)
from master_agent.domains.assistant.review_first import without_review_clauses
from master_agent.domains.assistant.scheduling import MONTH_NAME, resolve_day, resolve_time
from master_agent.domains.assistant.shorthand import written_out
from master_agent.domains.assistant.steps import JOINS, Step, request_steps, step_text
from master_agent.domains.assistant.tools import (
    build_tools,
    configured_accounts,
    goal_entities,
    people_of,
    providers_for,
    resolve_shift,
)
from master_agent.runtime.answer_head import read_answer
from master_agent.runtime.proposals import points_at_what_waits

DEMO_TENANT = "demo-assistant"
#: Words besides its day and time that a bare answer to "which day or time?" has at most ("works for
#: me", "how about", "ok then").
ANSWER_WORDS = 3
_WORD = re.compile(r"[A-Za-z]+")
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
#: Actions whose requests name people the contacts settle.
PEOPLE_ACTIONS = frozenset({"schedule", "send_mail", "contact", "read_mail"})
INSERT_TENANT = """
INSERT INTO tenants (tenant_id, name, tier, data_schema, domain)
VALUES (%s, %s, 'pro', NULL, 'assistant')
ON CONFLICT (tenant_id) DO NOTHING
"""


async def install(pool: AsyncConnectionPool[Any], tenant_id: str = DEMO_TENANT) -> None:
    """Create an assistant tenant (idempotent). Its mail, calendar and contacts live on its servers:
    the configured ones, or its own account on the embedded local servers, created and seeded with
    demo data on first use."""
    async with pool.connection() as conn:
        await conn.execute(INSERT_TENANT, (tenant_id, f"Personal assistant ({tenant_id})"))


async def address_book(context: ToolContext) -> list[Contact] | None:
    """The tenant's contacts, or None when the address book is out of reach (names are then read from
    the request's wording alone)."""
    try:
        return await (await providers_for(context)).contacts.everyone()
    except ProviderError:
        return None


async def contact_names(goal: str, context: ToolContext) -> frozenset[str]:
    """The lower-case words the tenant's contacts are named by, when ``goal`` has a clause after "and",
    "then" or a comma (where a name and a verb are told apart: ``steps.clause_verb``); else none."""
    if not JOINS.search(goal):
        return frozenset()
    contacts = await address_book(context) or []
    return frozenset(part.lower() for contact in contacts for part in contact.name.split())


def opens_as_request(text: str, action: str) -> bool:
    """Whether a short message opens as the action's own example requests do ("Cancel my 10am
    tomorrow", "Move it to 3"): a request of its own, not the bare answer "Thursday at 2pm" to a
    question, however few its words besides the day and time."""
    first = text.split()[:1]
    return action in WRITES and bool(first) and first[0].lower() in _OPENINGS.get(action, frozenset())


#: First words that are no verb ("Could you move ...", "The review needs to ...").
_NO_VERBS = frozenset({"can", "could", "please", "i", "i'm", "the", "a", "an", "my", "this", "that", "it"})
#: Each write's first words in its example requests ("cancel", "drop", "move", "push", ...).
_OPENINGS: dict[str, frozenset[str]] = {
    action: frozenset(text.split()[0].lower() for text in texts) - _NO_VERBS
    for action, texts in EXAMPLES.items()
    if action in WRITES
}


def named_answer(text: str, contacts: list[Contact]) -> str | None:
    """Whom a short answer names ("Sara Kim", "I meant the analyst", "zed@example.com"), or None for a
    message that says more than that."""
    named = people_named(text, contacts)
    addresses = _ADDRESS.findall(text)
    if not named and not addresses:
        return None
    rest = text
    for part in [*(n.said for n in named), *addresses]:
        rest = rest.replace(part, " ")
    if len(_WORD.findall(rest)) > ANSWER_WORDS:
        return None
    who, _ = people_of(text, contacts, owners=True)
    return who


async def stated_entities(goal: str, context: ToolContext) -> dict[str, Any]:
    """What the request asks (its action, read by meaning) and the values that action's tools take,
    read in the tenant's time zone, its people read against the tenant's contacts. An answer to a
    draft or a preview states nothing of its own: the runtime applies it to what waits."""
    goal = written_out(goal)  # "lunch w/ david thurs 12:30" is read as "lunch with david thursday 12:30"
    # "..., don't book it yet": every write is a draft the user approves first; the clause is no content.
    goal = without_review_clauses(goal)
    configured = configured_accounts(context.tenant_id)
    zone = ZoneInfo(configured.timezone if configured else "UTC")
    today = context.now().astimezone(zone).date()
    read = await action_reader(context.settings).reading(goal)
    reading = read_as_negated(goal, read_as_free_time(goal, read_as_reply(goal, read)))
    action = reading.action
    if points_at_what_waits(goal):
        # "move it to 12-1 instead": a change of the draft or preview waiting, which the runtime
        # applies to it; its day and time are no request of their own.
        return {}
    # The day, time and length a message states are kept whatever its action: a message may be the
    # answer to "which day and time?" ("Thursday at 10"), and no tool but create_event takes them.
    said = {
        key: value
        for key, value in goal_entities(goal, today).items()
        if key in ("day", "start_time", "duration_minutes")
    }
    if (
        (said or resolve_shift(goal))
        and len(_WORD.findall(WHEN.sub(" ", goal))) <= ANSWER_WORDS
        and not opens_as_request(goal, action)
    ):
        # A message that says little but a day or a time ("Thursday at 2pm", "an hour later works")
        # is also where a pending move goes: the answer to "to which day or time?". Only an event
        # ``find_event`` found is moved, so elsewhere it moves nothing.
        said["move_to"] = goal
        return said  # it names no event or person of its own: nothing else is read from it
    asked_for = attendees_asked(goal)
    if asked_for is not None and not _tells_after(goal):
        # "who's on the Northwind call invite?": a question about an event's people, answered from the
        # calendar server's attendee list (``find_attendees``); whatever verb the head read ("invited"
        # reads as a change), nothing is changed or sent.
        return {"attendees_of": asked_for}
    answer = await read_answer(goal)
    if action == "feedback" or (
        answer == "accept" and len(goal.split()) <= _YES_NO_WORDS and not opens_as_request(goal, action)
    ):
        # An answer to a draft or a preview: a bare "yep" is one whatever the verb head makes of so
        # short a message.
        return said
    replaced = await replacement_move(goal, action_reader(context.settings), today)
    if replaced is not None:
        return replaced
    steps = await request_steps(goal, action_reader(context.settings), await contact_names(goal, context))
    if steps:
        return await _steps_entities(steps, said, today, context)
    contacts = await address_book(context) if action in PEOPLE_ACTIONS or len(goal.split()) <= 6 else None
    if (
        contacts is not None
        and not said
        and action not in WRITES
        and (who := named_answer(goal, contacts)) is not None
    ):
        # The answer to "whom do you mean?": the people it names, nothing else.
        return {"name": who, "people_checked": True}
    found = {**said, **goal_entities(goal, today, action, contacts if action in PEOPLE_ACTIONS else None)}
    if "start_after" in found:
        # Its start is the first free slot after an event, read from the calendar: no clock time said.
        found.pop("start_time", None)
        found.pop("day", None)
    if reading is not read and "reply_to" not in found:
        # Read as reading mail first: the mail it answers is named before the words dictated.
        found["reply_to"] = _DICTATED.split(goal, maxsplit=1)[0].strip(" ,;:-") or goal
    # A change read with little confidence is not asked about apart ("do you want me to move an event?"
    # took the user's "yep" and then showed the draft for a second one): every write of the pack is a
    # draft the user approves (medium risk) or an accepted preview (high), which shows what would be
    # done, so the draft is where a wrong reading is caught, and nothing is done before it is approved.
    return found


_SENTENCES = re.compile(r"(?<=[.!?;])\s+")


def _tells_after(goal: str) -> bool:
    """Whether a sentence after the first tells the assistant to do something ("who is on the retro?
    email them the photos"): the question is then part of a request, not all of it."""
    return any(imperative_verb(sentence) is not None for sentence in _SENTENCES.split(goal.strip())[1:])


#: Words dictated for someone: "...mail: understood, ...", "... - we accept", "saying it's paid".
_DICTATED = re.compile(r":\s*\S|\s[-–—]\s+\S|\b(?:saying|to\s+say|tell(?:ing)?\s+(?:him|her|them))\b", re.I)


def read_as_reply(goal: str, reading: Reading) -> Reading:
    """A request read as reading mail that dictates words for someone, sending its next reading, is a
    reply to send ("Answer Maria's budget mail: understood, I'll brief my leads" was summarised and
    answered ``success`` with nothing sent): reading has no place for a message, a send does. It goes
    the way of every send: a draft the user approves, done only once the mail server took it."""
    if reading.action != "read_mail" or reading.runner_up != "send_mail" or not _DICTATED.search(goal):
        return reading
    return replace(reading, action="send_mail", runner_up="read_mail")


#: A message that asks rather than tells: a question mark, or a question word opening a sentence.
_ASKS = re.compile(r"\?|(?:^|[.!;]\s*)(?:what|which|when|where|how|is|are|do|does|can|could)\b", re.I)


def read_as_free_time(goal: str, reading: Reading) -> Reading:
    """A request read as booking without being sure, free time its next reading, that names no clock
    time and asks ("I need a 2 hour block for a workshop sometime Tuesday to Thursday. What are my
    options?") is a question about free time: it is answered, and nothing is booked or drafted. A
    booking needs a start, which only the user can give."""
    if reading.action != "schedule" or reading.runner_up != "free_slots" or reading.sure:
        return reading
    if resolve_time(goal) is not None or not _ASKS.search(goal):
        return reading
    return replace(reading, action="free_slots", runner_up="schedule")


#: The verbs of each change, as a request says them.
_CHANGE_VERBS = {
    "cancel_event": r"cancel|call\s+off|drop|delete|remove|scrap",
    "reschedule": r"move|reschedule|shift|push|pull|change|bring",
    "schedule": r"book|schedule|set\s+up|create|add|put",
    "send_mail": r"send|e-?mail|mail|write|reply|message|tell",
}
#: Where a change is only looked at, by its kind: an event's in the calendar, a mail's in the mailbox.
_LOOK_INSTEAD: dict[str, Action] = {
    "cancel_event": "agenda",
    "reschedule": "agenda",
    "schedule": "agenda",
    "send_mail": "read_mail",
}


def read_as_negated(goal: str, reading: Reading) -> Reading:
    """A question read as a change whose verb it negates ("is the retro still on for friday? dont
    cancel it, just asking") asks about what it names: the calendar is looked at (the mailbox for a
    mail), and nothing is changed or drafted. Told, not asked ("... Don't send yet."), it stays the
    change, held back as a draft."""
    verbs = _CHANGE_VERBS.get(reading.action)
    if verbs is None:
        return reading
    negated = re.compile(
        rf"\b(?:don'?t|dont|do\s+not|never|no\s+need\s+to|not\s+to)\s+(?:\w+\s+)?(?:{verbs})\b", re.I
    )
    # Asked, not told: "Put together an email to Kate ... Don't send yet." is a draft held back.
    if not negated.search(goal) or not _ASKS.search(goal):
        return reading
    return replace(reading, action=_LOOK_INSTEAD[reading.action], runner_up=reading.action)


#: "by email", "via mail" before what a message says: how it is sent, not what it says.
_BY_MAIL = re.compile(r"^(?:(?:by|via|over)\s+(?:e-?mail|mail)\s*,?\s*)(?:that\s+)?", re.I)
#: The most words a bare yes has ("yep", "yes please do").
_YES_NO_WORDS = 3
#: A message that is only its own telling: "to tell her", "and let them know", "about it", "know" (what
#: is left of "let the team know" once its people are read).
_ONLY_TELLING = re.compile(
    r"^(?:(?:and|to|so\s+as\s+to)\s+)?(?:(?:tell|inform|notify|update|warn|let)\s+(?:him|her|them|everyone|"
    r"the\s+team)(?:\s+know)?|know)?(?:\s*(?:about\s+(?:it|that|this|the\s+change)|of\s+(?:it|that|this)))?$",
    re.I,
)
#: "it's off", "it is moved": the thing a message of a later step refers back to.
_IT = re.compile(r"\bit(?:'s|\s+is)\b", re.I)
#: A person said as a pronoun: the mail goes to someone the request named before.
_PRONOUN = re.compile(r"\b(?:him|her|them)\b", re.I)
#: A mail step that points back at the change before it: to its people ("email him", "drop her a
#: line"), about it ("the details", "the new time", "so she knows", "email the team why").
_REFERS_BACK = re.compile(
    r"\b(?:him|her|them|it|why|knows?|the\s+(?:details|time|new\s+time|slot|agenda|invite|invitation|change|"
    r"meeting|call|event))\b",
    re.I,
)


#: Words a booking says besides its day and time when it only puts back what a cancel took away:
#: "book thursday at 4pm instead", "set up one on friday at 11 instead", "put it in for monday then".
_ONLY_AGAIN = re.compile(
    r"\b(?:book|schedule|set|up|put|make|do|have|add|create|arrange|plan|pencil|it|in|one|another|a|new|"
    r"instead|then|rather|please|pls|for|on|at|to|the|same|time|slot)\b",
    re.I,
)


async def replacement_move(goal: str, reader: ActionReader, today: Any) -> dict[str, Any] | None:
    """A cancel followed by a booking that says nothing but a new day or time ("cancel it and book
    Thursday at 4pm instead", "scrap Thursday's 1:1 with Maria and set up one on Friday at 11
    instead") is the event moved: the same event, its attendees kept, at the new time, done only as the
    calendar then shows it. A booking that names people or a topic of its own is an event of its own,
    and the verb head's reading of so bare a booking ("book instead" reads as no tool's) is not asked."""
    for join in reversed(list(JOINS.finditer(goal))):
        booking = step_text(goal[join.end() :])
        if not _BOOKS.match(booking):
            continue
        # Its words besides the day and time ("on 2026-12-11", "december 11th at 10").
        said = MONTH_NAME.sub(" ", re.sub(r"[^A-Za-z\s]|\b(?:st|nd|rd|th)\b", " ", WHEN.sub(" ", booking)))
        if _ONLY_AGAIN.sub(" ", said).strip() or (
            resolve_time(booking) is None and resolve_day(booking, today) is None
        ):
            return None
        cancel = step_text(goal[: join.start()])
        last = _SENTENCE_END.split(cancel)[-1]
        if (await reader.reading(last)).action != "cancel_event" and not _CANCELS.match(last):
            return None
        found = goal_entities(cancel, today, "cancel_event")
        return {
            "event_words": found["event_words"],
            **({"on_day": found["on_day"]} if found.get("on_day") else {}),
            "move_to": booking,
            "action": goal_entities(booking, today, "reschedule")["action"],
        }
    return None


#: A booking's opening verb ("book", "set up", "put it in", "pencil in").
_BOOKS = re.compile(
    r"^(?:please\s+)?(?:re-?book|book|schedule|set\s+(?:it\s+|one\s+)?up|put|make|arrange|pencil|add|create|"
    r"plan|do|have)\b",
    re.I,
)
#: A cancel's opening verb, as the cancel examples open ("cancel", "scrap", "call off", "drop").
_CANCELS = re.compile(
    r"^(?:please\s+)?(?:cancel|scrap|call\s+off|drop|delete|remove|kill|ditch|axe|bin)\b", re.I
)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


#: Words pointing back at the event of the step before ("everyone who's in it").
_BACK = re.compile(r"(?:it|that|this|that\s+one|the\s+(?:meeting|event|call|invite|invitation))", re.I)


def _people_of_change(change: dict[str, Any], said: str) -> dict[str, Any]:
    """Whom "everyone in it" means after a change (``change``: its step's values): the attendees of the
    event it moves or cancels, as the calendar lists them (``find_attendees``), or the people a booking
    invites. No change before it: the words as said, which name no event, so nothing is sent."""
    if change.get("event_words"):
        return {"attendees_of": str(change["event_words"])}
    if change.get("name"):
        return {"name": change["name"]}
    return {"attendees_of": said}


async def _steps_entities(
    steps: list[Step], said: dict[str, Any], today: Any, context: ToolContext
) -> dict[str, Any]:
    """The values of every step of a request of several (``steps``), and one ``actions`` record per
    step that changes something (or has no tool): each is done only when its tool confirms it. A
    message that refers back ("let Tom know it's off") names the event of the step before it."""
    wanted = any(step.reading.action in PEOPLE_ACTIONS for step in steps)
    contacts = await address_book(context) if wanted else None
    found: dict[str, Any] = dict(said)
    actions: list[dict[str, Any]] = []
    event: str | None = None
    change: str | None = None
    changed: int | None = None  # the index in ``actions`` of the change step a later mail may tell
    changed_words = ""  # the words of that change step
    change_values: dict[str, Any] = {}  # the values of that change step
    for step in steps:
        action = step.reading.action
        part = goal_entities(step.text, today, action, contacts if action in PEOPLE_ACTIONS else None)
        record = part.pop("action", None)
        if step.unread:
            # No tool is known to do it: it is said not done in its own words, and none of its words
            # become another step's values.
            why = "I could not tell which action that is, so nothing was done for it"
            actions.append({**(record or {}), "done": False, "said": step.text, "why": why})
            continue
        if record is not None:
            if action == "unsupported":
                record["said"] = step.text  # which clause no tool does, in the user's words
            actions.append(record)
        if "start_after" in part:
            # "look at friday morning and book an hour ... after standup": the day another step says.
            if "on_day" not in part and said.get("day"):
                part["on_day"] = said["day"]
            found.pop("start_time", None)
            found.pop("day", None)
        if _BACK.fullmatch(str(part.get("attendees_of", ""))):
            # "... and ping everyone who's in it": the people of the event the change before names.
            part.update(_people_of_change(change_values, part.pop("attendees_of")))
        if action == "send_mail" and not part.get("name") and contacts and changed_words:
            # "... and drop her a line": whom it goes to is whom the change's event names ("my 1:1
            # with Maria"); no one named there, no one is guessed.
            whom, _ = people_of(changed_words, contacts, owners=True)
            if whom and _PRONOUN.search(step.text):
                part["name"] = whom
        message = part.get("message")
        restated = False  # its words are (or now hold) the change before it
        if isinstance(message, str):
            message = _BY_MAIL.sub("", message).strip(" ,;:.?!")
            # "email Maria to tell her", "... to let them know about it": the telling, no words of its own.
            message = _ONLY_TELLING.sub("", message).strip(" ,;:.?!")
            told = message
            if event is not None:
                message = _IT.sub(f"{event} is", message, count=1)
            # "... and tell Lena by email": a mail that says nothing of its own tells the change before it.
            message = message or change or ""
            restated = message != told
            part["message"] = message[:1].upper() + message[1:]
        elif action == "send_mail" and change:
            # "... and drop her a line so she knows": no words of its own, so the change is what it says.
            part["message"], restated = change[:1].upper() + change[1:], True
        if (
            action == "send_mail"
            and record is not None
            and changed is not None
            and (restated or _REFERS_BACK.search(step.text))
        ):
            # Its words state that change as made, or point back at it: it is true only once that
            # change is done, and says what the server then holds (``runtime.middleware.claims``).
            record["tells"] = changed
            if part.get("name"):
                record["to"] = part["name"]
            elif part.get("attendees_of"):
                record["to"] = f"the attendees of {part['attendees_of']!r}"
        if action in ("schedule", "cancel_event", "reschedule"):
            changed_words, change_values = step.text, part
        if action == "schedule" and part.get("summary"):
            changed = len(actions) - 1 if record is not None else None
            event, change = str(part["summary"]), f"{part['summary']} is booked"
        if action in ("cancel_event", "reschedule") and part.get("event_words"):
            changed = len(actions) - 1 if record is not None else None
            # What the step names, without its verb: "Wednesday's design review".
            event = " ".join(str(part["event_words"]).split()[1:]) or None
            if event is not None:
                change = (
                    f"{event} is cancelled"
                    if action == "cancel_event"
                    else f"{event} moves to {part['move_to']}"
                    if part.get("move_to")
                    else None
                )
        found.update(part)
    found["actions"] = actions
    return found


def missing_information(known: dict[str, Any]) -> MissingInformation | None:
    """A meeting cannot be scheduled without its day and start time (a period like "next month" is
    not a day), nor moved without where to: ask for them rather than guess."""
    unknown = known.get("unknown_people")
    if unknown and not known.get("people_checked"):
        names = " or ".join(repr(name) for name in unknown)
        also = f" (I found {known['name']})" if known.get("name") else ""
        return MissingInformation(
            fields=["name", "people_checked"],
            question=f"No one named {names} is in your contacts{also}. Whom do you mean? Give a name from "
            "your contacts or an email address (and everyone else it should include).",
        )
    if known.get("event_words") and not known.get("cancel_request") and not known.get("move_to"):
        return MissingInformation(
            fields=["move_to"], question=f"To which day or time should I move it ({known['event_words']!r})?"
        )
    if not known.get("summary") or known.get("start_after"):
        # "after standup": the day and start are read from the calendar (``first_free_after``).
        return None
    fields = [name for name in ("day", "start_time") if not known.get(name)]
    if not fields:
        return None
    asked = {("day", "start_time"): "Which day and time", ("day",): "Which day", ("start_time",): "What time"}
    period = known.get("period")
    within = f" ({period})" if period and not known.get("day") else ""
    question = f"{asked[tuple(fields)]} should {known['summary']!r} be{within}?"
    several = known.get("ambiguous_people")
    if isinstance(several, dict) and several and not known.get("people_checked"):
        # Whom a name means is asked with the time, not after it ("grab 20 minutes with david tomorrow
        # afternoon": two Davids and no time).
        whom = " ".join(
            f"Which {said[:1].upper() + said[1:]} do you mean: {' or '.join(people)}?"
            for said, people in several.items()
        )
        return MissingInformation(fields=[*fields, "name", "people_checked"], question=f"{whom} {question}")
    return MissingInformation(fields=fields, question=question)


def describe_answer(solution: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if solution.get("answer"):
        lines.append(str(solution["answer"]))
    if solution.get("free_slots") is not None:
        days: dict[str, list[str]] = {}
        for slot in solution["free_slots"]:
            day = slot.get("day") or solution.get("day") or "that day"
            days.setdefault(day, []).append(f"{slot['start']}-{slot['end']}")
        if not days:
            lines.append("No free slot of that length in working hours.")
        for day, slots in days.items():
            lines.append(f"Free on {day}: {', '.join(slots)}.")
    for pair in dict.fromkeys(tuple(pair) for pair in solution.get("conflicts") or []):
        lines.append(f"Conflict: {' overlaps '.join(pair)}.")
    if solution.get("events") is not None and solution.get("free_slots") is None:
        lines.append(f"{len(solution['events'])} event(s):")
        lines.extend(f"- {e['day']} {e['start']}-{e['end']} {e['summary']}" for e in solution["events"][:20])
    if solution.get("chosen") and solution.get("contacts"):
        lines.append(f"Contact: {solution['chosen']}.")
    elif solution.get("contacts") and not any(
        solution.get(key) for key in ("action", "proposal", "messages")
    ):
        for contact in solution["contacts"][:5]:
            phones = contact.get("phones") or ["no phone number on file"]
            details = ", ".join([*contact.get("emails", []), *phones])
            title = f" ({contact['title']})" if contact.get("title") else ""
            lines.append(f"Contact: {contact['name']}{title}: {details}.")
    if solution.get("attendees") and not solution.get("action"):
        # Who an event invites, as the calendar server lists them (a mail to them says it in its draft).
        invited = "; ".join(solution.get("invited_by") or []) or "the event"
        lines.append(f"Invited to {invited}: {', '.join(solution['attendees'])}.")
    if solution.get("mail_summary"):
        lines.append(str(solution["mail_summary"]))
    lines.extend(_action_lines(solution))
    proposal = solution.get("proposal")
    if isinstance(proposal, dict) and proposal.get("status") == "cancelled":
        # Not "Cancelled: ...": that opening says an event was cancelled on the server.
        lines.append(f"Not run: the preview of {proposal.get('tool')} was cancelled; nothing was changed.")
    return lines


def _action_lines(solution: dict[str, Any]) -> list[str]:
    """What was done, with the server's identifiers, or what was not done and why: for a request of
    several changes, each of them (``actions``)."""
    steps = solution.get("actions")
    if isinstance(steps, list) and steps:
        return [
            line for step in steps for line in _action_lines({**solution, "actions": None, "action": step})
        ]
    action = solution.get("action")
    if not isinstance(action, dict):
        return []
    if not action.get("done"):
        if action.get("said"):
            return [f"I did not do: {str(action['said'])!r} - {action.get('why')}."]
        return [f"Not done ({action.get('requested')}): {action.get('why')}."]
    lines = _done_lines(solution, action)
    asked = action.get("not_applied")
    if isinstance(asked, list) and asked:
        # Done, but not as last asked: the changes asked of its draft that nothing applied.
        lines.append(
            "Not done: the change(s) you asked of that draft were not applied ("
            + "; ".join(repr(str(text)) for text in asked)
            + "); it went as shown."
        )
    if action.get("states_undone"):
        lines.append(
            f"Not true yet: that message states a change as made that was not done ({action['states_undone']})."
        )
    return lines


def _done_lines(solution: dict[str, Any], action: dict[str, Any]) -> list[str]:
    """A confirmed change, with the server's identifiers."""
    event = action.get("event") or {}
    who = ", ".join(event.get("attendees") or []) or "no attendees"
    when = f"{event.get('day')} {event.get('start')}-{event.get('end')}"
    requested = action.get("requested")
    if requested == "send an email":
        sent = solution.get("sent") or {}
        kept = action.get("sent_folder")
        where = (
            f", kept in Sent as uid {kept['uid']}" if isinstance(kept, dict) else f"; {kept}" if kept else ""
        )
        thread = f", in reply to {action['in_reply_to']}" if action.get("in_reply_to") else ""
        return [
            f"Sent {sent.get('subject')!r} to {', '.join(action.get('accepted') or [])} "
            f"(message id {action.get('message_id')}{thread}, accepted by the mail server{where})."
        ]
    if requested == "move an event":
        before = action.get("from") or {}
        return [
            f"Moved: {event.get('summary')} from {before.get('day')} {before.get('start')} to {when} "
            f"({who}; uid {action.get('uid')}, read back from the calendar)."
        ]
    if requested == "cancel an event":
        return [
            f"Cancelled: {event.get('summary')} on {when} (uid {action.get('uid')}, gone from the calendar)."
        ]
    return [
        f"Created: {event.get('summary')} on {when} ({who}; uid {action.get('uid')}, read back from the calendar)."
    ]


ROUTING_EXAMPLES = tuple(
    routing_examples(
        "EXECUTE",
        """
        What times am I free next Tuesday for 60 minutes
        When am I free tomorrow for half an hour
        Find me a free hour on Friday
        Schedule a meeting with David tomorrow at 2pm
        Book a call with Maria on Thursday at 10am
        Set up a 30 minute sync with the team next Monday at 9am
        Schedule board meeting next month
        Check my calendar first
        What is on my calendar next week
        Do I have conflicts on Tuesday
        Email the whole team about the budget freeze
        Send an email to David about the offsite
        Find emails from John about the project and summarise them
        Did Maria email me about the budget
        Search my inbox for messages about the contract
        What is David's email address
        Look up the contact details of the CFO
        Move my 1:1 with Maria to Friday at 3pm
        Reschedule the design review to Thursday
        Cancel the sprint retro on Friday
        Summarise my unread mail
        Send a note to the team saying the offsite moves to Friday
        Invite the whole team to a farewell party on Friday at 5pm
        Please execute the proposed plan
        Change Friday to Monday in the proposal
        Cancel the proposal
        """,
        domain="assistant",
    )
)

ASSISTANT = DomainPack(
    name="assistant",
    master=MASTER,
    sub_agents={},
    build_tools=build_tools,
    install=install,
    demo_tenants=(DEMO_TENANT,),
    routing_examples=ROUTING_EXAMPLES,
    goal_entities=stated_entities,
    describe_answer=describe_answer,
    missing_information=missing_information,
    sure_request=sure_request,
)

__all__ = ["ASSISTANT", "DEMO_TENANT"]
