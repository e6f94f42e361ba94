"""The demo user's mailbox, calendar and contacts, written once into fresh servers through the protocols
themselves (MKCALENDAR / extended MKCOL and PUT for CalDAV and CardDAV, APPEND for IMAP), so what the
assistant later reads is exactly what any client of those servers would see.

The calendar is a working week that repeats (weekly RRULEs from the week the data was written), so "next
Tuesday" looks alike whenever the demo runs; Tuesday afternoon holds a conflict. The address book has two
Davids and a team of fourteen; the mailbox has a thread from John about the Atlas project.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import fcntl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from email.message import EmailMessage
from pathlib import Path

import aioimaplib
import httpx

from master_agent.domains.assistant.local_servers import LocalEndpoints, LocalServers
from master_agent.domains.assistant.providers import host_port

DOMAIN = "acme.example"


@dataclass(frozen=True)
class DemoContact:
    uid: str
    name: str
    email: str
    title: str
    team: bool = True
    phone: str | None = None


CONTACTS: tuple[DemoContact, ...] = (
    DemoContact("david-chen", "David Chen", f"david.chen@{DOMAIN}", "Engineering Lead", phone="+1 555 0101"),
    DemoContact(
        "david-okafor", "David Okafor", f"david.okafor@{DOMAIN}", "Sales Director", phone="+1 555 0102"
    ),
    DemoContact("john-miller", "John Miller", f"john.miller@{DOMAIN}", "Project Manager"),
    DemoContact("priya-shah", "Priya Shah", f"priya.shah@{DOMAIN}", "Product Manager"),
    DemoContact("tom-becker", "Tom Becker", f"tom.becker@{DOMAIN}", "Designer"),
    DemoContact("lena-novak", "Lena Novak", f"lena.novak@{DOMAIN}", "Engineer"),
    DemoContact("omar-haddad", "Omar Haddad", f"omar.haddad@{DOMAIN}", "Engineer"),
    DemoContact("sara-kim", "Sara Kim", f"sara.kim@{DOMAIN}", "Data Analyst"),
    DemoContact("ben-adler", "Ben Adler", f"ben.adler@{DOMAIN}", "Engineer"),
    DemoContact("mia-rossi", "Mia Rossi", f"mia.rossi@{DOMAIN}", "Marketing Lead"),
    DemoContact("noah-weber", "Noah Weber", f"noah.weber@{DOMAIN}", "Support Lead"),
    DemoContact("emma-dubois", "Emma Dubois", f"emma.dubois@{DOMAIN}", "Engineer"),
    DemoContact("lucas-silva", "Lucas Silva", f"lucas.silva@{DOMAIN}", "QA Engineer"),
    DemoContact("hana-sato", "Hana Sato", f"hana.sato@{DOMAIN}", "Recruiter"),
    DemoContact(
        "maria-lopez", "Maria Lopez", f"maria.lopez@{DOMAIN}", "CFO", team=False, phone="+1 555 0199"
    ),
    DemoContact("kate-jones", "Kate Jones", "kate@jones-consulting.example", "Consultant", team=False),
)
TEAM = tuple(contact for contact in CONTACTS if contact.team)


@dataclass(frozen=True)
class WeeklyEvent:
    uid: str
    summary: str
    weekdays: tuple[str, ...]
    """RRULE BYDAY values: MO TU WE TH FR."""
    start: time
    minutes: int
    attendees: tuple[str, ...] = ()


WEEK: tuple[WeeklyEvent, ...] = (
    WeeklyEvent("standup", "Team standup", ("MO", "TU", "WE", "TH", "FR"), time(9, 30), 15),
    WeeklyEvent("planning", "Weekly planning", ("MO",), time(10, 0), 60, ("priya.shah",)),
    WeeklyEvent("product-review", "Product review", ("TU",), time(10, 0), 60, ("priya.shah", "tom.becker")),
    WeeklyEvent("customer-call", "Customer call: Northwind", ("TU",), time(13, 0), 90, ("david.okafor",)),
    # Overlaps the customer call: the conflict the seed's calendar has.
    WeeklyEvent("budget-sync", "Budget sync", ("TU",), time(14, 0), 60, ("maria.lopez",)),
    WeeklyEvent("design-review", "Design review", ("WE",), time(11, 0), 60, ("tom.becker", "lena.novak")),
    WeeklyEvent("one-on-one", "1:1 with Maria", ("TH",), time(15, 0), 60, ("maria.lopez",)),
    WeeklyEvent("retro", "Sprint retro", ("FR",), time(16, 0), 60),
)


@dataclass(frozen=True)
class DemoMail:
    sender: DemoContact | str
    subject: str
    body: str
    days_ago: int
    reply_to_subject: str | None = None


def _by_uid(uid: str) -> DemoContact:
    return next(contact for contact in CONTACTS if contact.uid == uid)


MAILS: tuple[DemoMail, ...] = (
    DemoMail(
        _by_uid("john-miller"),
        "Project Atlas kickoff",
        "Hi, Atlas kicks off on Monday. Scope: migrate the billing service to the new platform by the end "
        "of the quarter. David Chen leads engineering; Priya owns the roadmap. Budget: 120k.",
        12,
    ),
    DemoMail(
        _by_uid("john-miller"),
        "Re: Project Atlas kickoff",
        "Status: the data model is done and the first two services are migrated. We are one week behind "
        "on the payment adapter because the vendor's sandbox was down.",
        6,
        "Project Atlas kickoff",
    ),
    DemoMail(
        _by_uid("john-miller"),
        "Atlas: risk on the payment adapter",
        "Risk: if the vendor sandbox stays unstable, the cut-over slips two weeks. Proposal: mock the "
        "vendor for integration tests and keep the date. I need a decision by Friday.",
        2,
    ),
    DemoMail(
        _by_uid("maria-lopez"),
        "Budget freeze from next month",
        "All discretionary spending is frozen from the first of next month until the board approves the "
        "new plan. Please let your teams know.",
        1,
    ),
    DemoMail(
        _by_uid("david-okafor"),
        "Northwind renewal",
        "Northwind wants a 10% discount for a three-year renewal. Can we discuss on Tuesday's call?",
        3,
    ),
    DemoMail("newsletter@events.example", "This week in tech", "Ten links you missed this week.", 4),
)


def week_start(today: date) -> date:
    return today - timedelta(days=today.weekday())


def _calendar(event: WeeklyEvent, first_week: date) -> str:
    offsets = {"MO": 0, "TU": 1, "WE": 2, "TH": 3, "FR": 4}
    first_day = first_week + timedelta(days=offsets[event.weekdays[0]])
    start = datetime.combine(first_day, event.start, tzinfo=UTC)
    end = start + timedelta(minutes=event.minutes)
    stamp = f"{start:%Y%m%dT%H%M%SZ}"
    attendees = "".join(
        f"ATTENDEE;CN={name.replace('.', ' ').title()}:mailto:{name}@{DOMAIN}\r\n" for name in event.attendees
    )
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//master-agent//demo//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{event.uid}@demo\r\nDTSTAMP:{stamp}\r\nDTSTART:{stamp}\r\nDTEND:{end:%Y%m%dT%H%M%SZ}\r\n"
        f"RRULE:FREQ=WEEKLY;BYDAY={','.join(event.weekdays)}\r\nSUMMARY:{event.summary}\r\n{attendees}"
        "END:VEVENT\r\nEND:VCALENDAR\r\n"
    )


def _vcard(contact: DemoContact) -> str:
    family, _, given = contact.name.partition(" ")[::-1]
    lines = [
        "BEGIN:VCARD",
        "VERSION:3.0",
        f"UID:{contact.uid}",
        f"FN:{contact.name}",
        f"N:{family};{given};;;",
        f"EMAIL;TYPE=work:{contact.email}",
        f"TITLE:{contact.title}",
        "ORG:Acme" if contact.email.endswith(DOMAIN) else "ORG:Jones Consulting",
    ]
    if contact.phone:
        lines.append(f"TEL;TYPE=work:{contact.phone}")
    if contact.team:
        lines.append("CATEGORIES:Team")
    return "\r\n".join([*lines, "END:VCARD"]) + "\r\n"


MKCALENDAR = """<?xml version="1.0" encoding="utf-8"?>
<C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:set><D:prop><D:displayname>Calendar</D:displayname></D:prop></D:set>
</C:mkcalendar>"""
MKADDRESSBOOK = """<?xml version="1.0" encoding="utf-8"?>
<D:mkcol xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav">
  <D:set><D:prop><D:resourcetype><D:collection/><C:addressbook/></D:resourcetype>
  <D:displayname>Contacts</D:displayname></D:prop></D:set>
</D:mkcol>"""


async def seed(endpoints: LocalEndpoints, now: datetime) -> None:
    """Write the demo data into fresh servers."""
    dav = endpoints.caldav
    async with httpx.AsyncClient(auth=(dav.username, dav.password.get_secret_value()), timeout=30) as client:
        for url, method, body in (
            (endpoints.caldav.url, "MKCALENDAR", MKCALENDAR),
            (endpoints.carddav.url, "MKCOL", MKADDRESSBOOK),
        ):
            response = await client.request(
                method, url, content=body, headers={"Content-Type": "application/xml"}
            )
            # 405: it exists already (a seeding interrupted after this step).
            if response.status_code not in (201, 405):
                response.raise_for_status()
        first_week = week_start(now.date()) - timedelta(weeks=4)
        for event in WEEK:
            response = await client.put(
                f"{endpoints.caldav.url}{event.uid}.ics",
                content=_calendar(event, first_week),
                headers={"Content-Type": "text/calendar; charset=utf-8"},
            )
            response.raise_for_status()
        for contact in CONTACTS:
            response = await client.put(
                f"{endpoints.carddav.url}{contact.uid}.vcf",
                content=_vcard(contact),
                headers={"Content-Type": "text/vcard; charset=utf-8"},
            )
            response.raise_for_status()
    await _seed_mailbox(endpoints, now)


async def _seed_mailbox(endpoints: LocalEndpoints, now: datetime) -> None:
    host, port, _ = host_port("imap", endpoints.imap.url)
    client = aioimaplib.IMAP4(host=host, port=port, timeout=30)
    await client.wait_hello_from_server()
    login = await client.login(endpoints.imap.username, endpoints.imap.password.get_secret_value())
    if login.result != "OK":
        raise RuntimeError(f"the local IMAP server refused the demo login: {login.lines}")
    ids: dict[str, str] = {}
    for index, mail in enumerate(MAILS):
        message = EmailMessage()
        sender = mail.sender
        message["From"] = (
            email.utils.formataddr((sender.name, sender.email)) if isinstance(sender, DemoContact) else sender
        )
        message["To"] = endpoints.address
        message["Subject"] = mail.subject
        sent = now - timedelta(days=mail.days_ago, hours=index)
        message["Date"] = email.utils.format_datetime(sent)
        message_id = f"<demo-{index}@{DOMAIN}>"
        message["Message-ID"] = message_id
        if mail.reply_to_subject and mail.reply_to_subject in ids:
            message["In-Reply-To"] = ids[mail.reply_to_subject]
        ids[mail.subject] = message_id
        message.set_content(mail.body)
        appended = await client.append(message.as_bytes(), mailbox="INBOX", flags=None, date=sent)
        if appended.result != "OK":
            raise RuntimeError(f"the local IMAP server refused a demo message: {appended.lines}")
    await client.logout()


@contextlib.asynccontextmanager
async def _file_lock(path: Path) -> AsyncIterator[None]:
    with path.open("w") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


async def start_demo_servers(data_dir: Path, user: str, now: datetime) -> LocalEndpoints:
    """``user``'s endpoints on the local servers of ``data_dir`` (started if they do not answer), holding
    the demo data (written once per user, by whichever process gets there first)."""
    servers = LocalServers(data_dir)
    endpoints, fresh = await asyncio.to_thread(servers.ensure_running, user)
    if fresh:
        async with _file_lock(servers.root / "seed.lock"):
            if not servers.seeded(user):
                await seed(endpoints, now)
                servers.mark_seeded(user)
    return endpoints
