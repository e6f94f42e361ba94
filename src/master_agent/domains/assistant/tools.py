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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, SecretStr, ValidationError

from master_agent.capabilities.tools.context import ToolContext
from master_agent.domains.assistant.demo_data import start_demo_servers
from master_agent.domains.assistant.providers import (
    CalDavCalendar,
    CardDavContacts,
    Endpoint,
    ImapMailbox,
    NewEvent,
    OutgoingMail,
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

Risk = Literal["low", "medium", "high"]
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
    local = await start_demo_servers(
        context.settings.data_dir, context.tenant_id, datetime.now(ZoneInfo("UTC"))
    )
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
    sender: str | None = Field(default=None, description="Part of the sender's name or address.")
    about: str | None = Field(default=None, description="Words the message contains.")
    days: int | None = Field(default=None, ge=1, le=3650, description="Only the last this many days.")


class EventArgs(BaseModel):
    summary: str = Field(min_length=1)
    day: str = Field(description="The day, as the user said it.")
    start_time: str = Field(description="'2pm', '14:00'.")
    duration_minutes: int = Field(default=60, ge=5, le=600)
    attendees: list[str] = Field(default_factory=list, description="Attendees' email addresses.")


class SendArgs(BaseModel):
    to: list[str] = Field(min_length=1, description="Recipients' email addresses.")
    subject: str = Field(min_length=1)
    body: str = Field(min_length=1)


def build_tools(context: ToolContext) -> dict[str, BaseTool]:
    providers: AssistantProviders | None = None

    async def accounts() -> AssistantProviders:
        nonlocal providers
        if providers is None:
            providers = await providers_for(context)
        return providers

    def today(zone: ZoneInfo) -> date:
        return datetime.now(zone).date()

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
        }

    async def find_contacts(name: str) -> dict[str, Any]:
        found = await (await accounts()).contacts.search(name)
        return {"query": name, "contacts": [c.model_dump() for c in found], "matches": len(found)}

    async def search_email(
        sender: str | None = None, about: str | None = None, days: int | None = None
    ) -> dict[str, Any]:
        mine = await accounts()
        since = today(mine.zone) - timedelta(days=days) if days else None
        messages = await mine.mailbox.search(sender=sender, text=about, since=since)
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
        }

    async def create_event(
        summary: str,
        day: str,
        start_time: str,
        duration_minutes: int = 60,
        attendees: list[str] | None = None,
    ) -> dict[str, Any]:
        mine = await accounts()
        when = day_of(day, mine.zone)
        at = resolve_time(start_time)
        if at is None:
            raise ToolInputError(f"start_time: {start_time!r} is not a time (say '2pm' or '14:00')")
        start = datetime.combine(when, at, tzinfo=mine.zone)
        created = await mine.calendar.create_event(
            NewEvent(
                summary=summary,
                start=start,
                end=start + timedelta(minutes=duration_minutes),
                attendees=list(attendees or []),
                organizer=mine.address,
            )
        )
        return {"event": _event_view(created, mine.zone), "created": True}

    async def send_email(to: list[str], subject: str, body: str) -> dict[str, Any]:
        mine = await accounts()
        sent = await mine.sender.send(OutgoingMail(sender=mine.address, to=to, subject=subject, body=body))
        return {"sent": sent.model_dump(), "recipients": len(sent.recipients)}

    def tool(
        func: Callable[..., Awaitable[dict[str, Any]]], args: type[BaseModel], risk: Risk, description: str
    ) -> BaseTool:
        return StructuredTool.from_function(
            coroutine=func,
            name=func.__name__,
            description=description,
            args_schema=args,
            metadata={"risk": risk},
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
            "Contacts matching a name, address or group; several matches mean ask which.",
        ),
        tool(
            search_email, MailSearchArgs, "low", "Emails in the inbox by sender, words and age, newest first."
        ),
        tool(
            create_event, EventArgs, "medium", "Put an event in the user's calendar and invite its attendees."
        ),
        tool(send_email, SendArgs, "high", "Send an email from the user's address."),
    ]
    return {t.name: t for t in tools}


def _event_view(event: Any, zone: ZoneInfo) -> dict[str, Any]:
    return {
        "summary": event.summary,
        "day": event.start.astimezone(zone).date().isoformat(),
        "start": event.start.astimezone(zone).strftime("%H:%M"),
        "end": event.end.astimezone(zone).strftime("%H:%M"),
        "attendees": event.attendees,
        "uid": event.uid,
    }


def goal_entities(goal: str, today: date) -> dict[str, Any]:
    """What a message states that the tools take by name: the day (ISO) or the period it names, a time
    (``HH:MM``), a length in minutes."""
    found: dict[str, Any] = {}
    day = resolve_day(goal, today)
    if day is not None:
        found["day"] = day.isoformat()
    period = PERIOD_PHRASE.search(goal)
    if period is not None:
        found["period"] = period.group(0).lower()
    elif day is not None:
        found["period"] = day.isoformat()
    at = resolve_time(goal)
    if at is not None:
        found["start_time"] = at.strftime("%H:%M")
    minutes = resolve_minutes(goal)
    if minutes is not None:
        found["duration_minutes"] = minutes
    return found
