"""The assistant's plain tools, bound to one tenant's accounts.

Each tool declares its risk in its metadata (``{"risk": "low" | "medium" | "high"}``): reading is low,
creating an event is medium, sending email is high. What a risk means (run, show a draft, or preview and
stop) is the runtime's business, not the tool's.

A tenant's accounts come from the file named by ``MASTER_AGENT_ASSISTANT_ACCOUNTS`` (JSON: tenant id ->
address, time zone and the four endpoints, each with ``url``, ``username`` and ``password_env``, the name
of the environment variable holding the secret); a tenant not in it uses its own account on the embedded
local servers of the data directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, SecretStr, ValidationError

from master_agent.capabilities.spec import Risk
from master_agent.capabilities.tools.context import ToolContext
from master_agent.domains.assistant.demo_data import start_demo_servers
from master_agent.domains.assistant.local_servers import LocalEndpoints
from master_agent.domains.assistant.providers import (
    CalDavCalendar,
    CardDavContacts,
    Contact,
    Endpoint,
    ImapMailbox,
    MailMessage,
    NewEvent,
    OutgoingMail,
    ProviderError,
    SmtpSender,
)
from master_agent.domains.assistant.scheduling import (
    PERIOD_PHRASE,
    conflicts,
    free_slots,
    resolve_day,
    resolve_minutes,
    resolve_period,
    resolve_time,
)
from master_agent.errors import InputError, ToolInputError

#: More recipients than this make an email a mass email (high risk even where sending is allowed).
MASS_EMAIL_RECIPIENTS = 10


class ConfiguredEndpoint(BaseModel):
    url: str
    username: str
    password_env: str = Field(description="The environment variable that holds the password.")
    timeout_s: float = Field(default=10.0, gt=0)

    def resolve(self, field: str) -> Endpoint:
        secret = os.environ.get(self.password_env)
        if secret is None:
            raise InputError(field, f"{self.password_env} is not set (the password of {self.url})")
        return Endpoint(
            url=self.url, username=self.username, password=SecretStr(secret), timeout_s=self.timeout_s
        )


class TenantAccounts(BaseModel):
    address: str
    timezone: str = "UTC"
    caldav: ConfiguredEndpoint
    carddav: ConfiguredEndpoint
    imap: ConfiguredEndpoint
    smtp: ConfiguredEndpoint


class AccountsFile(BaseModel):
    tenants: dict[str, TenantAccounts]


def accounts_on(
    endpoints: LocalEndpoints,
    *,
    username: str,
    password_env: str,
    address: str,
    timezone: str = "UTC",
    timeout_s: float = 10.0,
) -> TenantAccounts:
    """Accounts pointing at servers as the local ones are (a stand-in for a user's own servers)."""

    def endpoint(url: str) -> ConfiguredEndpoint:
        return ConfiguredEndpoint(url=url, username=username, password_env=password_env, timeout_s=timeout_s)

    return TenantAccounts(
        address=address,
        timezone=timezone,
        caldav=endpoint(endpoints.caldav.url),
        carddav=endpoint(endpoints.carddav.url),
        imap=endpoint(endpoints.imap.url),
        smtp=endpoint(endpoints.smtp.url),
    )


ACCOUNTS_ENV = "MASTER_AGENT_ASSISTANT_ACCOUNTS"


@dataclass(frozen=True)
class AssistantProviders:
    address: str
    zone: ZoneInfo
    calendar: CalDavCalendar
    contacts: CardDavContacts
    mailbox: ImapMailbox
    sender: SmtpSender


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise InputError("timezone", f"{name!r} is not an IANA time zone") from error


def configured_accounts(tenant_id: str, path: Path | None = None) -> TenantAccounts | None:
    """The tenant's accounts from the accounts file, or None (then it uses the local servers)."""
    source = path or (Path(os.environ[ACCOUNTS_ENV]) if os.environ.get(ACCOUNTS_ENV) else None)
    if source is None:
        return None
    try:
        accounts = AccountsFile.model_validate_json(source.read_text())
    except (OSError, ValidationError) as error:
        raise InputError(ACCOUNTS_ENV, f"{source} is not a readable accounts file: {error}") from error
    return accounts.tenants.get(tenant_id)


async def providers_for(context: ToolContext) -> AssistantProviders:
    configured = configured_accounts(context.tenant_id)
    if configured is not None:
        return AssistantProviders(
            address=configured.address,
            zone=_zone(configured.timezone),
            calendar=CalDavCalendar(configured.caldav.resolve("caldav")),
            contacts=CardDavContacts(configured.carddav.resolve("carddav")),
            mailbox=ImapMailbox(configured.imap.resolve("imap")),
            sender=SmtpSender(configured.smtp.resolve("smtp")),
        )
    local = await start_demo_servers(context.settings.data_dir, context.tenant_id, context.now())
    return AssistantProviders(
        address=local.address,
        zone=ZoneInfo("UTC"),
        calendar=CalDavCalendar(local.caldav),
        contacts=CardDavContacts(local.carddav),
        mailbox=ImapMailbox(local.imap),
        sender=SmtpSender(local.smtp),
    )


class FreeSlotsArgs(BaseModel):
    day: str = Field(description="The day, as the user said it: 'next Tuesday', 'tomorrow', '2026-12-01'.")
    duration_minutes: int = Field(default=60, ge=5, le=600)


class PeriodArgs(BaseModel):
    period: str = Field(description="A day or a period: 'tomorrow', 'next week', 'next month'.")


class ContactArgs(BaseModel):
    name: str = Field(min_length=1, description="A name, part of a name, an address, or a group ('team').")


class MailSearchArgs(BaseModel):
    sender: str = Field(description="Part of the sender's name or address ('' for any sender).")
    about: str | None = Field(default=None, description="Words the message contains.")
    days: int | None = Field(default=None, ge=1, le=3650, description="Only the last this many days.")


class DraftArgs(BaseModel):
    about: str = Field(min_length=1, description="What the email is about, e.g. 'the budget freeze'.")
    addresses: list[str] = Field(min_length=1, description="The recipients' email addresses.")


class EventArgs(BaseModel):
    summary: str = Field(min_length=1)
    day: str = Field(description="The day, as the user said it.")
    start_time: str = Field(description="'2pm', '14:00'.")
    duration_minutes: int = Field(default=60, ge=5, le=600)
    addresses: list[str] = Field(description="The attendees' email addresses ([] for none).")


class SendArgs(BaseModel):
    addresses: list[str] = Field(min_length=1, description="The recipients' email addresses.")
    subject: str = Field(min_length=1)
    body: str = Field(min_length=1)


def _mass_when_many(args: dict[str, Any]) -> Risk | None:
    """More than ten people affected (a mass email, a large invitation) is high risk."""
    return "high" if len(args.get("addresses") or []) > MASS_EMAIL_RECIPIENTS else None


def build_tools(context: ToolContext) -> dict[str, BaseTool]:
    providers: AssistantProviders | None = None

    async def accounts() -> AssistantProviders:
        nonlocal providers
        if providers is None:
            providers = await providers_for(context)
        return providers

    def today(zone: ZoneInfo) -> date:
        return context.now().astimezone(zone).date()

    def day_of(text: str, zone: ZoneInfo) -> date:
        day = resolve_day(text, today(zone))
        if day is None:
            raise ToolInputError(f"day: {text!r} names no day (say 'tomorrow', 'next Tuesday' or a date)")
        return day

    async def find_free_slots(day: str, duration_minutes: int = 60) -> dict[str, Any]:
        mine = await accounts()
        when = day_of(day, mine.zone)
        start = datetime.combine(when, datetime.min.time(), tzinfo=mine.zone)
        events = await mine.calendar.events(start, start + timedelta(days=1))
        slots = free_slots([(e.start, e.end) for e in events], when, duration_minutes, mine.zone)
        return {
            "day": when.isoformat(),
            "duration_minutes": duration_minutes,
            "free_slots": [
                {"start": s.start.strftime("%H:%M"), "end": s.end.strftime("%H:%M"), "minutes": s.minutes}
                for s in slots
            ],
            "busy": [_event_view(e, mine.zone) for e in events],
            "conflicts": [list(pair) for pair in conflicts((e.summary, e.start, e.end) for e in events)],
            "timezone": str(mine.zone),
            "confidence": 1.0,
        }

    async def calendar_events(period: str) -> dict[str, Any]:
        mine = await accounts()
        span = resolve_period(period, today(mine.zone))
        if span is None:
            raise ToolInputError(f"period: {period!r} names no day or period (say 'next week', 'tomorrow')")
        start = datetime.combine(span.first, datetime.min.time(), tzinfo=mine.zone)
        end = datetime.combine(span.last + timedelta(days=1), datetime.min.time(), tzinfo=mine.zone)
        events = await mine.calendar.events(start, end)
        return {
            "period": {"first": span.first.isoformat(), "last": span.last.isoformat()},
            "events": [_event_view(e, mine.zone) for e in events],
            "conflicts": [list(pair) for pair in conflicts((e.summary, e.start, e.end) for e in events)],
            "confidence": 1.0,
        }

    async def find_contacts(name: str) -> dict[str, Any]:
        found = await (await accounts()).contacts.search(name)
        if not found:
            raise ProviderError("not_found", "carddav", "search", f"no contact matches {name!r}")
        wanted = name.strip().lower()
        group = [c for c in found if any(wanted in category.lower() for category in c.categories)]
        return people_found(name, found, group)

    async def find_correspondents(name: str) -> dict[str, Any]:
        messages = await (await accounts()).mailbox.search(sender=name, limit=50)
        people: dict[str, Contact] = {}
        for message in messages:
            address = message.sender.lower()
            people.setdefault(
                address, Contact(uid=address, name=message.sender_name or address, emails=[address])
            )
        if not people:
            raise ProviderError("not_found", "imap", "search", f"no mail from anyone matching {name!r}")
        return {**people_found(name, list(people.values()), []), "source": "mailbox"}

    async def search_email(sender: str, about: str | None = None, days: int | None = None) -> dict[str, Any]:
        mine = await accounts()
        since = today(mine.zone) - timedelta(days=days) if days else None
        messages = await mine.mailbox.search(sender=sender or None, text=about, since=since)
        return {
            "messages": [
                {
                    "from": m.sender_name or m.sender,
                    "address": m.sender,
                    "subject": m.subject,
                    "date": m.date.isoformat() if m.date else None,
                    "body": m.body[:2000],
                }
                for m in messages
            ],
            "matches": len(messages),
            "mail_summary": summarise_mail(messages, sender, about),
            # Nothing found may be the wrong name or topic as much as no such email.
            "confidence": 1.0 if messages else 0.4,
        }

    async def draft_email(about: str, addresses: list[str]) -> dict[str, Any]:
        mine = await accounts()
        topic = about.strip().rstrip(".")
        subject = topic[:1].upper() + topic[1:]
        greeting = "Hi all," if len(addresses) > 1 else "Hi,"
        body = (
            f"{greeting}\n\nI am writing about {topic}. Please read this and let me know if you have "
            f"questions.\n\nBest regards,\n{mine.address}"
        )
        return {"subject": subject, "body": body, "addresses": addresses, "confidence": 0.9}

    async def new_event(
        summary: str, day: str, start_time: str, duration_minutes: int, addresses: list[str]
    ) -> tuple[AssistantProviders, NewEvent]:
        mine = await accounts()
        when = day_of(day, mine.zone)
        at = resolve_time(start_time)
        if at is None:
            raise ToolInputError(f"start_time: {start_time!r} is not a time (say '2pm' or '14:00')")
        start = datetime.combine(when, at, tzinfo=mine.zone)
        event = NewEvent(
            summary=summary,
            start=start,
            end=start + timedelta(minutes=duration_minutes),
            attendees=list(addresses),
            organizer=mine.address,
        )
        return mine, event

    async def create_event(
        summary: str, day: str, start_time: str, addresses: list[str], duration_minutes: int = 60
    ) -> dict[str, Any]:
        mine, event = await new_event(summary, day, start_time, duration_minutes, addresses)
        created = await mine.calendar.create_event(event)
        return {"event": _event_view(created, mine.zone), "created": True, "confidence": 1.0}

    async def event_preview(args: dict[str, Any]) -> dict[str, Any]:
        checked = EventArgs.model_validate(args)
        mine, event = await new_event(
            checked.summary, checked.day, checked.start_time, checked.duration_minutes, checked.addresses
        )
        # The draft says what it would overlap, so the user approves (or changes) it knowingly.
        overlapping = await mine.calendar.events(event.start, event.end)
        return {
            "summary": event.summary,
            "day": event.start.date().isoformat(),
            "start": event.start.strftime("%H:%M"),
            "end": event.end.strftime("%H:%M"),
            "timezone": str(mine.zone),
            "organizer": event.organizer,
            "attendees": event.attendees,
            "overlaps": [
                f"{view['summary']} {view['start']}-{view['end']}"
                for view in (_event_view(e, mine.zone) for e in overlapping)
            ],
        }

    async def send_email(addresses: list[str], subject: str, body: str) -> dict[str, Any]:
        mine = await accounts()
        sent = await mine.sender.send(
            OutgoingMail(sender=mine.address, to=addresses, subject=subject, body=body)
        )
        return {
            "sent": {**sent.model_dump(), "subject": subject},
            "recipients": len(sent.recipients),
            "confidence": 1.0,
        }

    async def mail_preview(args: dict[str, Any]) -> dict[str, Any]:
        checked = SendArgs.model_validate(args)
        mine = await accounts()
        return {
            "from": mine.address,
            "to": checked.addresses,
            "recipients": len(checked.addresses),
            "subject": checked.subject,
            "body": checked.body,
        }

    def tool(
        func: Callable[..., Awaitable[dict[str, Any]]],
        args: type[BaseModel],
        risk: Risk,
        description: str,
        **metadata: Any,
    ) -> BaseTool:
        return StructuredTool.from_function(
            coroutine=func,
            name=func.__name__,
            description=description,
            args_schema=args,
            metadata={"risk": risk, **metadata},
        )

    tools = [
        tool(
            find_free_slots,
            FreeSlotsArgs,
            "low",
            "Free slots of at least the given length on one day, in working hours.",
        ),
        tool(
            calendar_events,
            PeriodArgs,
            "low",
            "The user's calendar events on a day or in a period, with conflicts.",
        ),
        tool(
            find_contacts,
            ContactArgs,
            "low",
            "Contacts matching a name, address or group ('team'), with their addresses; when several "
            "people match, the user is asked which.",
        ),
        tool(
            find_correspondents,
            ContactArgs,
            "low",
            "Instead of find_contacts when the address book is out of reach: the people who wrote to "
            "the user whose name or address matches, with their addresses, from the mailbox.",
            instead_of="find_contacts",
        ),
        tool(
            search_email,
            MailSearchArgs,
            "low",
            "Emails in the inbox by sender, words and age, newest first, with a summary.",
        ),
        tool(
            draft_email,
            DraftArgs,
            "low",
            "A plain first draft (subject and body) of an email about a topic, to send or edit.",
        ),
        tool(
            create_event,
            EventArgs,
            "medium",
            "Put an event in the user's calendar and invite its attendees (shown as a draft to approve; "
            "more than ten attendees needs an accepted preview).",
            risk_of=_mass_when_many,
            preview_of=event_preview,
        ),
        tool(
            send_email,
            SendArgs,
            "medium",
            "Send an email from the user's address (shown as a draft to approve; more than ten "
            "recipients is a mass email and needs an accepted preview).",
            risk_of=_mass_when_many,
            preview_of=mail_preview,
        ),
    ]
    return {t.name: t for t in tools}


def people_found(name: str, found: list[Contact], group: list[Contact]) -> dict[str, Any]:
    """People matching ``name`` with their addresses: the group's, the one person's, or, when several
    people answer to the name, a choice the runtime asks the user (multiple choice)."""
    result: dict[str, Any] = {
        "query": name,
        "contacts": [c.model_dump() for c in found],
        "matches": len(found),
        "confidence": 1.0,
    }
    people = group or found
    if group or len(found) == 1:
        result["addresses"] = [c.emails[0] for c in people if c.emails]
        return result
    result["confidence"] = 0.5
    result["choices"] = {
        "field": "addresses",
        "question": f"Which {name} do you mean?",
        "options": [
            {
                "label": f"{c.name} <{c.emails[0]}>" + (f", {c.title}" if c.title else ""),
                "value": c.emails[:1],
            }
            for c in found
            if c.emails
        ][:4],
    }
    return result


def _event_view(event: Any, zone: ZoneInfo) -> dict[str, Any]:
    return {
        "summary": event.summary,
        "day": event.start.astimezone(zone).date().isoformat(),
        "start": event.start.astimezone(zone).strftime("%H:%M"),
        "end": event.end.astimezone(zone).strftime("%H:%M"),
        "attendees": event.attendees,
        "uid": event.uid,
    }


def summarise_mail(messages: list[MailMessage], sender: str, about: str | None) -> str:
    """An extractive summary: how many messages, from whom, and each one's subject and first sentence,
    oldest first (the order a thread is read in)."""
    if not messages:
        who = f" from {sender}" if sender else ""
        topic = f" about {about}" if about else ""
        return f"No emails{who}{topic}."
    people = sorted({m.sender_name or m.sender for m in messages})
    lines = [
        f"{len(messages)} email(s) from {', '.join(people)}" + (f" about {about}" if about else "") + ":"
    ]
    for m in sorted(messages, key=lambda m: m.date or datetime.min.replace(tzinfo=ZoneInfo("UTC"))):
        first = re.split(r"(?<=[.!?])\s", " ".join(m.body.split()), maxsplit=1)[0][:200]
        when = m.date.date().isoformat() if m.date else "undated"
        lines.append(f"- {when} {m.subject}: {first}")
    return "\n".join(lines)


_SENDER = re.compile(r"\b(?i:from)\s+([A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*)?|[\w.+-]+@[\w.-]+)")
_ABOUT = re.compile(
    r"\babout\s+(?:the\s+|my\s+|our\s+)?(.+?)(?=\s+(?:and|then|to|from|with|on|at|for|next|this|tomorrow|today)\b|[?.!,]|$)",
    re.I,
)
_PERSON = re.compile(
    r"\b(?i:with|email|e-mail|mail|message|invite|to)\s+(?i:the\s+)?((?i:whole\s+team|team|everyone)|[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*)?|[\w.+-]+@[\w.-]+)"
)
_TITLE = re.compile(r"\b(?:with|email|invite|to)\s+(?:the|our|my)\s+(CFO|CEO|CTO|COO|[a-z]+ manager)\b", re.I)
_MEETING = re.compile(
    r"\b(?:schedule|book|set up|arrange|plan)\s+(?:an?\s+|the\s+)?(.*?\b(?:meeting|call|sync|review|lunch|1:1))\b",
    re.I,
)
_CALENDAR = re.compile(r"\b(calendar|agenda|schedule)\b", re.I)


def goal_entities(goal: str, today: date) -> dict[str, Any]:
    """What a message states that the tools take by name: the day (ISO) or the period it names, a time
    (``HH:MM``), a length in minutes, a person or group to look up (``name``), a sender, a topic
    (``about``) and a meeting's ``summary``; a meeting with nobody named has no attendees."""
    found: dict[str, Any] = {}
    day = resolve_day(goal, today)
    if day is not None:
        found["day"] = day.isoformat()
    period = PERIOD_PHRASE.search(goal)
    if period is not None:
        found["period"] = period.group(0).lower()
    elif day is not None:
        found["period"] = day.isoformat()
    elif _CALENDAR.search(goal):
        found["period"] = "this week"
    at = resolve_time(goal)
    if at is not None:
        found["start_time"] = at.strftime("%H:%M")
    minutes = resolve_minutes(goal)
    if minutes is not None:
        found["duration_minutes"] = minutes
    sender = _SENDER.search(goal)
    if sender is not None:
        found["sender"] = sender.group(1)
    about = _ABOUT.search(goal)
    if about is not None:
        found["about"] = about.group(1).strip()
    title = _TITLE.search(goal)
    person = _PERSON.search(goal)
    if title is not None:
        found["name"] = title.group(1)
    elif person is not None and person.group(1).lower() not in ("me", "i"):
        name = person.group(1)
        found["name"] = "team" if name.lower() in ("whole team", "team", "everyone") else name
    meeting = _MEETING.search(goal)
    if meeting is not None:
        what = re.sub(r"\s+(?:with|for|on|at)\b.*$", "", meeting.group(1)).strip()
        summary = what[:1].upper() + what[1:] if what else "Meeting"
        if "name" in found and summary.lower() in ("meeting", "call"):
            summary = f"{summary} with {found['name']}"
        found["summary"] = summary
        if "name" not in found:
            found["addresses"] = []
    return found
