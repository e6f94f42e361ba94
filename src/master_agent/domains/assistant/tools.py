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
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field, SecretStr, ValidationError

from master_agent.capabilities.spec import Risk
from master_agent.capabilities.terms import duckling_parse, duckling_parse_time, time_window
from master_agent.capabilities.tools.context import ToolContext
from master_agent.capabilities.tools.lexicon import available as lexicon_available
from master_agent.capabilities.tools.lexicon import wordnet
from master_agent.domains.assistant.demo_data import start_demo_servers
from master_agent.domains.assistant.local_servers import LocalEndpoints
from master_agent.domains.assistant.people import covers, event_people, people_named, strangers
from master_agent.domains.assistant.providers import (
    CalDavCalendar,
    CalendarEvent,
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
from master_agent.domains.assistant.requests import ACTION_NAMES, WHEN, WRITES, Action
from master_agent.domains.assistant.scheduling import (
    MONTHS,
    PERIOD_PHRASE,
    WEEKDAYS,
    WORKDAY_END,
    WORKDAY_START,
    Period,
    clock_span,
    conflicts,
    free_slots,
    resolve_day,
    resolve_hours,
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
    within: str = Field(
        description="The day or span to search, as the user said it: 'next Tuesday', 'next week', "
        "'tomorrow', '2026-12-01'."
    )
    duration_minutes: int = Field(default=60, ge=5, le=600)
    after_event: str | None = Field(
        default=None,
        description="Words naming an event the free time must come after ('my standup', "
        '"tuesday\'s product review"): only the time after it ends, on its day, is searched.',
    )


class FirstFreeArgs(BaseModel):
    start_after: str = Field(
        min_length=1, description="Words naming the event the new one starts after ('the standup')."
    )
    duration_minutes: int = Field(default=60, ge=5, le=600)
    on_day: str | None = Field(default=None, description="The day of that event, as the user said it.")


class PeriodArgs(BaseModel):
    period: str = Field(description="A day or a period: 'tomorrow', 'next week', 'next month'.")


class ContactArgs(BaseModel):
    name: str = Field(min_length=1, description="A name, part of a name, an address, or a group ('team').")


class MailSearchArgs(BaseModel):
    sender: str = Field(description="Part of the sender's name or address ('' for any sender).")
    about: str | None = Field(default=None, description="Words the message contains.")
    days: int | None = Field(default=None, ge=1, le=3650, description="Only the last this many days.")
    unread: bool = Field(default=False, description="Only messages not read yet.")


class DraftArgs(BaseModel):
    message: str = Field(min_length=1, description="What the email should say, in the user's words.")
    addresses: list[str] = Field(min_length=1, description="The recipients' email addresses.")
    about: str | None = Field(default=None, description="Its topic, for the subject ('the budget freeze').")
    reply_to: str | None = Field(
        default=None,
        description="For a reply: the words naming the mail it answers ('Maria's budget freeze mail'); "
        "it is looked up among the recipient's mails and the reply goes on its thread.",
    )


class EventArgs(BaseModel):
    summary: str = Field(min_length=1)
    day: str = Field(description="The day, as the user said it.")
    start_time: str = Field(description="'2pm', '14:00'.")
    duration_minutes: int = Field(default=60, ge=5, le=600)
    addresses: list[str] = Field(description="The attendees' email addresses ([] for none).")


class FindEventArgs(BaseModel):
    event_words: str = Field(
        min_length=1, description="Words naming the event: its title or people ('my 1:1 with Maria')."
    )
    on_day: str | None = Field(default=None, description="The day it is on, when the user said it.")


class AttendeesArgs(BaseModel):
    attendees_of: str = Field(
        min_length=1,
        description="Words naming the event whose attendees are asked for or a mail goes to ('the retro', "
        "'the Northwind call').",
    )


class EventRef(BaseModel):
    """One occurrence of an event, as find_event names it."""

    uid: str
    start: str = Field(description="The occurrence's start (ISO, UTC).")


class MoveArgs(BaseModel):
    event_ref: EventRef = Field(description="The occurrence to move (from find_event).")
    move_to: str = Field(
        min_length=1,
        description="Where to, as the user said it: 'Friday at 3pm', '4pm', 'next Monday', 'an hour earlier'.",
    )


class CancelArgs(BaseModel):
    event_ref: EventRef = Field(description="The occurrence to cancel (from find_event).")
    cancel_request: str = Field(min_length=1, description="The user's words asking for the cancellation.")


class SendArgs(BaseModel):
    addresses: list[str] = Field(min_length=1, description="The recipients' email addresses.")
    subject: str = Field(min_length=1)
    body: str = Field(min_length=1)
    in_reply_to: str | None = Field(
        default=None, description="A reply's answered mail, its Message-ID (from draft_email)."
    )
    references: list[str] | None = Field(
        default=None, description="A reply's thread, its Message-IDs (from draft_email)."
    )


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

    def span_of(text: str, zone: ZoneInfo, field: str) -> Period:
        span = resolve_period(text, today(zone))
        if span is None:
            # What the phrases above do not cover ("the next three days", "the week of the 7th"): Duckling.
            window = time_window(text, context.now(), direction="future")
            if window is not None:
                last = window.last_day().astimezone(zone).date()
                span = Period(first=max(window.start.astimezone(zone).date(), today(zone)), last=last)
        if span is None:
            raise ToolInputError(f"{field}: {text!r} names no day or period (say 'next week', 'tomorrow')")
        return span

    def midnight(day: date, zone: ZoneInfo) -> datetime:
        return datetime.combine(day, datetime.min.time(), tzinfo=zone)

    async def find_free_slots(
        within: str, duration_minutes: int = 60, after_event: str | None = None
    ) -> dict[str, Any]:
        mine = await accounts()
        span = span_of(within, mine.zone, "within")
        hours = resolve_hours(within) or (WORKDAY_START, WORKDAY_END)
        days = [span.first + timedelta(days=n) for n in range((span.last - span.first).days + 1)]
        if after_event:
            # "my next free hour after the product review tomorrow": the time after it, on its day.
            anchor, ends = await event_end(after_event, span.first.isoformat() if len(days) == 1 else None)
            days, hours = [ends.date()], (max(hours[0], ends.time()), hours[1])
            if hours[0] >= hours[1]:
                raise ProviderError(
                    "not_found", "caldav", "find_free_slots", f"{anchor.summary} ends after working hours"
                )
        if len(days) > 1:
            # A span's free time is its working days'; a single day asked for is searched as asked.
            days = [day for day in days if day.weekday() < 5] or days
        events = await mine.calendar.events(
            midnight(days[0], mine.zone), midnight(days[-1], mine.zone) + timedelta(days=1)
        )
        slots = [
            {
                "day": day.isoformat(),
                "start": s.start.strftime("%H:%M"),
                "end": s.end.strftime("%H:%M"),
                "minutes": s.minutes,
            }
            for day in days
            for s in free_slots([(e.start, e.end) for e in events], day, duration_minutes, mine.zone, hours)
        ]
        after: dict[str, Any] = {}
        if after_event:
            first = slots[0] if slots else None
            after = {
                "after": {
                    "event": anchor.summary,
                    "ends": ends.strftime("%H:%M"),
                    "day": days[0].isoformat(),
                },
                "answer": f"The first free {duration_minutes} minutes after {anchor.summary} (it ends at "
                f"{ends.strftime('%H:%M')} on {days[0].isoformat()}): "
                + (
                    f"from {first['start']} (free until {first['end']})."
                    if first
                    else "none in working hours."
                ),
            }
        return {
            **after,
            "day": days[0].isoformat() if len(days) == 1 else None,
            "window": {"first": days[0].isoformat(), "last": days[-1].isoformat()},
            "duration_minutes": duration_minutes,
            "hours": [hours[0].strftime("%H:%M"), hours[1].strftime("%H:%M")],
            "free_slots": slots,
            "busy": [_event_view(e, mine.zone) for e in events],
            "conflicts": [list(pair) for pair in conflicts((e.summary, e.start, e.end) for e in events)],
            "timezone": str(mine.zone),
            "confidence": 1.0,
        }

    async def calendar_events(period: str) -> dict[str, Any]:
        mine = await accounts()
        span = span_of(period, mine.zone, "period")
        events = await mine.calendar.events(
            midnight(span.first, mine.zone), midnight(span.last + timedelta(days=1), mine.zone)
        )
        return {
            "period": {"first": span.first.isoformat(), "last": span.last.isoformat()},
            "events": [_event_view(e, mine.zone) for e in events],
            "conflicts": [list(pair) for pair in conflicts((e.summary, e.start, e.end) for e in events)],
            "confidence": 1.0,
        }

    async def lookup(name: str) -> dict[str, Any]:
        book = (await accounts()).contacts
        # A name, a misspelt name or a role ("the CFO") as the contacts hold it; else the server's search
        # (a group, an address, part of a title).
        named = people_named(name, await book.everyone())
        if len(named) == 1:
            return people_found(name, list(named[0].contacts), [])
        found = await book.search(name)
        if not found and re.fullmatch(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", name.strip()):
            # An address the user gave that no contact holds is used as given.
            return {
                "query": name,
                "contacts": [],
                "matches": 0,
                "addresses": [name.strip()],
                "confidence": 1.0,
            }
        if not found:
            raise ProviderError("not_found", "carddav", "search", f"no contact matches {name!r}")
        wanted = name.strip().lower()
        group = [c for c in found if any(wanted in category.lower() for category in c.categories)]
        return people_found(name, found, group)

    async def find_contacts(name: str) -> dict[str, Any]:
        names = [part for part in re.split(r"\s*(?:,|\band\b|&)\s*", name.strip()) if part]
        if len(names) < 2:
            return await lookup(name)
        # Several people ("Priya and Tom"): each looked up; one who is ambiguous is asked about, with
        # the others' addresses kept in every option.
        results = [await lookup(part) for part in names]
        settled = [a for r in results if "addresses" in r for a in r["addresses"]]
        open_ = next((r for r in results if "choices" in r), None)
        merged: dict[str, Any] = {
            "query": name,
            "contacts": [c for r in results for c in r["contacts"]],
            "matches": sum(r["matches"] for r in results),
            "confidence": 1.0 if open_ is None else 0.5,
        }
        if open_ is None:
            merged["addresses"] = settled
            return merged
        choices = dict(open_["choices"])
        choices["options"] = [{**o, "value": [*settled, *o["value"]]} for o in choices["options"]]
        merged["choices"] = choices
        return merged

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

    async def search_email(
        sender: str, about: str | None = None, days: int | None = None, unread: bool = False
    ) -> dict[str, Any]:
        mine = await accounts()
        since = today(mine.zone) - timedelta(days=days) if days else None
        found = await mine.mailbox.search(sender=sender or None, text=about, since=since, unseen=unread)
        # Newest first by the date written, not by the order the mailbox holds them in.
        messages = sorted(
            found, key=lambda m: m.date or datetime.min.replace(tzinfo=ZoneInfo("UTC")), reverse=True
        )
        return {
            "messages": [
                {
                    "from": m.sender_name or m.sender,
                    "address": m.sender,
                    "subject": m.subject,
                    "date": m.date.isoformat() if m.date else None,
                    "asks_for_decision": asks_for_decision(m.body),
                    "body": m.body[:2000],
                }
                for m in messages
            ],
            "matches": len(messages),
            "mail_summary": summarise_mail(messages, sender, about, unread=unread),
            # Nothing found may be the wrong name or topic as much as no such email.
            "confidence": 1.0 if messages else 0.4,
        }

    async def draft_email(
        message: str, addresses: list[str], about: str | None = None, reply_to: str | None = None
    ) -> dict[str, Any]:
        mine = await accounts()
        subject, body = compose(message, about, len(addresses), mine.address)
        draft: dict[str, Any] = {"subject": subject, "body": body, "addresses": addresses, "confidence": 0.9}
        if reply_to:
            answered = await answered_mail(mine, reply_to, addresses)
            if answered is None:
                draft["not_threaded"] = (
                    f"no mail from {', '.join(addresses)} matches {reply_to!r}: a new mail"
                )
            else:
                draft.update(reply_headers(answered))
        return draft

    async def answered_mail(
        mine: AssistantProviders, reply_to: str, addresses: list[str]
    ) -> MailMessage | None:
        """The mail a reply answers: among the recipients' mails, the one sharing the most words with
        the words naming it (its subject and body), the newest of equals; None when they wrote none."""
        found: list[MailMessage] = []
        for address in addresses[:3]:
            found += await mine.mailbox.search(sender=address, limit=20)
        if not found:
            return None
        # Words of four letters or more: "on", "to" and "the" tell no mail apart.
        wanted = {word for word in _words(reply_to) if len(word) > 3} - _MAIL_WORDS

        def score(mail: MailMessage) -> tuple[int, int, datetime]:
            subject = len(wanted & _words(mail.subject))
            return (
                subject,
                len(wanted & _words(mail.body)),
                _utc(mail.date or datetime.min.replace(tzinfo=ZoneInfo("UTC"))),
            )

        return max(found, key=score)

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

    async def read_back(
        mine: AssistantProviders, uid: str, start: datetime, end: datetime
    ) -> CalendarEvent | None:
        """The event as the server now has it in [start, end), or None."""
        return next(
            (e for e in await mine.calendar.events(start, end) if e.uid == uid and e.start == start), None
        )

    def event_done(
        action: str, saved: CalendarEvent | None, wanted: NewEvent, zone: ZoneInfo
    ) -> dict[str, Any]:
        """Done only as the server shows it: there at the time, with every attendee."""
        if saved is None:
            why = "the calendar server does not show the event at the new time after saving it"
        elif sorted(a.lower() for a in saved.attendees) != sorted(a.lower() for a in wanted.attendees):
            why = f"the server lists attendees {saved.attendees}, not {wanted.attendees}"
        else:
            view = _event_view(saved, zone)
            return {
                "requested": action,
                "done": True,
                "confirmed_by": "caldav read-back",
                "uid": saved.uid,
                "event": view,
            }
        return {"requested": action, "done": False, "why": why}

    async def create_event(
        summary: str, day: str, start_time: str, addresses: list[str], duration_minutes: int = 60
    ) -> dict[str, Any]:
        mine, event = await new_event(summary, day, start_time, duration_minutes, addresses)
        created = await mine.calendar.create_event(event)
        action = event_done(
            "create an event",
            await read_back(mine, created.uid, _utc(event.start), _utc(event.end)),
            event,
            mine.zone,
        )
        return {
            "event": action.get("event") or _event_view(created, mine.zone),
            "created": action["done"],
            "action": action,
            "confidence": 1.0 if action["done"] else 0.3,
        }

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

    async def find_event(event_words: str, on_day: str | None = None) -> dict[str, Any]:
        """The event the words name: on the day given, else within four weeks from now, the one whose
        title and attendees share the most words with them (the earliest of its occurrences); an event
        named by its start ("my 3pm on Thursday", "my 10am tomorrow") among those starting then.
        Several equally good, or none named on the day given: the user is asked which."""
        mine = await accounts()
        first = day_of(on_day, mine.zone) if on_day else today(mine.zone)
        last = first + timedelta(days=0 if on_day else 27)
        start = midnight(first, mine.zone) if on_day else context.now()
        events = await mine.calendar.events(start, midnight(last, mine.zone) + timedelta(days=1))
        at = resolve_time(event_words)
        timed = [e for e in events if at is not None and e.start.astimezone(mine.zone).time() == at]
        if timed:
            # "my 10am": the events starting then; the words may still tell them apart.
            events = timed
            if not rank_events(event_words, timed):
                events = [min(timed, key=lambda e: e.start)] if len({e.uid for e in timed}) == 1 else timed
                on_day = on_day or events[0].start.astimezone(mine.zone).date().isoformat()
        try:
            named = people_named(event_words, await mine.contacts.everyone())
        except ProviderError:
            named = []  # the address book out of reach: the words alone
        # "my meeting with the CFO", "the call with mraia": the people they name, as attendees are.
        attendees = [
            c.emails[0].split("@")[0].replace(".", " ") for n in named for c in n.contacts if c.emails
        ]
        ranked = rank_events(" ".join([event_words, *attendees]), events)
        top = [e for score, e in ranked if score == ranked[0][0]] if ranked else []
        distinct = list({e.uid: e for e in top}.values())
        if len(distinct) == 1:
            found = min((e for e in top if e.uid == distinct[0].uid), key=lambda e: e.start)
            return {
                "event_ref": {"uid": found.uid, "start": _utc(found.start).isoformat()},
                "event": _event_view(found, mine.zone),
                "confidence": 1.0,
            }
        options = distinct or (events if on_day else [])
        if len(options) == 1:
            return {
                "event_ref": {"uid": options[0].uid, "start": _utc(options[0].start).isoformat()},
                "event": _event_view(options[0], mine.zone),
                "confidence": 1.0,
            }
        if not options:
            where = f"on {first.isoformat()}" if on_day else f"from {first.isoformat()} to {last.isoformat()}"
            raise ProviderError(
                "not_found", "caldav", "find_event", f"no event {where} matches {event_words!r}"
            )
        return {
            "events": [_event_view(e, mine.zone) for e in options],
            "confidence": 0.5,
            "choices": {
                "field": "event_ref",
                "question": "Which event do you mean?",
                "options": [
                    {
                        # "the product review" picks "the Product review on ...": the label starts as said.
                        "label": f"the {view['summary']} on {view['day']} at {view['start']}",
                        "value": {"uid": e.uid, "start": _utc(e.start).isoformat()},
                    }
                    for e, view in ((e, _event_view(e, mine.zone)) for e in options[:6])
                ],
            },
        }

    async def find_attendees(attendees_of: str) -> dict[str, Any]:
        """The addresses of the people an event of the user's calendar invites ("everyone on the
        Northwind call"), as the calendar server lists them; several events fit: the user is asked
        which, each option its attendees."""
        found = await find_event(attendees_of)
        events = [found["event"]] if "event" in found else list(found.get("events") or [])
        invited = [event for event in events if event.get("attendees")]
        if not invited:
            raise ProviderError("not_found", "caldav", "find_attendees", f"{attendees_of!r} invites no one")
        # Its own keys: an "event" or "events" here would stand for the request's event in what follows.
        result: dict[str, Any] = {
            "attendees_of": attendees_of,
            "invited_by": [f"{e['summary']} on {e['day']} at {e['start']}" for e in invited],
            "confidence": 1.0,
        }
        if len(invited) == 1:
            return {
                **result,
                "addresses": list(invited[0]["attendees"]),
                "attendees": await named_people(list(invited[0]["attendees"])),
            }
        choices = {
            "field": "addresses",
            "question": "Whose attendees do you mean?",
            "options": [
                {"label": f"the {e['summary']} on {e['day']} at {e['start']}", "value": list(e["attendees"])}
                for e in invited[:6]
            ],
        }
        return {**result, "confidence": 0.5, "choices": choices}

    async def event_end(event_words: str, on_day: str | None) -> tuple[CalendarEvent, datetime]:
        """The event the words name (``find_event``) and when it ends, in the user's zone: what "after
        the standup" counts from. Several events fit: the user names the day, never one picked."""
        found = await find_event(event_words, on_day)
        if "event_ref" not in found:
            raise ToolInputError(
                f"after: several events match {event_words!r} "
                f"({'; '.join(o['label'] for o in found['choices']['options'])}); say which day"
            )
        mine = await accounts()
        event = await occurrence(mine, EventRef.model_validate(found["event_ref"]))
        return event, event.end.astimezone(mine.zone)

    async def first_free_after(
        start_after: str, duration_minutes: int = 60, on_day: str | None = None
    ) -> dict[str, Any]:
        """The start of the first free slot of the length after an event ends, on its day, as the
        calendar server holds the day's events: where "the first free slot after standup" begins."""
        mine = await accounts()
        anchor, ends = await event_end(start_after, on_day)
        day = ends.date()
        events = await mine.calendar.events(
            midnight(day, mine.zone), midnight(day, mine.zone) + timedelta(days=1)
        )
        opens = max(WORKDAY_START, ends.time())
        slots = (
            free_slots(
                [(e.start, e.end) for e in events], day, duration_minutes, mine.zone, (opens, WORKDAY_END)
            )
            if opens < WORKDAY_END
            else []
        )
        if not slots:
            raise ProviderError(
                "not_found",
                "caldav",
                "first_free_after",
                f"no free {duration_minutes} minutes after {anchor.summary} on {day.isoformat()} in working hours",
            )
        return {
            "day": day.isoformat(),
            "start_time": slots[0].start.strftime("%H:%M"),
            "free_after": {"event": anchor.summary, "ends": ends.strftime("%H:%M"), "day": day.isoformat()},
            "confidence": 1.0,
        }

    async def named_people(addresses: list[str]) -> list[str]:
        """Each address with its contact's name ("Tom Becker <tom.becker@acme.example>"), as the
        address book holds it; an address it does not hold, as it is."""
        try:
            book = await (await accounts()).contacts.everyone()
        except ProviderError:
            book = []
        names = {email.lower(): contact.name for contact in book for email in contact.emails}
        return [
            f"{names[address.lower()]} <{address}>" if address.lower() in names else address
            for address in addresses
        ]

    async def occurrence(mine: AssistantProviders, ref: EventRef) -> CalendarEvent:
        start = datetime.fromisoformat(ref.start)
        found = [
            e for e in await mine.calendar.events(start, start + timedelta(minutes=1)) if e.uid == ref.uid
        ]
        if not found:
            raise ProviderError("not_found", "caldav", "find_event", f"no event {ref.uid} at {ref.start}")
        return found[0]

    async def planned_move(
        event_ref: EventRef | dict[str, Any], move_to: str
    ) -> tuple[AssistantProviders, CalendarEvent, datetime, datetime]:
        ref = EventRef.model_validate(event_ref)
        mine = await accounts()
        event = await occurrence(mine, ref)
        local = event.start.astimezone(mine.zone)
        shift = resolve_shift(move_to)
        if shift is not None:
            start = event.start + shift
        else:
            beside = _NEXT_TO.search(move_to)
            # "the day after, same slot": a day counted from the event's own.
            day = (
                local.date() + timedelta(days=1 if beside.group(1).lower() in _DAY_LATER else -1)
                if beside is not None
                else resolve_day(move_to, today(mine.zone))
            )
            at = resolve_time(move_to)
            if day is None and at is None:
                raise ToolInputError(
                    f"move_to: {move_to!r} names no day or time ('Friday', '3pm', 'an hour later')"
                )
            start = datetime.combine(
                day or local.date(), at or local.timetz().replace(tzinfo=None), tzinfo=mine.zone
            )
        return mine, event, start, start + (event.end - event.start)

    async def reschedule_event(event_ref: EventRef | dict[str, Any], move_to: str) -> dict[str, Any]:
        mine, event, start, end = await planned_move(event_ref, move_to)
        moved = await mine.calendar.move_occurrence(event, start, end)
        wanted = NewEvent(**{**event.model_dump(exclude={"uid"}), "start": start, "end": end})
        action = event_done(
            "move an event", await read_back(mine, moved.uid, _utc(start), _utc(end)), wanted, mine.zone
        )
        gone = await mine.calendar.events(event.start, event.end)
        if action["done"] and any(e.uid == event.uid and e.start == event.start for e in gone):
            action = {
                "requested": "move an event",
                "done": False,
                "why": "the event is still at its old time",
            }
        action["from"] = _event_view(event, mine.zone)
        return {
            "event": action.get("event"),
            "moved": action["done"],
            "action": action,
            "confidence": 1.0 if action["done"] else 0.3,
        }

    async def move_preview(args: dict[str, Any]) -> dict[str, Any]:
        checked = MoveArgs.model_validate(args)
        mine, event, start, end = await planned_move(checked.event_ref, checked.move_to)
        view = _event_view(event, mine.zone)
        # What the new time overlaps, as a new event's draft says it: moved knowingly, or changed.
        overlapping = [e for e in await mine.calendar.events(start, end) if e.uid != event.uid]
        return {
            "event": view["summary"],
            "from": f"{view['day']} {view['start']}-{view['end']}",
            "to": f"{start.astimezone(mine.zone).date().isoformat()} {start.astimezone(mine.zone).strftime('%H:%M')}-"
            f"{end.astimezone(mine.zone).strftime('%H:%M')}",
            "attendees": event.attendees,
            "uid": event.uid,
            "overlaps": [
                f"{other['summary']} {other['start']}-{other['end']}"
                for other in (_event_view(e, mine.zone) for e in overlapping)
            ],
        }

    async def cancel_event(event_ref: EventRef | dict[str, Any], cancel_request: str) -> dict[str, Any]:
        mine = await accounts()
        event = await occurrence(mine, EventRef.model_validate(event_ref))
        await mine.calendar.cancel_occurrence(event)
        still = [
            e
            for e in await mine.calendar.events(event.start, event.end)
            if e.uid == event.uid and e.start == event.start
        ]
        view = _event_view(event, mine.zone)
        action: dict[str, Any] = (
            {
                "requested": "cancel an event",
                "done": True,
                "confirmed_by": "caldav read-back",
                "uid": event.uid,
                "event": view,
            }
            if not still
            else {"requested": "cancel an event", "done": False, "why": "the server still shows the event"}
        )
        return {
            "cancelled": view if not still else None,
            "action": action,
            "confidence": 1.0 if not still else 0.3,
        }

    async def cancel_preview(args: dict[str, Any]) -> dict[str, Any]:
        checked = CancelArgs.model_validate(args)
        mine = await accounts()
        event = await occurrence(mine, checked.event_ref)
        view = _event_view(event, mine.zone)
        return {
            "cancel": view["summary"],
            "when": f"{view['day']} {view['start']}-{view['end']}",
            "attendees": event.attendees,
            "uid": event.uid,
        }

    async def send_email(
        addresses: list[str],
        subject: str,
        body: str,
        in_reply_to: str | None = None,
        references: list[str] | None = None,
    ) -> dict[str, Any]:
        mine = await accounts()
        sent = await mine.sender.send(
            OutgoingMail(
                sender=mine.address,
                to=addresses,
                subject=subject,
                body=body,
                in_reply_to=in_reply_to,
                references=references or [],
            )
        )
        # The server's acceptance (250 to the message, per recipient) is the confirmation SMTP gives;
        # the copy kept in the Sent folder and read back from it is the mailbox's.
        action: dict[str, Any] = {
            "requested": "send an email",
            "done": bool(sent.recipients) and not sent.refused,
            "confirmed_by": "smtp acceptance",
            "message_id": sent.message_id,
            "accepted": sent.recipients,
        }
        if in_reply_to:
            action["in_reply_to"] = in_reply_to
        if sent.refused:
            action["why"] = "the server refused " + ", ".join(
                f"{a} ({why})" for a, why in sent.refused.items()
            )
        if sent.recipients:
            try:
                uid = await mine.mailbox.keep_sent(sent.raw, sent.message_id)
            except ProviderError as error:
                # Sent all the same (the SMTP server took it): said, not hidden, and not retried.
                action["sent_folder"] = f"not kept in the Sent folder: {error}"
            else:
                action["sent_folder"] = {"folder": "Sent", "uid": uid}
                action["confirmed_by"] = "smtp acceptance and the Sent folder (read back)"
        return {
            "sent": {**sent.model_dump(), "subject": subject},
            "recipients": len(sent.recipients),
            "action": action,
            "confidence": 1.0 if action["done"] else 0.3,
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
            **({"in_reply_to": checked.in_reply_to} if checked.in_reply_to else {}),
        }

    async def report_change(args: dict[str, Any], confirmed: dict[str, Any]) -> dict[str, Any]:
        """A mail reporting another change of its request, once the server confirmed it: it states
        the change as the server holds it (``stated_change``), so it never tells a time or a day the
        calendar does not hold (the runtime calls this only with a confirmed record)."""
        checked = SendArgs.model_validate(args)
        zone = (await accounts()).zone
        fact = stated_change(confirmed, str(zone))
        if fact is None:
            return args
        return {**args, **reported_in(checked.subject, checked.body, fact, confirmed)}

    async def add_people(args: dict[str, Any], text: str) -> dict[str, Any] | None:
        """A draft's recipients or attendees with the people an answer adds ("also copy Hana on
        it", "cc david.chen@acme.example", "add Lucas too"): each named contact that one contact fits,
        and addresses as written. None when the answer adds no one (a name several contacts fit is
        not guessed: the draft stays as it was and is not run)."""
        if not _ADDING.search(text) or not isinstance(args.get("addresses"), list):
            return None
        named = people_named(text, await (await accounts()).contacts.everyone())
        if any(len(mention.contacts) != 1 for mention in named):
            return None
        found = [m.contacts[0].emails[0] for m in named if m.contacts[0].emails]
        found += re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", text)
        held = {address.lower() for address in args["addresses"]}
        new = [address for address in dict.fromkeys(found) if address.lower() not in held]
        if not new:
            return None
        revised = {**args, "addresses": [*args["addresses"], *new]}
        if isinstance(args.get("body"), str):
            revised["body"] = re.sub(r"^Hi,", "Hi all,", args["body"], count=1)
        return revised

    async def revise_mail(args: dict[str, Any], text: str) -> dict[str, Any] | None:
        """A draft mail changed as an answer asks, in its own terms: words added to what it says ("add
        that he should place the orders through IT"), its recipient replaced ("not Tom - make it to
        Emma instead"), or people added (``add_people``). None: the answer asks none of these."""
        added = _ADD_SAYING.match(text)
        if added is not None and isinstance(args.get("body"), str):
            said = _to_reader(added.group("said").strip().rstrip(".!?"))
            if added.group("ask"):
                # "add a line asking her to present it": a question to the reader.
                said = f"could you {said}?"
            sentence = said[:1].upper() + said[1:] + ("" if said.endswith("?") else ".")
            greeting, _, rest = args["body"].partition("\n\n")
            text_part, sep, sign_off = rest.rpartition("\n\nBest regards,")
            if not sep:
                return {**args, "body": f"{args['body'].rstrip()}\n\n{sentence}"}
            return {**args, "body": f"{greeting}\n\n{text_part} {sentence}{sep}{sign_off}"}
        if _INSTEAD.search(text) and isinstance(args.get("addresses"), list):
            named = people_named(text, await (await accounts()).contacts.everyone())
            dropped = {m.said.lower() for m in named if _NOT_BEFORE.search(text[: text.find(m.said)])}
            kept = [m for m in named if m.said.lower() not in dropped]
            if len(kept) == 1 and len(kept[0].contacts) == 1 and kept[0].contacts[0].emails:
                return {**args, "addresses": [kept[0].contacts[0].emails[0]]}
            return None
        return await add_people(args, text)

    async def revise_move(args: dict[str, Any], text: str) -> dict[str, Any] | None:
        """A drafted move changed as an answer asks ("wait, make it 3pm", "Thursday instead", "an hour
        later"): where to, said again with what the answer changes (its day or time; the other kept
        from the draft's). None: the answer names no day or time."""
        checked = MoveArgs.model_validate(args)
        mine = await accounts()
        day = resolve_day(text, today(mine.zone))
        at = resolve_time(text) or bare_hour(text)
        shift = resolve_shift(text)
        if day is None and at is None and shift is None:
            return None
        _, _, start, _ = await planned_move(checked.event_ref, checked.move_to)
        local = start.astimezone(mine.zone)
        if shift is not None:
            local = local + shift
        else:
            local = datetime.combine(
                day or local.date(), at or local.timetz().replace(tzinfo=None), tzinfo=mine.zone
            )
        # The same arguments when the answer names the day and time drafted ("yes, go with thursday").
        return {**args, "move_to": f"{local.date().isoformat()} at {local.strftime('%H:%M')}"}

    async def revise_event(args: dict[str, Any], text: str) -> dict[str, Any] | None:
        """A draft event changed as an answer asks, in its own terms: people added (``add_people``),
        and its time and day ("move it to 12-1 instead", "make it 3pm", "Friday at 10 instead", "an
        hour later"): a clock span sets the start and the length, a clock time the start, a length
        said as how far moves it. None: the answer asks none of these."""
        revised = await add_people(args, text) or dict(args)
        if not isinstance(args.get("start_time"), str):
            return None if revised == args else revised
        zone = (await accounts()).zone
        span = clock_span(text) or clock_span(_BARE_SPAN.sub(r"from \g<1> to \g<2>", text))
        shift = resolve_shift(text)
        at = length = hour = None
        if span is not None:
            first, last = span
            revised["start_time"] = first.strftime("%H:%M")
            revised["duration_minutes"] = (last.hour * 60 + last.minute) - (first.hour * 60 + first.minute)
        elif shift is not None:
            old = resolve_time(str(args["start_time"]))
            if old is not None:
                base = datetime.combine(date(2000, 1, 3), old)
                moved = base + shift
                if moved.date() == base.date():
                    revised["start_time"] = moved.strftime("%H:%M")
        elif (at := resolve_time(text)) is not None:
            revised["start_time"] = at.strftime("%H:%M")
        elif (length := resolve_minutes(text)) is not None:
            # "make it 45 minutes": its length.
            revised["duration_minutes"] = length
        elif (hour := bare_hour(text)) is not None:
            # "hmm wait, 3 is better": a bare number answering a drafted time is its start.
            revised["start_time"] = hour.strftime("%H:%M")
        day = resolve_day(text, today(zone))
        if day is not None and shift is None:
            revised["day"] = day.isoformat()
        said = (span, shift, at, length, hour, day)
        # The same arguments when the answer names only what is drafted ("yes, go with 2pm").
        return revised if revised != args or any(value is not None for value in said) else None

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
            "Free slots of at least the given length in working hours, on a day or each working day of a "
            "span ('next week').",
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
            "Emails in the inbox by sender, words, age and unread, newest first, with a summary that "
            "puts the mail asking for a decision first.",
        ),
        tool(
            find_event,
            FindEventArgs,
            "low",
            "The calendar event some words name (title, people), on a day or in the next four weeks; "
            "when several match, the user is asked which.",
        ),
        tool(
            find_attendees,
            AttendeesArgs,
            "low",
            "The addresses of the people an event invites (its attendees, from the calendar server), for "
            "a mail to them.",
        ),
        tool(
            first_free_after,
            FirstFreeArgs,
            "low",
            "The day and start of the first free slot of a length after an event ends (on its day): "
            "where a new event said to come 'after the standup' starts.",
        ),
        tool(
            draft_email,
            DraftArgs,
            "low",
            "A draft (subject and body) saying what the user asked to say, to send or edit.",
        ),
        tool(
            create_event,
            EventArgs,
            "medium",
            "Put an event in the user's calendar and invite its attendees (shown as a draft to approve; "
            "more than ten attendees needs an accepted preview); done when read back from the server.",
            risk_of=_mass_when_many,
            preview_of=event_preview,
            performs=ACTION_NAMES["schedule"],
            revise_of=revise_event,
        ),
        tool(
            reschedule_event,
            MoveArgs,
            "medium",
            "Move one of the user's events (one occurrence of a repeating one) to a new day or time, "
            "keeping its attendees (shown as a draft to approve); done when read back from the server.",
            preview_of=move_preview,
            performs=ACTION_NAMES["reschedule"],
            revise_of=revise_move,
        ),
        tool(
            cancel_event,
            CancelArgs,
            "medium",
            "Cancel one of the user's events (one occurrence of a repeating one) (shown as a draft to "
            "approve); done when the server no longer shows it.",
            preview_of=cancel_preview,
            performs=ACTION_NAMES["cancel_event"],
        ),
        tool(
            send_email,
            SendArgs,
            "medium",
            "Send an email from the user's address (shown as a draft to approve; more than ten "
            "recipients is a mass email and needs an accepted preview); done when the server accepts it.",
            risk_of=_mass_when_many,
            preview_of=mail_preview,
            revise_of=revise_mail,
            performs=ACTION_NAMES["send_mail"],
            reports_of=report_change,
        ),
    ]
    return {t.name: t for t in tools}


#: An answer to a drafted time that is a bare number and a few words: "hmm wait, 3 is better", "4 works".
_BARE_NUMBER = re.compile(r"(?<![\d:.])\b(\d{1,2})\b(?![\d:.]|\s*(?:%|min|h\b|hours?|days?|people))", re.I)
#: The most words such an answer has besides its number.
_BARE_HOUR_WORDS = 6


def bare_hour(text: str) -> time | None:
    """The clock time a short answer to a drafted time means by a bare number ("3 is better"): read
    as "at 3" is (the working-day rule: 15:00), or None when it says more than one number or more
    than a few words."""
    numbers = _BARE_NUMBER.findall(text)
    if len(numbers) != 1 or len(re.findall(r"\d+", text)) != 1 or len(text.split()) > _BARE_HOUR_WORDS + 1:
        return None
    return resolve_time(f"at {numbers[0]}") if 0 < int(numbers[0]) <= 23 else None


def _long_day(day: str) -> str:
    when = date.fromisoformat(day)
    return f"{when:%A} {when.day} {when:%B %Y}"


def stated_change(confirmed: dict[str, Any], zone: str) -> str | None:
    """A confirmed calendar change in the server's values (its day, times and uid), or None for a
    record that is no calendar change."""
    event = confirmed.get("event")
    if not isinstance(event, dict) or not event.get("day"):
        return None
    when = f"{_long_day(str(event['day']))}, {event.get('start')}-{event.get('end')} ({zone})"
    summary, uid = event.get("summary") or "The event", confirmed.get("uid") or event.get("uid")
    requested = confirmed.get("requested")
    if requested == ACTION_NAMES["reschedule"]:
        before = confirmed.get("from") or {}
        was = f" (it was {_long_day(str(before['day']))}, {before.get('start')})" if before.get("day") else ""
        fact = f"{summary} is now on {when}{was}."
    elif requested == ACTION_NAMES["cancel_event"]:
        fact = f"{summary} on {when} is cancelled."
    else:
        fact = f"{summary} is booked for {when}."
    return f"{fact} Calendar event: {uid}." if uid else fact


def reported_in(subject: str, body: str, fact: str, confirmed: dict[str, Any]) -> dict[str, str]:
    """A mail's subject and body stating ``fact``: added after what the user dictated, or in its
    place when the words dictated name another clock time than the event's start on the server (the
    mail would tell the reader a time that is not so)."""
    event = confirmed.get("event") or {}
    held = str(event.get("start"))
    paragraphs = body.split("\n\n")
    closing = next((i for i, p in enumerate(paragraphs) if p.startswith("Best regards")), len(paragraphs))
    said = next((i for i in range(1, closing) if paragraphs[i].strip()), None)

    def untrue(text: str) -> bool:
        at = resolve_time(text)
        return at is not None and at.strftime("%H:%M") != held

    replaced = said is not None and untrue(paragraphs[said])
    # The subject is the dictated words' opening when no topic was named: replaced with them.
    opening = subject.removesuffix("...").rstrip(".")
    derived = replaced and said is not None and paragraphs[said].startswith(opening)
    if said is not None and replaced:
        paragraphs[said] = fact
    else:
        paragraphs.insert(closing, fact)
    # A subject of a word or two ("It", "Update") says nothing of the change: the change is the subject.
    if derived or untrue(subject) or len(subject.split()) <= 2:
        subject = fact.split(" Calendar event:")[0].split(" (it was")[0].rstrip(".")
    return {"subject": subject, "body": "\n\n".join(paragraphs)}


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


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(ZoneInfo("UTC"))


_WORD = re.compile(r"[a-z0-9:]+")


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if len(word) > 1}


def rank_events(words: str, events: list[CalendarEvent]) -> list[tuple[float, CalendarEvent]]:
    """Events sharing words with ``words`` (title, attendees' names), best first: each shared word
    weighs by how few of the events have it (so "with" counts little, "maria" much)."""
    wanted = _words(words)
    texts = [
        _words(e.summary) | {part for a in e.attendees for part in _words(a.split("@")[0].replace(".", " "))}
        for e in events
    ]
    scored = []
    for event, text in zip(events, texts, strict=True):
        score = round(sum(1 / sum(word in other for other in texts) for word in wanted & text), 6)
        if score > 0:
            scored.append((score, event))
    return sorted(scored, key=lambda pair: (-pair[0], pair[1].start))


#: An answer to a draft that adds words to what it says: "add that ...", "also mention that ...".
_ADD_SAYING = re.compile(
    r"^\s*(?:(?:and|also|oh|ok(?:ay)?|please|pls|can\s+you|could\s+you)[,.!]?\s+)*(?:also\s+)?"
    r"(?:add|mention|say|include|put\s+in|tack\s+on|append|tell\s+(?:him|her|them))\s+(?:also\s+)?"
    r"(?:(?:a|one|another)\s+(?:more\s+)?(?:line|note|sentence|bit|p\.?s\.?)\s+)?(?:at\s+the\s+end\s+)?"
    r"(?:(?P<ask>asking\s+(?:him|her|them)\s+to|to\s+ask\s+(?:him|her|them)\s+to)|that|saying(?:\s+that)?|"
    r"to\s+say(?:\s+that)?)\s+(?P<said>\S.*?)\s*$",
    re.I,
)
#: A day said from the event's own: "the day after", "the day before", "a day later", "the next day".
_NEXT_TO = re.compile(
    r"\b(?:the|a|one)\s+day\s+(after|before|later|earlier)\b|\bthe\s+(next|previous)\s+day\b", re.I
)
_DAY_LATER = frozenset({"after", "later", "next"})
#: Two clock times joined without "from" ("12-1", "2 to 3pm"): a span once "from" is put before them.
_BARE_SPAN = re.compile(
    r"(?<![\w:/-])(\d{1,2}(?::\d{2})?\s*(?:am|pm)?)\s*(?:-|–|to|until|till)\s*(\d{1,2}(?::\d{2})?\s*(?:am|pm)?)(?![\w:/-])",
    re.I,
)
#: Such a span not said as a clock time after "at" ("at 10 to 11" is 10:50).
_BARE_SPAN_NOT_AT = re.compile(r"(?<!\bat\s)" + _BARE_SPAN.pattern, re.I)
#: An answer that replaces whom a draft goes to: "not Tom - make it to Emma instead", "send it to Emma".
_INSTEAD = re.compile(r"\binstead\b|\bmake\s+it\s+(?:to|for)\b|\bsend\s+it\s+to\b", re.I)
_NOT_BEFORE = re.compile(r"\bnot\s+(?:to\s+)?$", re.I)
#: The reader of a mail named in the third person by the one who dictates it: "he should" is "you should".
_THIRD_PERSON = {
    "he": "you",
    "she": "you",
    "they": "you",
    "his": "your",
    "their": "your",
    "him": "you",
    "them": "you",
}
_THIRD = re.compile(r"\b(?:" + "|".join(_THIRD_PERSON) + r")\b", re.I)


def _to_reader(said: str) -> str:
    return _THIRD.sub(lambda m: _THIRD_PERSON[m.group(0).lower()], said)


#: An answer to a draft that adds people to it: "also copy Hana", "cc Omar", "add Lucas too".
_ADDING = re.compile(r"\b(?:also|too|as\s+well|copy|cc|bcc|add|include|loop\s+in|invite)\b", re.I)
#: Which way a length moves an event: the words of "earlier" win over those of "later" ("push it 30
#: minutes earlier").
_EARLIER = re.compile(r"\b(?:earlier|sooner|forward|ahead|more\s+early)\b", re.I)
_LATER = re.compile(r"\b(?:later|back|delay(?:ed)?|postpone[ds]?|push(?:ed)?|more\s+late)\b", re.I)
#: A length said as how far to move: "an hour earlier", "30 minutes later", "by two hours".
_SHIFT_BEFORE = re.compile(r"\b(?:by|(?:earlier|later|back|forward|ahead)(?:\s+by)?)\s+$", re.I)
#: "one hour more late" (a comparative said with "more") is "one hour later".
_SHIFT_AFTER = re.compile(r"^\s*(?:earlier|later|sooner|back|forward|ahead|more\s+(?:late|early))\b", re.I)


def shift_of(text: str) -> tuple[timedelta, int] | None:
    """How far ``text`` moves an event and where that is said: a length (``resolve_minutes`` reads
    it, Duckling's durations) said as "by <length>" or next to its way ("an hour earlier", "push
    back ... by two hours", "push it back half an hour", "bring it forward by 30 minutes"), signed by
    that way; or None."""
    for item in sorted(duckling_parse(text, ("duration",)), key=lambda entry: entry["start"]):
        start, end = int(item["start"]), int(item["end"])
        if not (_SHIFT_BEFORE.search(text[:start]) or _SHIFT_AFTER.search(text[end:])):
            continue
        minutes = resolve_minutes(str(item["body"]))
        if minutes is None:
            continue
        if _EARLIER.search(text):
            return timedelta(minutes=-minutes), start
        if _LATER.search(text):
            return timedelta(minutes=minutes), start
    return None


def resolve_shift(text: str) -> timedelta | None:
    """ "an hour earlier", "30 minutes later", "push it back by an hour": how far an event moves, or
    None."""
    found = shift_of(text)
    return None if found is None else found[0]


#: Words that name a mail as a mail, not what it is about ("Maria's budget mail").
_MAIL_WORDS = frozenset(
    {"mail", "email", "e-mail", "message", "note", "thread", "the", "her", "his", "my", "s"}
)


def reply_headers(answered: MailMessage) -> dict[str, Any]:
    """A reply's subject ("Re: " and the answered mail's) and the headers that keep it on that mail's
    thread (In-Reply-To its Message-ID; References the thread up to it)."""
    subject = answered.subject.strip()
    headers: dict[str, Any] = {
        "subject": subject if re.match(r"^re:", subject, re.I) else f"Re: {subject}",
        "replying_to": {
            "from": answered.sender,
            "subject": answered.subject,
            "date": answered.date.isoformat() if answered.date else None,
        },
    }
    if answered.message_id:
        headers["in_reply_to"] = answered.message_id
        headers["references"] = [
            *([answered.in_reply_to] if answered.in_reply_to else []),
            answered.message_id,
        ]
    return headers


def compose(message: str, about: str | None, recipients: int, signature: str) -> tuple[str, str]:
    """Subject and body of an email that says ``message`` (the user's words): the subject is the topic
    when one was named, else the message's first words."""
    said = " ".join(message.split()).strip().rstrip(".!")
    sentence = said[:1].upper() + said[1:] + ("" if said.endswith("?") else ".")
    topic = (about or "").strip().rstrip(".")
    if not topic:
        words = said.split()
        topic = " ".join(words[:8]) + ("..." if len(words) > 8 else "")
    subject = topic[:1].upper() + topic[1:]
    greeting = "Hi all," if recipients > 1 else "Hi,"
    return subject, f"{greeting}\n\n{sentence}\n\nBest regards,\n{signature}"


#: A sentence that asks the reader for something: a question, or a request for a decision or approval.
_ASKS = re.compile(
    r"\?\s*$|\b(?:decision|decide|approve|approval|sign[- ]off|confirm|let me know|need (?:your|an?) )", re.I
)


def asks_for_decision(body: str) -> bool:
    return any(_ASKS.search(sentence) for sentence in re.split(r"(?<=[.!?])\s+", " ".join(body.split())))


def summarise_mail(
    messages: list[MailMessage], sender: str, about: str | None, *, unread: bool = False
) -> str:
    """An extractive summary, newest first: how many messages, from whom, the ones asking for a
    decision or an answer first, then each one's subject and first sentence."""
    kind = "unread email(s)" if unread else "email(s)"
    if not messages:
        who = f" from {sender}" if sender else ""
        topic = f" about {about}" if about else ""
        return f"No {'unread emails' if unread else 'emails'}{who}{topic}."
    people = sorted({m.sender_name or m.sender for m in messages})
    lines = [f"{len(messages)} {kind} from {', '.join(people)}" + (f" about {about}" if about else "") + ":"]
    newest = sorted(
        messages, key=lambda m: m.date or datetime.min.replace(tzinfo=ZoneInfo("UTC")), reverse=True
    )
    asking = [m for m in newest if asks_for_decision(m.body)]
    if asking:
        lines.append("Waiting for your decision or answer:")
        for m in asking:
            wanted = next(s for s in re.split(r"(?<=[.!?])\s+", " ".join(m.body.split())) if _ASKS.search(s))
            lines.append(f"- {m.subject} ({m.sender_name or m.sender}): {wanted[:200]}")
        lines.append("All, newest first:")
    for m in newest:
        first = re.split(r"(?<=[.!?])\s", " ".join(m.body.split()), maxsplit=1)[0][:200]
        when = m.date.date().isoformat() if m.date else "undated"
        lines.append(f"- {when} {m.sender_name or m.sender}: {m.subject}: {first}")
    return "\n".join(lines)


_SENDER = re.compile(
    r"\b(?i:from)\s+(?!(?i:the|my|our|me|us|you|next|this|last|today|tomorrow|yesterday|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)\b)([A-Za-z][\w.'-]*(?:\s+(?!I\b)[A-Z][\w.'-]*)?|[\w.+-]+@[\w.-]+)"
)
#: "on atlas", "regarding the contract": a topic when what follows is not a day.
_TOPIC_ON = re.compile(
    r"\b(?:on|regarding|concerning|re)\s+(?:the\s+)?([\w-]+(?:\s+[\w-]+){0,2}?)(?=[?.!,]|$)", re.I
)
_ABOUT = re.compile(
    r"\babout\s+(?:the\s+|my\s+|our\s+)?(.+?)(?=\s+(?:and|then|to|from|with|on|at|for|next|this|tomorrow|today)\b|[?.!,]|$)",
    re.I,
)
_PERSON = re.compile(
    # A name's dots are inside it ("J.R."), never the end of a sentence ("... to Thursday. What ...").
    # "add Gustavo to the sync": a person added to an event (not "add Lunch" or "add a dinner").
    r"\b(?i:with|email|e-mail|mail|message|invite|to|tell|ask|remind|inform|let|"
    r"(?:add|include)(?=\s+[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?\s+(?i:to|into)\s+"
    r"(?!(?i:(?:my|the)\s+)?(?:calendar|diary|schedule|agenda)\b)))\s+(?i:the\s+)?((?i:whole\s+team|team|everyone|everybody)|[A-Z][\w'-]*(?:\.[\w'-]+)*(?:\s+[A-Z][\w'-]*(?:\.[\w'-]+)*)?|[\w.+-]+@[\w.-]+)"
)
_TITLE = re.compile(r"\b(?:the|our|my)\s+(CFO|CEO|CTO|COO|[a-z]+ manager)\b", re.I)
_MEETING = re.compile(
    r"\b(?:schedule|book|set up|arrange|plan)\s+(?:an?\s+|the\s+)?(.*?\b(?:meeting|call|sync|review|lunch|1:1))\b",
    re.I,
)
#: "... to a farewell party on Friday": the event an invitation is to.
_INVITED_TO = re.compile(
    r"\bto\s+(?:(?:a|an|the|our|my)\s+)?(?!(?:discuss|talk|go|review|plan|meet|join)\b)"
    r"(.+?)(?=\s+(?:on|at|next|this|tomorrow|today|for|with|from)\b|[?.!,]|$)",
    re.I,
)
_CALENDAR = re.compile(r"\b(calendar|agenda|schedule)\b", re.I)
_GROUP = re.compile(
    r"\b(?:whole\s+team|the\s+team|my\s+team|our\s+team|everyone|everybody|all\s+of\s+us)\b", re.I
)
#: What an email should say: the words after "saying", "that", "to say", "know", "asking", or a colon.
_SAYING = re.compile(
    r"(?:\b(?:saying|(?:to|and)\s+say|tell(?:ing)?\s+(?:them|him|her|everyone|everybody)(?:\s+that)?|that|know)\b|:|\s[-–—]\s)\s*(?P<said>.+)$|"
    r"\basking\s+(?:them\s+|him\s+|her\s+)?(?P<asked>.+)$",
    re.I,
)
_NOT_YET = re.compile(r",?\s*(?:but\s+)?(?:don'?t|do not)\s+send(?:\s+it)?(?:\s+yet)?\b.*$", re.I)
_UNREAD = re.compile(r"\b(?:unread|new|unseen|not\s+read)\b", re.I)
#: The last "to <day or time>" of a request to move an event: what follows is the new time.
_MOVE_TO = re.compile(r"\s+(?:to|until|till|for)\s+(?!(?:the\s+)?(?:whole\s+)?team\b)", re.I)
_NOT_NAMES = frozenset(
    {
        *(day.capitalize() for day in WEEKDAYS),
        *(month.capitalize() for month in MONTHS),
        "I",
        "Q1",
        "Q2",
        "Q3",
        "Q4",
    }
)
_CAPITALISED = re.compile(r"\b([A-Z][a-z][\w'-]*(?:\s+[A-Z][a-z][\w'-]*)?)")


_AND_MORE = re.compile(r"\s*(?:,|\band\b|&)\s*([A-Z][\w'-]*(?:\s+[A-Z][a-z][\w'-]*)?)")


def _people(goal: str) -> str | None:
    """Whom a request names: a title (the CFO), a group (the team), else a name written with a
    capital that is not the request's first word, a day or a month, with the names joined to it by
    "and" or commas ("Priya and Tom")."""
    first = _person(goal)
    if first is None or first in ("team",) or first.isupper():
        return first
    at = goal.find(first)
    names = [first]
    cursor = at + len(first)
    while (more := _AND_MORE.match(goal, cursor)) is not None and more.group(1) not in _NOT_NAMES:
        names.append(more.group(1))
        cursor = more.end()
    return " and ".join(names)


def _person(goal: str) -> str | None:
    title = _TITLE.search(goal)
    if title is not None:
        return title.group(1)
    if _GROUP.search(goal):
        return "team"
    person = _PERSON.search(goal)
    if person is not None and person.group(1).lower() not in ("me", "i", "us"):
        name = person.group(1)
        return "team" if name.lower() in ("whole team", "team", "everyone", "everybody") else name
    # The request's first word is capitalised as any first word is; a name may follow it ("What's
    # Omar Haddad's number"): it is read in lower case.
    first = re.match(r"\s*\S+", goal)
    unopened = goal if first is None else first.group(0).lower() + goal[first.end() :]
    for found in _CAPITALISED.finditer(unopened):
        words = [w for w in found.group(1).removesuffix("'s").split() if w not in _NOT_NAMES]
        if words:
            return " ".join(words).removesuffix("'s")
    return None


#: "after standup", "right after tuesday's product review about hiring", "after my 1:1 with Maria on
#: friday": the event words after "after", up to what follows them (a day, a topic, a clause).
_AFTER_EVENT = re.compile(
    r"\bafter\s+(?P<event>(?:(?:the|my|our|this|[a-z]+['’]s)\s+)?[\w:'’-]+(?:\s+(?!(?:on|about|to|for|with|and|"
    r"at|in|when|tomorrow|today|this|next|is|ends?|finishes)\b)[\w:'’-]+){0,4}?)"
    r"(?=\s*(?:[,.;?!]|$)|\s+(?:on|about|to|for|with|and|at|in|when|tomorrow|today|this|next|is|ends?|finishes)\b)",
    re.I,
)


def event_after(goal: str, today: date) -> str | None:
    """The words naming the event a request's time comes after ("the first free slot after standup"),
    or None: after a day or a clock time ("after 3pm", "after Friday") is no event."""
    found = _AFTER_EVENT.search(goal)
    if found is None:
        return None
    words = found.group("event")
    # What is left once days and times are taken out ("tuesday's product review" keeps its event).
    rest = re.sub(r"\b(?:the|my|our|this|next)\b|['’]s\b", " ", WHEN.sub(" ", words), flags=re.I).strip()
    if not rest or (bare_hour(words) is not None and not re.search(r"[a-z]{3}", rest, re.I)):
        return None
    if re.fullmatch(r"(?:that|it|then|work|hours|lunch|noon|midday|midnight|tomorrow|today)", rest, re.I):
        return None
    return words


def _action(action: Action, done: bool = False) -> dict[str, Any]:
    if action == "unsupported":
        why = (
            "I have no tool for this: I can find free time, list, create, move and cancel events, look "
            "up contacts, read and summarise email, and send email"
        )
    else:
        why = "it has not been done: no tool confirmed it"
    return {"requested": ACTION_NAMES[action], "done": done, "why": why}


def goal_entities(
    goal: str, today: date, action: Action | None = None, contacts: Sequence[Contact] | None = None
) -> dict[str, Any]:
    """What a message states that the tools take by name. With the request's ``action`` (see
    ``requests``), only that action's values, so only its tools run, plus an ``action`` record that
    its write tool replaces once the server confirms it:

    - free_slots: ``within`` (the request itself: the tool reads its day or span) and a length;
    - agenda: the ``period``; schedule: ``summary``, ``day``, ``start_time``, a length and the
      ``name`` of whom to invite (no one: ``addresses`` []);
    - reschedule: ``event_to_move`` (the words before the new time), ``new_day``, ``new_time``,
      ``on_day``; cancel_event: ``event_to_cancel``, ``on_day``;
    - contact: ``name``; read_mail: ``sender`` ('' for anyone), ``about``, ``unread``;
    - send_mail: ``name`` of the recipients, ``message`` (what to say) and ``about``.

    With the tenant's ``contacts``, the people are read against them (``people``): a name that fits
    several is asked about, one in a person's place that fits nobody is ``unknown_people``.

    Without an action: every value the message states (the days, times, people and topics)."""
    if action is not None:
        return _entities_for(action, goal, today, contacts)
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
    _meeting(goal, found)
    return found


_PURPOSE = re.compile(
    r"\b(?:to\s+(?:go\s+over|discuss|talk\s+about|review|plan|sync\s+on)|about|regarding)\s+"
    r"(?:the\s+|our\s+|my\s+)?(.+?)(?=[?.!,;]|\s+(?:on|at|next|this|tomorrow|today|with)\b|$)",
    re.I,
)


#: "on the hiring pipeline", "on our Q1 goals": what a meeting is on (a day is told apart by its reader).
_ON_SUBJECT = re.compile(
    r"\bon\s+(?:the\s+|our\s+|my\s+)(?!\d)(.+?)(?=[?.!,;]|\s+(?:on|at|next|this|tomorrow|today|with)\b|$)",
    re.I,
)


#: "to go through the hiring panel", "to finalise the budget": a purpose clause, when its first word is
#: a verb (WordNet's; "to Maria", "to 3pm" and "to the office" are none).
_INFINITIVE = re.compile(
    r"\bto\s+(?P<verb>[a-z]+)(?:\s+(?:through|over|up|out|into|about|on|with))?\s+"
    r"(?:(?:the|our|my|a|an|some)\s+)?(?P<topic>[a-z].+?)(?=[?.!,;]|\s+(?:on|at|next|this|tomorrow|today|with)\b|$)",
)


#: "for test planning", "for the launch retro": what a meeting is for, up to a day, a time or a place.
_FOR_SUBJECT = re.compile(
    r"\bfor\s+(?:the\s+|our\s+|my\s+)?([a-z][\w-]*(?:\s+[\w-]+){0,3}?)(?=[?.!,;]|\s+(?:on|at|next|this|"
    r"tomorrow|today|with|in|after|before|from|by|and)\b|$)",
    re.I,
)


def _a_subject(words: str, today: date) -> bool:
    """Whether words a meeting is "for" are a subject: no day, time, length, person or pronoun."""
    return not (
        resolve_day(words, today) is not None
        or resolve_time(words) is not None
        or resolve_minutes(words) is not None
        or duckling_parse_time(words)
        or words.split()[0].lower() in _NOT_SUBJECTS
        or words[:1].isupper()
    )


#: People a meeting is "for", not what it is for.
_NOT_SUBJECTS = frozenset(
    {"me", "us", "him", "her", "them", "you", "everyone", "everybody", "all", "both", "it"}
) | {
    "team",
    "whole",
}


def _purpose_clause(goal: str) -> str | None:
    """What an infinitive of purpose names: "to go through the hiring panel" is about "hiring panel"."""
    if not lexicon_available():
        return None
    for found in _INFINITIVE.finditer(goal):
        if wordnet().synsets(found.group("verb"), pos="v"):
            return found.group("topic").strip()
    return None


def _topic(goal: str, today: date) -> str | None:
    """What a meeting is about: "to go over the roadmap", "to go through the hiring panel", or a last
    short clause naming no day, time, length or person ("..., 45 mins, hiring plan"; "...? budget
    stuff")."""
    purpose = _PURPOSE.search(goal)
    if purpose is not None:
        return purpose.group(1).strip()
    clause = _purpose_clause(goal)
    if clause is not None:
        return clause
    subject = _ON_SUBJECT.search(goal)
    if (
        subject is not None
        and resolve_day(subject.group(0), today) is None
        and resolve_time(subject.group(0)) is None
        and not duckling_parse_time(subject.group(0))
    ):
        # "30 min with Omar on the hiring pipeline": "on" a subject, not on a day.
        return subject.group(1).strip()
    purpose_for = _FOR_SUBJECT.search(goal)
    if purpose_for is not None and _a_subject(purpose_for.group(1), today):
        # "an hour with Lucas for test planning": what it is for, not for a day, a length or someone.
        return purpose_for.group(1).strip()
    for clause in reversed(re.split(r"[,?;]", goal)[1:]):
        clause = clause.strip()
        if (
            clause
            and len(clause.split()) <= 5
            and resolve_day(clause, today) is None
            and resolve_time(clause) is None
            and resolve_minutes(clause) is None
        ):
            return clause
    return None


#: The opening of a request to create an event, up to what it names: "could you please set up a 30 min",
#: "Put a", "Add the". What follows, up to a name, a day, a time or a preposition, is the event's kind.
_OPENING = re.compile(
    r"^\s*(?:(?:can|could|would|will)\s+(?:you|u)\s+|please\s+|pls\s+|kindly\s+|hey,?\s+|hi,?\s+)*"
    r"[A-Za-z]+(?:\s+(?:up|in|on|together|down))?\s+(?:me\s+|us\s+)?"
    r"(?:(?:a|an|the|my|our|some|one)\s+)?"
    # "a 30 min", "an hour" (its article the determiner's): a length is no kind of event.
    r"(?:(?:(?:\d+(?:\.\d+)?|half\s+an?|an?|one|two)[\s-]*)?(?:minutes?|mins?|hours?|hrs?|h)\s+(?:long\s+)?)?",
    re.I,
)
_KIND_END = re.compile(
    r"\bw/|\b(?:with|on|at|for|next|this|tomorrow|today|tonight|to|about|regarding|re|in|between|from|and|"
    r"every|by|before|after|(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b|[,.;:?!(]|\d|\s[A-Z]|$",
)
#: What holds an event rather than names its kind ("an invite: sprint demo", "an invite for a 30-minute
#: sync"): the kind is read after it.
_HOLDERS = frozenset(
    {"invite", "invitation", "calendar invite", "meeting invite", "booking", "calendar entry"}
)
_AFTER_HOLDER = re.compile(
    r"^\s*(?::|for|to|about)?\s*(?:(?:a|an|the)\s+)?(?:\d+[\s-]*(?:minutes?|mins?|hours?|hrs?|h)\b[\s-]*)?",
    re.I,
)
_QUOTED = re.compile(r"[\"'‘“]([^\"'’”]{2,60})[\"'’”]")


def event_kind(goal: str) -> str | None:
    """What kind of event a request to create one names, in its own words ("sync", "lunch", "dentist
    appointment", "quarterly review"): a quoted title, else the words after its opening verb up to a
    name, a day, a time or a preposition. None when it names none ("Schedule 30 minutes with David")."""
    quoted = _QUOTED.search(goal)
    if quoted is not None:
        return quoted.group(1).strip()
    invited = _INVITED_TO.search(goal)
    if invited is not None and re.match(r"\s*(?:please\s+)?invite\b", goal, re.I):
        return invited.group(1).strip()
    opening = _OPENING.match(goal)
    if opening is None:
        return None
    rest = goal[opening.end() :]
    end = _KIND_END.search(rest)
    kind = rest[: end.start() if end else len(rest)].strip()
    if kind.lower() in _HOLDERS:
        held = _AFTER_HOLDER.sub("", rest[rest.find(kind) + len(kind) :], count=1)
        end = _KIND_END.search(held)
        kind = held[: end.start() if end else len(held)].strip() or kind
    words = kind.split()
    if not words or len(words) > 4 or (words[0][:1].isupper() and words[0].lower() not in _KIND_WORDS):
        return None
    if words[0].lower() in ("me", "us", "time", "something", "anything", "it", "everyone", "everybody"):
        return None
    return kind


#: Capitalised event kinds at a request's opening that are not names ("Put Lunch with ...").
_KIND_WORDS = frozenset({"lunch", "meeting", "call", "sync", "review", "dinner", "coffee", "standup"})


def event_summary(goal: str, who: str | None, topic: str | None) -> str:
    """An event's title from the request's own words: its kind (or "Meeting"), whom it is with, and
    what it is about ("Sync with Lena Novak", "Meeting with Priya and Tom: roadmap")."""
    kind = event_kind(goal) or "Meeting"
    title = kind[:1].upper() + kind[1:]
    if who and who != "team" and " with " not in f" {title.lower()} ":
        title += f" with {who}"
    if topic and topic.lower() not in title.lower():
        title += f": {topic}"
    return title


def _meeting(goal: str, found: dict[str, Any], topic: str | None = None) -> None:
    meeting = _MEETING.search(goal) or _INVITED_TO.search(goal)
    if topic:
        found["summary"] = topic[:1].upper() + topic[1:]
        if "name" not in found:
            found["addresses"] = []
        return
    if meeting is None:
        return
    what = re.sub(r"\s+(?:with|for|on|at)\b.*$", "", meeting.group(1)).strip()
    summary = what[:1].upper() + what[1:] if what else "Meeting"
    if "name" in found and summary.lower() in ("meeting", "call"):
        summary = f"{summary} with {found['name']}"
    found["summary"] = summary
    if "name" not in found:
        found["addresses"] = []


def _entities_for(
    action: Action, goal: str, today: date, contacts: Sequence[Contact] | None = None
) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def whom(text: str, *, owners: bool) -> str | None:
        """``name`` for find_contacts; names fitting no contact go to ``unknown_people``."""
        if contacts is None:
            return _people(text)
        who, unknown = people_of(text, contacts, owners=owners)
        if unknown:
            found["unknown_people"] = unknown
        several = {
            mention.said: [
                f"{contact.name} ({contact.title})" if contact.title else contact.name
                for contact in mention.contacts
            ]
            for mention in people_named(text, contacts)
            if len(mention.contacts) > 1 and mention.said.lower() != "team"
        }
        if several:
            # "david" fits David Chen and David Okafor: asked with anything else asked first.
            found["ambiguous_people"] = several
        return who

    if action in WRITES or action == "unsupported":
        found["action"] = _action(action)
    minutes = resolve_minutes(goal)
    anchor = event_after(goal, today)
    if action == "free_slots":
        found["within"] = goal
        if minutes is not None:
            found["duration_minutes"] = minutes
        if anchor is not None:
            found["after_event"] = anchor
    elif action == "agenda":
        day = resolve_day(goal, today)
        period = PERIOD_PHRASE.search(goal)
        found["period"] = (
            period.group(0).lower()
            if period
            else day.isoformat()
            if day
            else goal
            if time_window(goal, datetime.now(ZoneInfo("UTC")), direction="future")
            else "this week"
        )
    elif action == "schedule":
        day = resolve_day(goal, today)
        if day is not None:
            found["day"] = day.isoformat()
        else:
            period = PERIOD_PHRASE.search(goal)
            if period is not None:
                found["period"] = period.group(0).lower()
        at = resolve_time(goal)
        # "thursday 10 to 11", "12-1": two hours joined, a span (Duckling reads "10 to 11" as 10:50);
        # "at 10 to 11" stays the clock time said.
        span = clock_span(goal) or clock_span(_BARE_SPAN_NOT_AT.sub(r"from \g<1> to \g<2>", goal))
        if span is not None:
            at = span[0]
        if at is not None:
            found["start_time"] = at.strftime("%H:%M")
        if minutes is None and span is not None:
            # "from 11 to 12": the span is the event's length.
            minutes = (span[1].hour * 60 + span[1].minute) - (span[0].hour * 60 + span[0].minute)
        if minutes is not None:
            found["duration_minutes"] = minutes
        if anchor is not None:
            # "in the first free slot after standup": the start is read from the calendar
            # (``first_free_after``), on the day said or the event's next one; no clock time said.
            found["start_after"] = anchor
            found.pop("start_time", None)
            if "day" in found:
                found["on_day"] = found.pop("day")
            found.pop("period", None)
        who = whom(goal, owners=False)
        if who is not None:
            found["name"] = who
        found["summary"] = event_summary(goal, who, _topic(goal, today))
        if who is None and "unknown_people" not in found:
            found["addresses"] = []
    elif action == "reschedule":
        # "Move <event> [on <day>] to <new day and time>": the words after the last "to" are where.
        parts = _MOVE_TO.split(goal)
        head, tail = (" to ".join(parts[:-1]), parts[-1]) if len(parts) > 1 else (goal, "")
        shift = shift_of(goal)
        if shift is not None:
            minutes = int(shift[0].total_seconds() // 60)
            head, tail = goal[: shift[1]], f"{abs(minutes)} minutes {'earlier' if minutes < 0 else 'later'}"
        elif len(parts) == 1:
            head, tail = _new_time_said(goal, today)
        found["event_words"] = head
        if tail and (
            resolve_day(tail, today) or resolve_time(tail) or shift is not None or _NEXT_TO.search(tail)
        ):
            found["move_to"] = tail
        elif tail and (hour := bare_hour(tail)) is not None:
            # "move the retro to 11": a bare hour is a clock time by the working-day rule (11:00).
            found["move_to"] = hour.strftime("%H:%M")
        on_day = resolve_day(head, today)
        if on_day is not None:
            found["on_day"] = on_day.isoformat()
    elif action == "cancel_event":
        # "drop Friday's retro, half the team is out": the reason after the event names no event.
        found["event_words"] = _REASON.split(goal, maxsplit=1)[0] or goal
        found["cancel_request"] = goal
        on_day = resolve_day(goal, today)
        if on_day is not None:
            found["on_day"] = on_day.isoformat()
    elif action == "contact":
        who = whom(goal, owners=True)
        if who is not None:
            found["name"] = who
    elif action == "read_mail":
        sender = _SENDER.search(goal)
        # "What did David Okafor say about ...", "Did Kate send anything": the person named is the sender.
        named = _people(goal) if sender is None else None
        found["sender"] = (
            sender.group(1) if sender else named if named and named != "team" and " and " not in named else ""
        )
        if contacts is not None:
            # The one contact the request names is searched by address ("john" is John Miller's).
            writers = [
                n for n in people_named(goal, contacts) if len(n.contacts) == 1 and n.contacts[0].emails
            ]
            if len({n.contacts[0].uid for n in writers}) == 1 and (
                not found["sender"] or covers(writers, found["sender"])
            ):
                found["sender"] = writers[0].contacts[0].emails[0]
        about = _ABOUT.search(goal)
        topic = _TOPIC_ON.search(goal)
        if about is not None:
            found["about"] = about.group(1).strip()
        elif topic is not None and resolve_day(topic.group(1), today) is None:
            found["about"] = topic.group(1).strip()
        if _UNREAD.search(goal):
            found["unread"] = True
    elif action == "send_mail":
        # "..., don't send yet" is about the sending, not part of the message.
        said = _SAYING.search(_NOT_YET.sub("", goal))
        # Whom it goes to is named before what it says ("tell David that Maria approved"); a reply
        # goes to whose mail it answers ("reply to david okafor's northwind email: ...").
        head = goal[: said.start()] if said is not None and said.start() else goal
        # "ping everyone who's in it", "mail the retro's attendees": the event's people, as its
        # calendar lists them (``find_attendees``), not contacts named.
        of_event = event_people(head)
        who = None if of_event is not None else whom(head, owners=bool(_NAMED_MAIL.search(head)))
        if of_event is not None:
            found["attendees_of"] = of_event
        if who is not None:
            found["name"] = who
        about = _ABOUT.search(goal)
        if said is not None and said.group("said"):
            found["message"] = said.group("said").strip()
        elif said is not None and said.group("asked"):
            asked = re.sub(r"^to\s+", "", said.group("asked").strip(), flags=re.I)
            found["message"] = (
                f"could you send me {asked[4:]}?"
                if asked.lower().startswith("for ")
                else f"could you {asked}?"
            )
        elif about is not None:
            found["message"] = f"a note about {about.group(1).strip()}"
        elif (
            addressee := who if who is not None else " and ".join(found.get("unknown_people") or []) or None
        ) is not None and (named_at := _named_end(goal, addressee, contacts if who else None)) is not None:
            # "Draft a mail to Mia thanking her for the slides": what follows the name is the message.
            rest = _NOT_YET.sub("", goal[named_at:])
            rest = re.sub(r"^[\s,;:-]*(?:and\s+)?", "", rest).strip()
            # "Write back to John on the Atlas kickoff thread and ask ...": the mail it answers is
            # named there (``reply_to``), not said in it.
            rest = _ON_MAIL.sub("", rest).strip()
            # "write Ben a (quick) note thanking him ...": what the note says follows it.
            rest = re.sub(
                r"^(?:a|an)\s+(?:quick\s+|short\s+)?(?:note|line|mail|email|e-mail|message|heads-up)(?!-)\b\s*",
                "",
                rest,
                flags=re.I,
            )
            asking = _TO_ASK.match(rest)
            if asking is not None:
                # "Email Raj to ask for the signed contract": what follows "to ask" is asked.
                wanted = rest[asking.end() :].rstrip("?.!")
                found["message"] = (
                    f"could you let me know whether {wanted}?"
                    if asking.group("whether")
                    else f"could you send me {wanted[4:]}?"
                    if wanted.lower().startswith("for ")
                    else f"could you {wanted[3:] if wanted.lower().startswith('to ') else wanted}?"
                )
            elif rest and _ASK.match(goal) and rest.lower().startswith("to "):
                # "Ask Sara to send the numbers": the message asks it.
                found["message"] = f"could you {rest[3:].rstrip('?.!')}?"
            elif rest:
                found["message"] = _THANKING.sub("thank you for", rest)
        if found.get("message") and _POLITE_QUESTION.match(goal):
            # "Can you tell Lena that ...?": the question mark is the request's, not the message's.
            found["message"] = found["message"].rstrip("?").rstrip()
        if about is not None:
            found["about"] = about.group(1).strip()
        if (named_mail := _NAMED_MAIL.search(head)) is not None:
            # "Answer Maria's budget mail: ...", "reply to the email from Omar - agreed": the words
            # before what it says name a mail: the reply goes on its thread.
            found["reply_to"] = head[: named_mail.end()].strip(" ,;:-")
    return found


#: A mail named as one: someone's ("Maria's budget mail", "his note") or from someone ("the email
#: from Omar"); the mail a message answers.
#: A mail named as someone's ("john's status update on atlas", "her request"): the words a mail is called.
_MAIL_NOUNS = r"e-?mail|mail|message|note|thread|update|reply|request|question|memo|letter"
_NAMED_MAIL = re.compile(
    rf"(?:['’]s|\b(?:his|her|their))\b[^,;:]*?\b(?:{_MAIL_NOUNS})s?\b|"
    r"\b(?:on|in)\s+(?:the|that|this)\s+[^,;:]*?\b(?:e-?mail|mail|thread)\b|"
    r"\b(?:e-?mail|mail|message|note|thread)\s+(?:from|of)\s+[\w.@'’-]+",
    re.I,
)


#: Where a request's reason begins ("..., Tom is off sick", "... because nobody can make it").
_REASON = re.compile(r"\s*[,;]\s+|\s+[-–—]\s+|\s+(?:because|since|as|cause)\s+", re.I)
#: Where a new time may be said without "to": "happen at 11:30 instead", "on Wednesday instead".
_NEW_AT = re.compile(r"\b(?:on|at|for|around|from)\s+(?=\S)", re.I)
_INSTEAD = re.compile(r"\b(?:instead|rather)\b", re.I)
#: A day said as the event's own ("Friday's retro", "this week's standup"), not where it goes.
_OWN_DAY = re.compile(r"['’]s?\s*$")


def _new_time_said(goal: str, today: date) -> tuple[str, str]:
    """A move's event words and new time when no "to" divides them: the last "at/on <day or time>"
    that states a clock time, or a day with "instead" ("Can the product review happen at 11:30
    instead?", "let's have the budget sync on Wednesday instead"); an event named by its day
    ("Friday's retro") keeps that day. None found: the whole request names the event."""
    for marker in reversed(list(_NEW_AT.finditer(goal))):
        tail = goal[marker.start() :]
        if _OWN_DAY.search(tail.split()[1] if len(tail.split()) > 1 else ""):
            continue
        if resolve_time(tail) is not None or (resolve_day(tail, today) and _INSTEAD.search(tail)):
            return goal[: marker.start()].rstrip(" ,"), tail
    return goal, ""


_THANKING = re.compile(r"^thank(?:ing|s)?\s+(?:her|him|them)\s+for\b", re.I)
_POLITE_QUESTION = re.compile(r"^\s*(?:can|could|would|will)\s+(?:you|u)\b", re.I)


#: Words that name the user's group rather than a person.
_GROUP_WORDS = frozenset({"team", "whole team", "everyone", "everybody"})


def _placed_names(goal: str) -> list[str]:
    """Capitalised names the request's grammar puts in a person's place ("with Zed", "email Sarah",
    "tell Priya and Tom"), whatever the contacts hold."""
    names: list[str] = []
    for found in _PERSON.finditer(goal):
        name = found.group(1)
        if "@" in name or name.lower() in _GROUP_WORDS or name in _NOT_NAMES:
            continue
        names.append(name.removesuffix("'s"))
        cursor = found.end()
        while (more := _AND_MORE.match(goal, cursor)) is not None and more.group(1) not in _NOT_NAMES:
            names.append(more.group(1))
            cursor = more.end()
    return names


def people_of(goal: str, contacts: Sequence[Contact], *, owners: bool) -> tuple[str | None, list[str]]:
    """Whom a request names, read against the contacts: the ``name`` find_contacts takes (each
    person's full name where one contact fits, the words said where several do, "team" for the
    group, addresses as written), and the names in a person's place that fit no contact. Without
    ``owners``, "Maria's" in "the team about Maria's freeze" names what is hers, not a person."""
    others = strangers(goal, contacts)
    named = [
        n
        for n in people_named(goal, contacts)
        if (owners or not re.search(r"['’]s?$", n.said.strip())) and all(n.start != o.start for o in others)
    ]
    parts: list[str] = []
    if _GROUP.search(goal):
        parts.append("team")
    for mention in named:
        parts.append(mention.contacts[0].name if len(mention.contacts) == 1 else mention.said)
    parts.extend(re.findall(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", goal))
    placed = _placed_names(goal)
    for mention in named:
        # "with priya and Zed": the names joined to a contact's are in a person's place too.
        cursor = mention.end
        while (more := _AND_MORE.match(goal, cursor)) is not None and more.group(1) not in _NOT_NAMES:
            placed.append(more.group(1))
            cursor = more.end()
    unknown = [other.said for other in others]
    unknown += [
        name
        for name in placed
        if not covers(named, name) and not covers(others, name) and name.lower() not in _GROUP_WORDS
    ]
    if not named and not unknown and not parts:
        # No contact named and no one in a person's place: a title the address book may still hold.
        return _people(goal), []
    return (" and ".join(dict.fromkeys(parts)) or None), list(dict.fromkeys(unknown))


#: "on the Atlas kickoff thread (and)": the mail a reply answers, before what it says.
_ON_MAIL = re.compile(
    r"^(?:on|in)\s+(?:the|that|this)\s+[^,;:]*?\b(?:e-?mail|mail|thread)\b[\s,;:-]*(?:and\s+)?", re.I
)
_TO_ASK = re.compile(r"^(?:to\s+)?ask\s+(?:(?:him|her|them)\s+)?(?P<whether>(?:if|whether)\s+)?", re.I)
_ASK = re.compile(r"^\s*(?:(?:can|could|would|will)\s+(?:you|u)\s+|please\s+)*ask\b", re.I)


def _named_end(goal: str, who: str, contacts: Sequence[Contact] | None = None) -> int | None:
    """Where the recipients ``who`` lists are named in ``goal``: the end of the first one's mention
    and of those joined to it ("Priya and Tom", "the designer"); without contacts, of the last word of
    their names found."""
    if contacts is not None:
        wanted = set(who.split(" and "))
        mentions = [
            n
            for n in people_named(goal, contacts)
            if n.said in wanted or any(c.name in wanted for c in n.contacts)
        ]
        if mentions:
            joined = mentions[0].end
            for mention in mentions[1:]:
                if not re.fullmatch(r"\s*(?:,|\band\b|&)\s*", goal[joined : mention.start]):
                    break
                joined = mention.end
            return joined
    end: int | None = None
    for part in who.split(" and "):
        for word in part.split():
            found = re.search(rf"\b{re.escape(word)}\b(?:['’]s)?", goal, re.I)
            if found is not None:
                end = max(end or 0, found.end())
    return end
