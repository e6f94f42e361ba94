"""People a request names, read against the tenant's contacts on the real local CardDAV server: full
and first names in any case, a letter misspelt, roles; several people asked about, nobody said so."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from master_agent.capabilities.tools.context import ToolContext
from master_agent.capabilities.tools.lexicon import available as lexicon_available
from master_agent.domains.assistant import missing_information, named_answer
from master_agent.domains.assistant.demo_data import start_demo_servers
from master_agent.domains.assistant.local_servers import LocalServers
from master_agent.domains.assistant.people import event_people, people_named, same_name
from master_agent.domains.assistant.providers import CardDavContacts, Contact
from master_agent.domains.assistant.tools import build_tools, goal_entities
from master_agent.runtime.proposals import approves
from master_agent.settings import Settings

TENANT = "demo-assistant"
MONDAY = date(2026, 12, 7)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("assistant-people")
    yield directory
    LocalServers(directory).stop()


@pytest.fixture
async def contacts(data_dir: Path) -> list[Contact]:
    local = await start_demo_servers(data_dir, TENANT, datetime(2026, 12, 7, 9, tzinfo=UTC))
    return await CardDavContacts(local.carddav).everyone()


def _who(text: str, contacts: list[Contact]) -> list[tuple[str, list[str]]]:
    return [(n.said, sorted(c.name for c in n.contacts)) for n in people_named(text, contacts)]


async def test_names_roles_and_misspellings_are_read_against_the_contacts(contacts: list[Contact]) -> None:
    assert _who("can u get maria and me together thursday", contacts) == [("maria", ["Maria Lopez"])]
    assert _who("what's david okafor's emial?", contacts) == [("david okafor's", ["David Okafor"])]
    assert _who("Book a call with Mraia on Thursday", contacts) == [("Mraia", ["Maria Lopez"])]
    assert _who("Who's our CFO and what's her number", contacts) == [("our CFO", ["Maria Lopez"])]
    assert _who("who is the head of marketing", contacts) == [("the head of marketing", ["Mia Rossi"])]
    assert _who("ask the chief financial officer", contacts) == [
        ("the chief financial officer", ["Maria Lopez"])
    ]
    # Several people fit: all of them, for the user to choose from.
    assert _who("email david about it", contacts) == [("david", ["David Chen", "David Okafor"])]
    assert _who("invite the engineer", contacts)[0][1] == [
        "Ben Adler",
        "Emma Dubois",
        "Lena Novak",
        "Omar Haddad",
    ]
    # A four-letter word a letter off a name is that word ("late" is not Kate); a last name alone
    # counts where it is written as a name.
    assert _who("I'll be 10 minutes late", contacts) == []
    assert _who("tell Okafor", contacts) == [("Okafor", ["David Okafor"])]
    assert _who("the silva lining", contacts) == []
    assert same_name("Priay", "Priya") and not same_name("Tim", "Tom")


async def test_a_request_names_its_recipients_and_nobody_is_guessed(contacts: list[Contact]) -> None:
    mailed = goal_entities("email priya and tell her the review moves", MONDAY, "send_mail", contacts)
    assert (mailed["name"], mailed["message"]) == ("Priya Shah", "the review moves")
    # A person named in what the mail says is not a recipient.
    team = goal_entities("let the team know about Maria's spending freeze", MONDAY, "send_mail", contacts)
    assert team["name"] == "team"
    told = goal_entities("tell David that Maria approved the budget", MONDAY, "send_mail", contacts)
    assert told["name"] == "David"
    assert "unknown_people" not in told
    # Nobody by that name: said, and asked about before anything is drafted.
    unknown = goal_entities("Set up a call with priya and Zed on Friday at 2", MONDAY, "schedule", contacts)
    assert unknown["unknown_people"] == ["Zed"]
    assert "addresses" not in unknown
    question = missing_information(unknown)
    assert question is not None and question.fields == ["name", "people_checked"]
    assert "No one named 'Zed' is in your contacts" in question.question
    assert "Priya Shah" in question.question
    # The answer names someone (or gives an address): the request goes on.
    assert named_answer("I meant Lena", contacts) == "Lena Novak"
    assert named_answer("zed@example.org", contacts) == "zed@example.org"
    assert named_answer("Lena is on the design review on Wednesday with Tom", contacts) is None
    assert missing_information({**unknown, "name": "Lena Novak", "people_checked": True}) is None
    # A sender named in lower case is searched by the contact's address.
    latest = goal_entities("whats the latest from john on atlas?", MONDAY, "read_mail", contacts)
    assert latest == {"sender": "john.miller@acme.example", "about": "atlas"}


async def test_a_name_of_several_contacts_is_asked_with_the_time_and_a_person_added_unknown_is_asked(
    contacts: list[Contact],
) -> None:
    grab = goal_entities("grab 20 minutes with david tomorrow afternoon", MONDAY, "schedule", contacts)
    question = missing_information(grab)
    assert question is not None and question.fields == ["start_time", "name", "people_checked"]
    assert "David Chen" in question.question and "David Okafor" in question.question
    assert question.question.endswith("?")
    # Settled ("the Okafor one"), only the time is asked.
    settled = missing_information({**grab, "name": "David Okafor", "people_checked": True})
    assert settled is not None and settled.fields == ["start_time"]
    added = goal_entities("Add Gustavo to a 30-min sync on Thursday at 11", MONDAY, "schedule", contacts)
    assert added["unknown_people"] == ["Gustavo"]
    asked = missing_information(added)
    assert asked is not None and "No one named 'Gustavo'" in asked.question
    # "Add <a thing> to my calendar" names nobody.
    assert "unknown_people" not in goal_entities(
        "Add Lunch to my calendar on Friday at 1", MONDAY, "schedule", contacts
    )


async def test_a_purpose_clause_names_the_topic_and_someones_update_is_answered_to_them(
    contacts: list[Contact],
) -> None:
    answered = goal_entities(
        "answer john's status update on atlas: a one week slip is fine", MONDAY, "send_mail", contacts
    )
    assert (answered["name"], answered["message"]) == ("John Miller", "a one week slip is fine")
    if not lexicon_available():
        pytest.skip("WordNet is not installed (make wordnet): a purpose clause's verb cannot be told")
    booked = goal_entities(
        "Book 1h with Omar and Hana tomorrow at 4 to go through the hiring panel",
        MONDAY,
        "schedule",
        contacts,
    )
    assert booked["summary"] == "Meeting with Omar Haddad and Hana Sato: hiring panel"
    # "to" before a person is no purpose.
    assert goal_entities("Set up a call with Lena on Friday at 2 to Maria", MONDAY, "schedule", contacts)[
        "summary"
    ].startswith("Call with")


async def test_find_contacts_reads_roles_and_misspellings_and_takes_a_new_address(data_dir: Path) -> None:
    context = ToolContext(
        pool=None, database_uri="", tenant_id=TENANT, data_schema=None, settings=Settings(data_dir=data_dir)
    )  # type: ignore[arg-type]
    tools = build_tools(context)
    cfo = await tools["find_contacts"].ainvoke({"name": "our CFO"})
    assert cfo["addresses"] == ["maria.lopez@acme.example"]
    misspelt = await tools["find_contacts"].ainvoke({"name": "Priay"})
    assert misspelt["addresses"] == ["priya.shah@acme.example"]
    both = await tools["find_contacts"].ainvoke({"name": "the head of marketing and Tom"})
    assert both["addresses"] == ["mia.rossi@acme.example", "tom.becker@acme.example"]
    davids = await tools["find_contacts"].ainvoke({"name": "david"})
    assert "addresses" not in davids and len(davids["choices"]["options"]) == 2
    new = await tools["find_contacts"].ainvoke({"name": "zed@example.org"})
    assert new["addresses"] == ["zed@example.org"]


def test_an_answer_approves_the_change_it_completes_only_in_so_many_words() -> None:
    assert approves("10:30 works, go ahead")
    assert approves("Friday at 11, book it")
    assert not approves("sure, 10:30")
    assert not approves("at 9")
    assert not approves("go ahead but change the title to Planning")


@pytest.mark.parametrize(
    ("text", "recipient", "message", "mail"),
    [
        (
            "reply to david okafor's northwind email: we can't do 10%, but 5% is fine",
            "David Okafor",
            "we can't do 10%, but 5% is fine",
            "reply to david okafor's northwind email",
        ),
        (
            "Write back to John on the Atlas kickoff thread and ask whether the 120k includes contractor costs.",
            "John Miller",
            "could you let me know whether the 120k includes contractor costs?",
            "Write back to John on the Atlas kickoff thread",
        ),
        (
            "hit reply on John's payment adapter mail and say mock the vendor",
            "John Miller",
            "mock the vendor",
            "hit reply on John's payment adapter mail",
        ),
        (
            "respond to the last email from Omar: agreed",
            "Omar Haddad",
            "agreed",
            "respond to the last email from Omar",
        ),
        ("Tell David Okafor that the report will be late", "David Okafor", "the report will be late", None),
    ],
)
async def test_a_reply_goes_to_whose_mail_it_names_and_says_only_what_was_dictated(
    contacts: list[Contact], text: str, recipient: str, message: str, mail: str | None
) -> None:
    """A mail a request names (someone's, "from" someone, "on the ... thread") is the one a reply
    answers: its writer is the recipient (a possessive too), and what it says leaves the mail out."""
    found = goal_entities(text, MONDAY, "send_mail", contacts)
    assert (found.get("name"), found.get("message"), found.get("reply_to")) == (recipient, message, mail)


@pytest.mark.parametrize(
    ("text", "event"),
    [
        ("ping everyone who's in it", "it"),
        ("give whoever is on the invite a heads-up", "the invite"),
        ("let the people on the Northwind call know it moved", "the Northwind call"),
        ("mail the retro's attendees that it is off", "the retro"),
        ("tell all the guests of the offsite dinner that it starts at 7", "the offsite dinner"),
        # What is told opens a clause of its own, with no "that": the event ends before its subject.
        ("tell everyone on the Northwind call I'm running late", "the Northwind call"),
        ("update all the attendees of the retro we've moved rooms", "the retro"),
        # Not an event's people: no one, a group of the address book, or a word that names no person.
        ("Let everyone know the kitchen is closed tomorrow", None),
        ("email everyone on the team about the freeze", None),
        ("tell the numbers in the report to Maria", None),
    ],
)
def test_people_said_by_the_event_they_are_in(text: str, event: str | None) -> None:
    assert event_people(text) == event
