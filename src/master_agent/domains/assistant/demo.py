"""``master-agent demo assistant``: seed 002's six scenarios on the demo tenant, through the chat front
door (the same graph ``/chat/stream`` runs) against the local mail, calendar and contacts servers."""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from langgraph.types import Command
from rich.console import Console

from master_agent.capabilities import install_tenant
from master_agent.domains.assistant.local_servers import LocalServers
from master_agent.domains.assistant.tools import ACCOUNTS_ENV, AccountsFile, accounts_on
from master_agent.runtime.factory import chat_turn
from master_agent.runtime.resources import RuntimeResources
from master_agent.settings import Settings

DEMO_TENANT = "demo-assistant"
OUTAGE_TENANT = "demo-assistant-outage"


def sent_envelopes(data_dir: Path) -> list[dict[str, Any]]:
    """What the local SMTP server accepted (each message's envelope), oldest first."""
    accepted = data_dir / "assistant" / "smtp" / "accepted"
    if not accepted.exists():
        return []
    return [json.loads(path.read_text()) for path in sorted(accepted.glob("*.json"))]


Answerer = Callable[[dict[str, Any]], str]


async def converse(
    resources: RuntimeResources,
    console: Console,
    thread_id: str,
    message: str,
    answer: Answerer | None = None,
    tenant_id: str = DEMO_TENANT,
) -> dict[str, Any]:
    """A message, and the answers to every question it raises (``answer``), printed as they go."""
    console.print(f"[bold]user:[/bold] {message}")
    values = await chat_turn(resources, tenant_id, thread_id, message)
    while values["interrupts"] and answer is not None:
        question = values["interrupts"][0]
        reply = answer(question)
        _print_question(console, question)
        if question.get("options"):
            console.print("  options: " + " | ".join(question["options"]))
        if question.get("detail"):
            console.print(f"  draft: {json.dumps(question['detail'], default=str)}")
        console.print(f"[bold]user:[/bold] {reply}")
        values = await chat_turn(resources, tenant_id, thread_id, Command(resume=reply))
    if values["interrupts"]:
        _print_question(console, values["interrupts"][0])
    else:
        console.print(f"[bold]assistant:[/bold] {(values.get('reply') or {}).get('text', '')}")
    return values


def _print_question(console: Console, question: dict[str, Any]) -> None:
    console.print(f"[bold]assistant asks ({question.get('kind')}):[/bold] {question.get('question')}")


def _choose_then_approve(question: dict[str, Any]) -> str:
    return "David Chen" if question.get("kind") == "clarification" else "approve"


async def demo_assistant(settings: Settings, console: Console) -> int:
    """Run the six scenarios; 0 when each ends as the seed says it should."""
    from master_agent.runtime import open_resources

    failures: list[str] = []

    def expect(held: bool, what: str) -> None:
        console.print(("[green]ok[/green] " if held else "[red]FAILED[/red] ") + what)
        if not held:
            failures.append(what)

    async with open_resources(settings) as resources:
        data_dir = resources.settings.data_dir

        console.rule("1. Free slots from the CalDAV calendar")
        slots = await converse(
            resources, console, str(uuid.uuid4()), "What times am I free next Tuesday for 60 minutes?"
        )
        expect(bool((slots.get("solution") or {}).get("free_slots")), "free slots computed from the calendar")

        console.rule("2. Which David? then a draft to approve")
        meeting = await converse(
            resources,
            console,
            str(uuid.uuid4()),
            "Schedule a meeting with David tomorrow at 2pm",
            _choose_then_approve,
        )
        event = (meeting.get("solution") or {}).get("event") or {}
        expect(
            event.get("attendees") == ["david.chen@acme.example"], "the event exists with David Chen invited"
        )

        console.rule("3. A mass email: a preview, then accepted in a new message")
        before = len(sent_envelopes(data_dir))
        thread = str(uuid.uuid4())
        preview = await converse(resources, console, thread, "Email the whole team about the budget freeze")
        handoff = (preview.get("envelope") or {}).get("handoff") or {}
        expect(
            handoff.get("kind") == "preview" and len(sent_envelopes(data_dir)) == before,
            "a high-risk preview, nothing sent before acceptance",
        )
        await converse(resources, console, thread, "Please execute the proposed plan")
        sent = sent_envelopes(data_dir)[before:]
        expect(len(sent) == 1 and len(sent[0]["rcpt_tos"]) == 14, "sent once, to 14 recipients")

        console.rule("4. Emails from John, summarised (IMAP)")
        mail = await converse(
            resources,
            console,
            str(uuid.uuid4()),
            "Find emails from John about the project and summarise them",
        )
        expect(bool((mail.get("solution") or {}).get("mail_summary")), "a summary of John's emails")

        console.rule("5. A new message suspends the waiting flow; it is resumed later")
        thread = str(uuid.uuid4())
        asked = await converse(resources, console, thread, "Schedule board meeting next month")
        expect(
            [q.get("reason") for q in asked["interrupts"]] == ["missing_information"],
            "the missing day and time are asked for",
        )
        check = await converse(resources, console, thread, "Actually, check my calendar first")
        expect(
            (check.get("solution") or {}).get("events") is not None
            and len(check.get("suspended") or []) == 1,
            "the calendar check ran as its own flow, the board meeting is kept",
        )
        today = datetime.now(UTC).date()
        day = (today.replace(day=1) + timedelta(days=32)).replace(day=16).isoformat()
        resumed = await converse(
            resources,
            console,
            thread,
            f"Resume the board meeting on {day} at 3pm",
            lambda question: "approve",
        )
        created = (resumed.get("solution") or {}).get("event") or {}
        expect(
            (created.get("day"), created.get("start")) == (day, "15:00"),
            "the board meeting resumed and was created",
        )

        console.rule("6. The calendar server is down")
        with tempfile.TemporaryDirectory() as scratch:
            stopped = LocalServers(Path(scratch))
            gone, _ = stopped.ensure_running(DEMO_TENANT)
            stopped.stop()
            live, _ = LocalServers(data_dir).ensure_running(DEMO_TENANT)
            outage = accounts_on(
                live, username=DEMO_TENANT, password_env="DEMO_ASSISTANT_SECRET", address=live.address
            )
            outage.caldav.url = gone.caldav.url
            accounts = Path(scratch) / "accounts.json"
            accounts.write_text(AccountsFile(tenants={OUTAGE_TENANT: outage}).model_dump_json())
            saved = {key: os.environ.get(key) for key in (ACCOUNTS_ENV, "DEMO_ASSISTANT_SECRET")}
            os.environ[ACCOUNTS_ENV] = str(accounts)
            os.environ["DEMO_ASSISTANT_SECRET"] = live.caldav.password.get_secret_value()
            try:
                await install_tenant(resources.database.pool, resources.settings, "assistant", OUTAGE_TENANT)
                down = await converse(
                    resources,
                    console,
                    str(uuid.uuid4()),
                    "What times am I free next Tuesday for 60 minutes?",
                    tenant_id=OUTAGE_TENANT,
                )
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
        envelope = down.get("envelope") or {}
        expect(envelope.get("error_type") == "api_down", "an api_down envelope that says what to do")

    console.rule("Done" if not failures else f"{len(failures)} scenario(s) failed")
    return 0 if not failures else 1
