"""The assistant pack's providers against the real local servers (Radicale for CalDAV/CardDAV, pymap for
IMAP, aiosmtpd for SMTP) started under a data directory and seeded through the protocols."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio
from pydantic import SecretStr

from master_agent.domains.assistant.demo_data import CONTACTS, TEAM, start_demo_servers, week_start
from master_agent.domains.assistant.local_servers import LocalEndpoints, LocalServers
from master_agent.domains.assistant.providers import (
    CalDavCalendar,
    CardDavContacts,
    ImapMailbox,
    NewEvent,
    OutgoingMail,
    ProviderError,
    SmtpSender,
)

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)  # a Monday
NEXT_TUESDAY = week_start(NOW.date()) + timedelta(weeks=1, days=1)
USER = "demo-assistant"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("assistant")
    yield directory
    LocalServers(directory).stop()


@pytest_asyncio.fixture
async def servers(data_dir: Path) -> AsyncIterator[LocalEndpoints]:
    yield await start_demo_servers(data_dir, USER, NOW)


def _wrong_password(endpoint: object) -> object:
    return endpoint.model_copy(update={"password": SecretStr("not-the-password")})  # type: ignore[attr-defined]


async def test_the_calendar_repeats_its_week_with_the_tuesday_conflict(servers: LocalEndpoints) -> None:
    start = datetime.combine(NEXT_TUESDAY, datetime.min.time(), tzinfo=UTC)
    events = await CalDavCalendar(servers.caldav).events(start, start + timedelta(days=1))
    assert [(e.summary, e.start.strftime("%H:%M"), e.end.strftime("%H:%M")) for e in events] == [
        ("Team standup", "09:30", "09:45"),
        ("Product review", "10:00", "11:00"),
        ("Customer call: Northwind", "13:00", "14:30"),
        ("Budget sync", "14:00", "15:00"),
    ]
    assert events[3].attendees == ["maria.lopez@acme.example"]
    # The same week, weeks later: the recurrence is expanded by the server.
    later = start + timedelta(weeks=9)
    assert len(await CalDavCalendar(servers.caldav).events(later, later + timedelta(days=1))) == 4


async def test_a_created_event_is_on_the_server_with_its_attendee(servers: LocalEndpoints) -> None:
    calendar = CalDavCalendar(servers.caldav)
    start = datetime.combine(NEXT_TUESDAY + timedelta(days=2), datetime.min.time(), tzinfo=UTC) + timedelta(
        hours=17
    )
    created = await calendar.create_event(
        NewEvent(
            summary="Board prep",
            start=start,
            end=start + timedelta(hours=1),
            attendees=["david.chen@acme.example"],
        )
    )
    found = [e for e in await calendar.events(start, start + timedelta(hours=1)) if e.uid == created.uid]
    assert len(found) == 1
    assert found[0].summary == "Board prep"
    assert found[0].attendees == ["david.chen@acme.example"]
    with pytest.raises(ProviderError) as backwards:
        await calendar.create_event(NewEvent(summary="x", start=start, end=start - timedelta(hours=1)))
    assert backwards.value.kind == "invalid_input"


async def test_contacts_are_searched_by_the_server(servers: LocalEndpoints) -> None:
    contacts = CardDavContacts(servers.carddav)
    davids = await contacts.search("david")
    assert [(c.name, c.title) for c in davids] == [
        ("David Chen", "Engineering Lead"),
        ("David Okafor", "Sales Director"),
    ]
    assert davids[0].emails == ["david.chen@acme.example"]
    team = await contacts.search("team")
    assert sorted(c.emails[0] for c in team) == sorted(c.email for c in TEAM)
    assert len(team) == 14
    assert [c.name for c in await contacts.search("maria.lopez@")] == ["Maria Lopez"]
    assert len(await contacts.everyone()) == len(CONTACTS)
    assert await contacts.search("nobody-of-that-name") == []


async def test_mail_is_searched_over_imap(servers: LocalEndpoints) -> None:
    mailbox = ImapMailbox(servers.imap)
    from_john = await mailbox.search(sender="john")
    assert [m.subject for m in from_john] == [
        "Atlas: risk on the payment adapter",
        "Re: Project Atlas kickoff",
        "Project Atlas kickoff",
    ]
    assert from_john[0].sender == "john.miller@acme.example"
    assert from_john[0].sender_name == "John Miller"
    assert "vendor sandbox" in from_john[0].body
    assert from_john[1].in_reply_to == from_john[2].message_id
    assert (await mailbox.search(text="budget"))[0].subject == "Budget freeze from next month"
    recent = await mailbox.search(since=(NOW - timedelta(days=3)).date())
    assert {m.subject for m in recent} >= {
        "Atlas: risk on the payment adapter",
        "Budget freeze from next month",
    }
    with pytest.raises(ProviderError) as quoted:
        await mailbox.search(sender='john" OR ALL')
    assert quoted.value.kind == "invalid_input"


async def test_mail_sent_over_smtp_reaches_the_server_with_every_recipient(servers: LocalEndpoints) -> None:
    before = set(servers.sent_dir.glob("*.json")) if servers.sent_dir.exists() else set()
    sent = await SmtpSender(servers.smtp).send(
        OutgoingMail(
            sender=servers.address,
            to=[c.email for c in TEAM],
            subject="Budget freeze",
            body="Spending is frozen from next month.",
        )
    )
    assert sorted(sent.recipients) == sorted(c.email for c in TEAM)
    assert sent.refused == {}
    (envelope,) = set(servers.sent_dir.glob("*.json")) - before
    record = json.loads(envelope.read_text())
    assert sorted(record["rcpt_tos"]) == sorted(c.email for c in TEAM)
    assert record["mail_from"] == servers.address
    assert record["login"] == servers.smtp.username
    assert b"Subject: Budget freeze" in envelope.with_suffix(".eml").read_bytes()


async def test_wrong_credentials_are_a_permission_error_on_every_provider(servers: LocalEndpoints) -> None:
    start = datetime.combine(NEXT_TUESDAY, datetime.min.time(), tzinfo=UTC)
    failures = []
    for call in (
        lambda: CalDavCalendar(_wrong_password(servers.caldav)).events(start, start + timedelta(days=1)),  # type: ignore[arg-type]
        lambda: CardDavContacts(_wrong_password(servers.carddav)).search("david"),  # type: ignore[arg-type]
        lambda: ImapMailbox(_wrong_password(servers.imap)).search(sender="john"),  # type: ignore[arg-type]
        lambda: SmtpSender(_wrong_password(servers.smtp)).send(  # type: ignore[arg-type]
            OutgoingMail(sender=servers.address, to=["a@acme.example"], subject="x", body="x")
        ),
    ):
        with pytest.raises(ProviderError) as failure:
            await call()
        failures.append((failure.value.provider, failure.value.kind))
    assert failures == [
        ("caldav", "permission"),
        ("carddav", "permission"),
        ("imap", "permission"),
        ("smtp", "permission"),
    ]


async def test_a_wrong_kind_of_address_is_invalid_input(servers: LocalEndpoints) -> None:
    with pytest.raises(ProviderError) as imap:
        await ImapMailbox(servers.imap.model_copy(update={"url": "http://127.0.0.1:1"})).search(sender="john")
    assert (imap.value.provider, imap.value.kind) == ("imap", "invalid_input")
    with pytest.raises(ProviderError) as smtp:
        await SmtpSender(servers.smtp.model_copy(update={"url": "smtp://"})).send(
            OutgoingMail(sender=servers.address, to=["a@acme.example"], subject="x", body="x")
        )
    assert (smtp.value.provider, smtp.value.kind) == ("smtp", "invalid_input")


async def test_each_user_is_kept_apart_by_the_servers(data_dir: Path, servers: LocalEndpoints) -> None:
    other = await start_demo_servers(data_dir, "other-tenant", NOW)
    assert other.caldav.url != servers.caldav.url
    assert other.imap.username == "other-tenant"
    # The other user has the demo data of its own, and its login reaches nothing of the first user's.
    assert len(await ImapMailbox(other.imap).search(sender="john")) == 3
    borrowed = other.caldav.model_copy(update={"url": servers.caldav.url})
    start = datetime.combine(NEXT_TUESDAY, datetime.min.time(), tzinfo=UTC)
    with pytest.raises(ProviderError) as refused:
        await CalDavCalendar(borrowed).events(start, start + timedelta(days=1))
    assert refused.value.kind == "permission"
    with pytest.raises(ProviderError) as wrong_user:
        await ImapMailbox(other.imap.model_copy(update={"username": USER})).search(sender="john")
    assert wrong_user.value.kind == "permission"


async def test_a_stopped_server_is_api_down_and_comes_back_with_its_data(
    data_dir: Path, servers: LocalEndpoints
) -> None:
    start = datetime.combine(NEXT_TUESDAY, datetime.min.time(), tzinfo=UTC)
    LocalServers(data_dir).stop(("dav", "imap", "smtp"))
    for call in (
        lambda: CalDavCalendar(servers.caldav).events(start, start + timedelta(days=1)),
        lambda: ImapMailbox(servers.imap).search(sender="john"),
        lambda: SmtpSender(servers.smtp).send(
            OutgoingMail(sender=servers.address, to=["a@acme.example"], subject="x", body="x")
        ),
    ):
        with pytest.raises(ProviderError) as failure:
            await call()
        assert failure.value.kind == "api_down", failure.value
        assert "cannot reach" in failure.value.detail
    again = await start_demo_servers(data_dir, USER, NOW)
    assert len(await CalDavCalendar(again.caldav).events(start, start + timedelta(days=1))) >= 4
    assert len(await ImapMailbox(again.imap).search(sender="john")) == 3
