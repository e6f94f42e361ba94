"""The assistant's providers: email over IMAP (read, search) and SMTP (send), the calendar over CalDAV,
contacts over CardDAV, each a small async client of the standard protocol, so any server a user already
runs works (and the embedded local servers of ``local_servers`` in tests and the demo).

Every failure is a ``ProviderError`` with a kind the master agent can decide on (``api_down``: nothing
answers; ``permission``: wrong credentials or no right; ``not_found``; ``invalid_input``; ``timeout``;
``conflict``) and the provider and operation it came from.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import re
import ssl
import uuid
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from email.message import EmailMessage
from typing import Any, Literal
from urllib.parse import urlsplit
from xml.etree.ElementTree import Element

import aioimaplib
import aiosmtplib
import httpx
import icalendar
import vobject
from defusedxml import ElementTree
from pydantic import BaseModel, Field, SecretStr

from master_agent.errors import ToolErrorType, ToolFailure

ProviderName = Literal["imap", "smtp", "caldav", "carddav"]


def _imap_failure(operation: str, error: BaseException) -> ProviderError:
    """An IMAP session that stopped answering (timeout) or was closed by the server (abort)."""
    if isinstance(error, TimeoutError):
        return ProviderError("timeout", "imap", operation, "no answer in time")
    return ProviderError("api_down", "imap", operation, f"the server closed the connection ({error})")


class ProviderError(ToolFailure):
    """A provider's failure, typed for the master agent's decision matrix."""

    def __init__(self, kind: ToolErrorType, provider: ProviderName, operation: str, detail: str) -> None:
        super().__init__(
            kind,
            f"{provider} {operation}: {kind}: {detail}",
            {"provider": provider, "operation": operation, "detail": detail},
        )
        self.kind: ToolErrorType = kind
        self.provider: ProviderName = provider
        self.operation = operation
        self.detail = detail


class Endpoint(BaseModel):
    """Where one provider's server is and who logs in. ``url``: ``imap://host:port``,
    ``imaps://host:port``, ``smtp://host:port`` (``smtps://`` for implicit TLS), or the http(s) URL of
    the calendar or address-book collection."""

    url: str
    username: str
    password: SecretStr
    timeout_s: float = Field(default=10.0, gt=0)


class NewEvent(BaseModel):
    summary: str = Field(min_length=1)
    start: datetime
    end: datetime
    attendees: list[str] = Field(default_factory=list)
    """Attendees' email addresses."""
    organizer: str | None = None
    location: str | None = None
    description: str | None = None


class CalendarEvent(NewEvent):
    """An event as the server has it (an event someone else made may have no summary)."""

    uid: str
    summary: str = ""


class Contact(BaseModel):
    uid: str
    name: str
    emails: list[str] = Field(default_factory=list)
    phones: list[str] = Field(default_factory=list)
    organization: str | None = None
    title: str | None = None
    categories: list[str] = Field(default_factory=list)


class MailMessage(BaseModel):
    uid: int
    message_id: str | None
    sender: str
    sender_name: str | None
    to: list[str]
    cc: list[str] = Field(default_factory=list)
    subject: str
    date: datetime | None
    body: str
    in_reply_to: str | None = None


class OutgoingMail(BaseModel):
    sender: str
    to: list[str] = Field(min_length=1)
    cc: list[str] = Field(default_factory=list)
    subject: str
    body: str
    in_reply_to: str | None = None
    """The Message-ID of the mail this one answers (a reply stays on that mail's thread)."""
    references: list[str] = Field(default_factory=list)
    """The thread's Message-IDs, oldest first, the answered mail's last."""


class SentMail(BaseModel):
    message_id: str
    recipients: list[str]
    """Every address the server accepted."""
    refused: dict[str, str] = Field(default_factory=dict)
    """Addresses the server refused, with its answer."""
    raw: bytes = Field(default=b"", exclude=True, repr=False)
    """The message as sent (for the Sent folder; never in a tool's answer)."""


def _as_utc(value: date | datetime) -> datetime:
    if not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _ical_utc(value: datetime) -> str:
    return _as_utc(value).strftime("%Y%m%dT%H%M%SZ")


def _mailto(value: Any) -> str:
    return re.sub(r"^mailto:", "", str(value), flags=re.IGNORECASE)


def _http_error(provider: ProviderName, operation: str, error: Exception) -> ProviderError:
    if isinstance(error, httpx.TimeoutException):
        return ProviderError("timeout", provider, operation, f"no answer in time ({type(error).__name__})")
    return ProviderError("api_down", provider, operation, f"cannot reach the server ({error})")


def _status_error(provider: ProviderName, operation: str, response: httpx.Response) -> ProviderError:
    status = response.status_code
    kind: ToolErrorType
    if status in (401, 403):
        kind = "permission"
    elif status == 404:
        kind = "not_found"
    elif status in (409, 412):
        kind = "conflict"
    elif status == 408 or status == 504:
        kind = "timeout"
    elif status >= 500:
        kind = "api_down"
    else:
        kind = "invalid_input"
    return ProviderError(kind, provider, operation, f"HTTP {status} from {response.request.url}")


DAV = "{DAV:}"
CALDAV = "{urn:ietf:params:xml:ns:caldav}"
CARDDAV = "{urn:ietf:params:xml:ns:carddav}"


class _DavCollection:
    """A WebDAV collection (a calendar or an address book) reached with one login."""

    provider: ProviderName

    def __init__(self, endpoint: Endpoint, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.endpoint = endpoint
        self.url = endpoint.url if endpoint.url.endswith("/") else endpoint.url + "/"
        self.transport = transport

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            auth=(self.endpoint.username, self.endpoint.password.get_secret_value()),
            timeout=self.endpoint.timeout_s,
            transport=self.transport,
        )

    async def _request(
        self,
        operation: str,
        method: str,
        url: str,
        body: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        try:
            async with self._client() as client:
                response = await client.request(method, url, content=body, headers=headers)
        except httpx.HTTPError as error:
            raise _http_error(self.provider, operation, error) from error
        if response.status_code >= 400:
            raise _status_error(self.provider, operation, response)
        return response

    async def _report_root(self, operation: str, body: str) -> Element:
        """The parsed answer of a REPORT on this collection."""
        response = await self._request(
            operation,
            "REPORT",
            self.url,
            body,
            {"Depth": "1", "Content-Type": "application/xml; charset=utf-8"},
        )
        try:
            root: Element = ElementTree.fromstring(response.content)
        except ElementTree.ParseError as error:
            raise ProviderError(
                "api_down", self.provider, operation, f"unreadable answer: {error}"
            ) from error
        return root

    async def _report(self, operation: str, body: str, data_tag: str) -> list[str]:
        """The data (calendar-data or address-data) of every item a REPORT answers with."""
        root = await self._report_root(operation, body)
        return [node.text for node in root.iter(data_tag) if node.text]


class CalDavCalendar(_DavCollection):
    """One CalDAV calendar collection (RFC 4791)."""

    provider: ProviderName = "caldav"

    async def events(self, start: datetime, end: datetime) -> list[CalendarEvent]:
        """Events overlapping [start, end), recurring ones expanded by the server, by start."""
        window = f'start="{_ical_utc(start)}" end="{_ical_utc(end)}"'
        body = f"""<?xml version="1.0" encoding="utf-8"?>
<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:prop><C:calendar-data><C:expand {window}/></C:calendar-data></D:prop>
  <C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">
    <C:time-range {window}/>
  </C:comp-filter></C:comp-filter></C:filter>
</C:calendar-query>"""
        found: list[CalendarEvent] = []
        for data in await self._report("events", body, f"{CALDAV}calendar-data"):
            found.extend(_parse_events(data))
        lower, upper = _as_utc(start), _as_utc(end)
        return sorted((e for e in found if e.start < upper and e.end > lower), key=lambda e: (e.start, e.uid))

    async def create_event(self, event: NewEvent) -> CalendarEvent:
        if event.end <= event.start:
            raise ProviderError(
                "invalid_input", "caldav", "create_event", "the event must end after it starts"
            )
        uid = f"{uuid.uuid4()}@master-agent"
        calendar = icalendar.Calendar()
        calendar.add("prodid", "-//master-agent//assistant//EN")
        calendar.add("version", "2.0")
        vevent = icalendar.Event()
        vevent.add("uid", uid)
        vevent.add("dtstamp", datetime.now(UTC))
        vevent.add("dtstart", _as_utc(event.start))
        vevent.add("dtend", _as_utc(event.end))
        vevent.add("summary", event.summary)
        if event.location:
            vevent.add("location", event.location)
        if event.description:
            vevent.add("description", event.description)
        if event.organizer:
            vevent.add("organizer", f"mailto:{event.organizer}")
        for attendee in event.attendees:
            vevent.add(
                "attendee", f"mailto:{attendee}", parameters={"ROLE": "REQ-PARTICIPANT", "RSVP": "TRUE"}
            )
        calendar.add_component(vevent)
        await self._request(
            "create_event",
            "PUT",
            f"{self.url}{uid}.ics",
            calendar.to_ical().decode(),
            # Never overwrite: a new uid that exists already is a conflict, not an update.
            {"Content-Type": "text/calendar; charset=utf-8", "If-None-Match": "*"},
        )
        return CalendarEvent(uid=uid, **event.model_dump())

    async def _resource(self, operation: str, uid: str) -> tuple[str, str | None, icalendar.Calendar]:
        """The href, ETag and calendar of the resource holding the event ``uid`` (unexpanded)."""
        term = uid.replace("&", "&amp;").replace("<", "&lt;")
        body = f"""<?xml version="1.0" encoding="utf-8"?>
<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:prop><D:getetag/><C:calendar-data/></D:prop>
  <C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">
    <C:prop-filter name="UID"><C:text-match collation="i;octet" match-type="equals">{term}</C:text-match></C:prop-filter>
  </C:comp-filter></C:comp-filter></C:filter>
</C:calendar-query>"""
        root = await self._report_root(operation, body)
        for item in root.iter(f"{DAV}response"):
            href = item.findtext(f"{DAV}href")
            data = next((node.text for node in item.iter(f"{CALDAV}calendar-data") if node.text), None)
            if href and data:
                etag = next((node.text for node in item.iter(f"{DAV}getetag") if node.text), None)
                absolute = str(httpx.URL(self.url).join(href))
                return absolute, etag, icalendar.Calendar.from_ical(data)
        raise ProviderError("not_found", "caldav", operation, f"no event with uid {uid!r}")

    async def _put(self, operation: str, href: str, etag: str | None, calendar: icalendar.Calendar) -> None:
        # If-Match: a change made meanwhile by another client is a conflict, never overwritten.
        headers = {"Content-Type": "text/calendar; charset=utf-8", **({"If-Match": etag} if etag else {})}
        await self._request(operation, "PUT", href, calendar.to_ical().decode(), headers)

    async def move_occurrence(self, event: CalendarEvent, start: datetime, end: datetime) -> CalendarEvent:
        """Move one occurrence of ``event`` (as ``events`` returned it) to [start, end). A single event
        is changed in place; one occurrence of a recurring event is excluded from its series (EXDATE)
        and made an event of its own at the new time, with the same summary and attendees."""
        if end <= start:
            raise ProviderError("invalid_input", "caldav", "move_event", "the event must end after it starts")
        href, etag, calendar = await self._resource("move_event", event.uid)
        master = next(iter(calendar.walk("VEVENT")))
        if "rrule" not in master:
            for key in ("dtstart", "dtend", "duration"):
                master.pop(key, None)
            master.add("dtstart", _as_utc(start))
            master.add("dtend", _as_utc(end))
            sequence = int(master.get("sequence", 0)) + 1
            master.pop("sequence", None)
            master.add("sequence", sequence)
            await self._put("move_event", href, etag, calendar)
            return CalendarEvent(**{**event.model_dump(), "start": _as_utc(start), "end": _as_utc(end)})
        master.add("exdate", _as_utc(event.start))
        await self._put("move_event", href, etag, calendar)
        moved = NewEvent(**{**event.model_dump(exclude={"uid"}), "start": start, "end": end})
        return await self.create_event(moved)

    async def cancel_occurrence(self, event: CalendarEvent) -> None:
        """Remove ``event`` (as ``events`` returned it): a single event is deleted, one occurrence of a
        recurring event is excluded from its series (EXDATE)."""
        href, etag, calendar = await self._resource("cancel_event", event.uid)
        master = next(iter(calendar.walk("VEVENT")))
        if "rrule" in master:
            master.add("exdate", _as_utc(event.start))
            await self._put("cancel_event", href, etag, calendar)
            return
        await self._request("cancel_event", "DELETE", href, None, {"If-Match": etag} if etag else None)


def _parse_events(data: str) -> list[CalendarEvent]:
    events = []
    for component in icalendar.Calendar.from_ical(data).walk("VEVENT"):
        start = component.decoded("dtstart")
        if "dtend" in component:
            end = component.decoded("dtend")
        elif "duration" in component:
            end = start + component.decoded("duration")
        else:
            end = start + (timedelta(days=1) if not isinstance(start, datetime) else timedelta(0))
        attendees = component.get("attendee", [])
        if not isinstance(attendees, list):
            attendees = [attendees]
        organizer = component.get("organizer")
        events.append(
            CalendarEvent(
                uid=str(component.get("uid")),
                summary=str(component.get("summary", "")),
                start=_as_utc(start),
                end=_as_utc(end),
                attendees=[_mailto(a) for a in attendees],
                organizer=_mailto(organizer) if organizer else None,
                location=str(component["location"]) if "location" in component else None,
                description=str(component["description"]) if "description" in component else None,
            )
        )
    return events


class CardDavContacts(_DavCollection):
    """One CardDAV address book (RFC 6352)."""

    provider: ProviderName = "carddav"

    async def search(self, text: str) -> list[Contact]:
        """Contacts whose name, email, category or title contains ``text`` (case-insensitive, by the
        server)."""
        if not text.strip():
            raise ProviderError("invalid_input", "carddav", "search", "give a name, an address or a group")
        term = text.strip().replace("&", "&amp;").replace("<", "&lt;")
        matches = "".join(
            f'<C:prop-filter name="{prop}"><C:text-match collation="i;unicode-casemap" '
            f'match-type="contains">{term}</C:text-match></C:prop-filter>'
            for prop in ("FN", "EMAIL", "CATEGORIES", "TITLE")
        )
        return await self._query("search", f'<C:filter test="anyof">{matches}</C:filter>')

    async def everyone(self) -> list[Contact]:
        return await self._query("everyone", "")

    async def _query(self, operation: str, filter_xml: str) -> list[Contact]:
        body = f"""<?xml version="1.0" encoding="utf-8"?>
<C:addressbook-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav">
  <D:prop><C:address-data/></D:prop>{filter_xml}
</C:addressbook-query>"""
        cards = await self._report(operation, body, f"{CARDDAV}address-data")
        return sorted((_parse_card(card) for card in cards), key=lambda c: (c.name, c.uid))


def _parse_card(data: str) -> Contact:
    card = vobject.readOne(data)
    contents = card.contents

    def values(key: str) -> list[str]:
        return [str(line.value) for line in contents.get(key, [])]

    organization = contents.get("org")
    categories: list[str] = []
    for line in contents.get("categories", []):
        categories.extend(str(v) for v in (line.value if isinstance(line.value, list) else [line.value]))
    return Contact(
        uid=values("uid")[0] if "uid" in contents else str(card.fn.value),
        name=str(card.fn.value),
        emails=values("email"),
        phones=values("tel"),
        organization=" ".join(organization[0].value) if organization else None,
        title=values("title")[0] if "title" in contents else None,
        categories=categories,
    )


def host_port(provider: ProviderName, url: str) -> tuple[str, int, bool]:
    """Host, port and implicit TLS of ``imap(s)://`` or ``smtp(s)://`` (the standard ports by default)."""
    parts = urlsplit(url)
    if not parts.hostname or parts.scheme not in (provider, provider + "s"):
        raise ProviderError("invalid_input", provider, "connect", f"not a {provider}(s):// address: {url!r}")
    secure = parts.scheme.endswith("s")
    defaults = {"imap": 143, "imaps": 993, "smtp": 25, "smtps": 465}
    return parts.hostname, parts.port or defaults[parts.scheme], secure


class ImapMailbox:
    """One IMAP account's mailbox (RFC 3501); reading never marks a message seen (BODY.PEEK)."""

    def __init__(self, endpoint: Endpoint, mailbox: str = "INBOX") -> None:
        self.endpoint = endpoint
        self.mailbox = mailbox

    async def search(
        self,
        sender: str | None = None,
        text: str | None = None,
        since: date | None = None,
        limit: int = 20,
        unseen: bool = False,
    ) -> list[MailMessage]:
        """Messages matching every given criterion (``unseen``: only those not read yet), newest
        first (at most ``limit``)."""
        criteria: list[str] = ["UNSEEN"] if unseen else []
        for key, value in (("FROM", sender), ("TEXT", text)):
            if value is not None:
                if not value.strip() or '"' in value or "\\" in value or "\r" in value or "\n" in value:
                    raise ProviderError("invalid_input", "imap", "search", f"{key.lower()}: {value!r}")
                criteria.append(f'{key} "{value.strip()}"')
        if since is not None:
            criteria.append(f"SINCE {since.strftime('%d-%b-%Y')}")
        client = self._client()
        try:
            await self._log_in(client)
            selected = await client.select(self.mailbox)
            if selected.result != "OK":
                raise ProviderError(
                    "not_found", "imap", "select", f"{self.mailbox}: {_imap_text(selected.lines)}"
                )
            found = await client.uid_search(" ".join(criteria) or "ALL")
            if found.result != "OK":
                raise ProviderError("invalid_input", "imap", "search", _imap_text(found.lines))
            uids = sorted((int(u) for u in found.lines[0].split()), reverse=True)[:limit]
            messages = [await self._fetch(client, uid) for uid in uids]
            await client.logout()
            return [m for m in messages if m is not None]
        except (TimeoutError, aioimaplib.Abort) as error:
            raise _imap_failure("search", error) from error

    def _client(self) -> aioimaplib.IMAP4:
        host, port, secure = host_port("imap", self.endpoint.url)
        if secure:
            return aioimaplib.IMAP4_SSL(host=host, port=port, timeout=self.endpoint.timeout_s)
        return aioimaplib.IMAP4(host=host, port=port, timeout=self.endpoint.timeout_s)

    async def _log_in(self, client: aioimaplib.IMAP4) -> None:
        """The server's greeting, then the account's login (a refused one is a permission error)."""
        try:
            await client.wait_hello_from_server()
        except (OSError, TimeoutError) as error:
            raise self._connect_error(error) from error
        login = await client.login(self.endpoint.username, self.endpoint.password.get_secret_value())
        if login.result != "OK":
            raise ProviderError("permission", "imap", "login", _imap_text(login.lines))

    async def keep_sent(self, raw: bytes, message_id: str, folder: str = "Sent") -> int:
        """``raw`` stored in ``folder`` (IMAP APPEND, made with CREATE when missing, flagged seen) and
        read back by its Message-ID: the UID it has there. SMTP has no sent folder; this is the
        mailbox's record that the message went out, as mail clients keep it."""
        if not re.fullmatch(r"<[^<>\s\"\\]+>", message_id):
            raise ProviderError("invalid_input", "imap", "append", f"message id: {message_id!r}")
        client = self._client()
        try:
            await self._log_in(client)
            if (await client.select(folder)).result != "OK":
                made = await client.create(folder)
                if made.result != "OK":
                    raise ProviderError(
                        "invalid_input", "imap", "create", f"{folder}: {_imap_text(made.lines)}"
                    )
            appended = await client.append(raw, mailbox=folder, flags="(\\Seen)")
            if appended.result != "OK":
                raise ProviderError("invalid_input", "imap", "append", _imap_text(appended.lines))
            selected = await client.select(folder)
            if selected.result != "OK":
                raise ProviderError("not_found", "imap", "select", f"{folder}: {_imap_text(selected.lines)}")
            found = await client.uid_search(f'HEADER Message-ID "{message_id}"')
            uids = found.lines[0].split() if found.result == "OK" and found.lines else []
            await client.logout()
            if not uids:
                raise ProviderError("not_found", "imap", "search", f"{message_id} is not in {folder}")
            return int(uids[-1])
        except (TimeoutError, aioimaplib.Abort) as error:
            raise _imap_failure("append", error) from error

    def _connect_error(self, error: BaseException) -> ProviderError:
        if isinstance(error, TimeoutError):
            return ProviderError("timeout", "imap", "connect", "no greeting in time")
        return ProviderError("api_down", "imap", "connect", f"cannot reach {self.endpoint.url} ({error})")

    async def _fetch(self, client: aioimaplib.IMAP4, uid: int) -> MailMessage | None:
        response = await client.uid("fetch", str(uid), "(BODY.PEEK[])")
        raw = next(
            (line for line in response.lines if isinstance(line, bytes | bytearray) and len(line) > 40), None
        )
        if response.result != "OK" or raw is None:
            return None
        return _parse_mail(uid, bytes(raw))


def _imap_text(lines: Iterable[Any]) -> str:
    return " ".join(
        line.decode(errors="replace") if isinstance(line, bytes | bytearray) else str(line) for line in lines
    )


def _parse_mail(uid: int, raw: bytes) -> MailMessage:
    message = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    name, address = email.utils.parseaddr(str(message.get("From", "")))
    body_part = message.get_body(preferencelist=("plain", "html"))
    body = body_part.get_content() if body_part is not None else ""
    sent = message.get("Date")
    return MailMessage(
        uid=uid,
        message_id=str(message["Message-ID"]) if message["Message-ID"] else None,
        sender=address,
        sender_name=name or None,
        to=[a for _, a in email.utils.getaddresses([str(v) for v in message.get_all("To", [])])],
        cc=[a for _, a in email.utils.getaddresses([str(v) for v in message.get_all("Cc", [])])],
        subject=str(message.get("Subject", "")),
        date=_as_utc(email.utils.parsedate_to_datetime(str(sent))) if sent else None,
        body=str(body).strip(),
        in_reply_to=str(message["In-Reply-To"]) if message["In-Reply-To"] else None,
    )


class SmtpSender:
    """Sends through one SMTP account (RFC 5321), logging in when the account has a user."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    async def send(self, mail: OutgoingMail) -> SentMail:
        host, port, secure = host_port("smtp", self.endpoint.url)
        message = EmailMessage()
        message["From"] = mail.sender
        message["To"] = ", ".join(mail.to)
        if mail.cc:
            message["Cc"] = ", ".join(mail.cc)
        message["Subject"] = mail.subject
        message["Date"] = email.utils.formatdate(localtime=False)
        message_id = email.utils.make_msgid(domain="master-agent")
        message["Message-ID"] = message_id
        if mail.in_reply_to:
            message["In-Reply-To"] = mail.in_reply_to
            message["References"] = " ".join(dict.fromkeys([*mail.references, mail.in_reply_to]))
        message.set_content(mail.body)
        try:
            refused, _ = await aiosmtplib.send(
                message,
                hostname=host,
                port=port,
                username=self.endpoint.username or None,
                password=self.endpoint.password.get_secret_value() or None,
                use_tls=secure,
                start_tls=False if secure else None,
                timeout=self.endpoint.timeout_s,
            )
        except aiosmtplib.SMTPAuthenticationError as error:
            raise ProviderError("permission", "smtp", "send", f"login refused: {error.message}") from error
        except aiosmtplib.SMTPRecipientsRefused as error:
            raise ProviderError(
                "invalid_input", "smtp", "send", f"every recipient was refused: {error}"
            ) from error
        except aiosmtplib.SMTPTimeoutError as error:
            raise ProviderError("timeout", "smtp", "send", "no answer in time") from error
        except (
            aiosmtplib.SMTPConnectError,
            aiosmtplib.SMTPServerDisconnected,
            OSError,
            ssl.SSLError,
        ) as error:
            raise ProviderError(
                "api_down", "smtp", "send", f"cannot reach {host}:{port} ({error})"
            ) from error
        except aiosmtplib.SMTPResponseException as error:
            kind: ToolErrorType = (
                "api_down" if error.code >= 500 and error.code not in (550, 553, 554) else "invalid_input"
            )
            raise ProviderError(kind, "smtp", "send", f"{error.code} {error.message}") from error
        everyone = [*mail.to, *mail.cc]
        refused_text = {address: f"{code} {text}" for address, (code, text) in refused.items()}
        return SentMail(
            message_id=message_id,
            recipients=[a for a in everyone if a not in refused_text],
            refused=refused_text,
            raw=message.as_bytes(policy=email.policy.SMTP),
        )
