"""``master-agent demo lending``: one loan conversation end to end on the demo tenant, in process (the
graph ``/chat/stream`` runs for the tenant), with its stages, the salary-slip upload, the decision,
the sanction letter read back from its PDF and the audit trail."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from rich.console import Console

from master_agent.capabilities import FileUpload
from master_agent.domains.lending import DEMO_TENANT, LENDING
from master_agent.domains.lending.letters import pdf_text
from master_agent.domains.lending.simulator import PERSONAS, simulate
from master_agent.runtime.factory import chat_turn
from master_agent.runtime.resources import RuntimeResources
from master_agent.settings import Settings
from master_agent.storage.files import document_path
from master_agent.storage.threads import record_thread
from master_agent.workflows.audit import audit_events
from master_agent.workflows.uploads import accept_upload


class InProcessChannel:
    """The conversation in this process: the tenant's chat graph, and uploads through the same
    checks and audit as ``POST /threads/{thread_id}/files``."""

    def __init__(self, resources: RuntimeResources, tenant_id: str, console: Console | None = None) -> None:
        self.resources = resources
        self.tenant_id = tenant_id
        self.console = console
        self.transitions_shown: dict[str, int] = {}

    async def say(self, thread_id: str | None, text: str) -> tuple[str, dict[str, Any]]:
        thread = thread_id or str(uuid.uuid4())
        if thread_id is None:  # its row, as ``/chat/stream`` stores one for a new conversation
            async with self.resources.database.pool.connection() as conn:
                await record_thread(conn, self.tenant_id, thread, {"channel": "chat"})
        if self.console is not None:
            self.console.print(f"[bold]customer:[/bold] {text}")
        values = await chat_turn(self.resources, self.tenant_id, thread, text)
        if self.console is not None:
            moves = values.get("transitions") or []
            for move in moves[self.transitions_shown.get(thread, 0) :]:
                self.console.print(f"  [dim]stage {move['from']} -> {move['to']}  ({move['guard']})[/dim]")
            self.transitions_shown[thread] = len(moves)
            reply = values.get("reply") or {}
            self.console.print(
                f"[bold cyan]assistant[/bold cyan] [dim]({reply.get('stage')}, {reply.get('status')}"
                f"{', ' + str(reply.get('agent')) if reply.get('agent') else ''})[/dim]: {reply.get('text')}"
            )
        return thread, values

    async def upload(self, thread_id: str, filename: str, content: bytes) -> dict[str, Any]:
        kept = await accept_upload(
            LENDING.uploads,
            "salary_slip",
            FileUpload(
                data_dir=self.resources.settings.data_dir,
                tenant_id=self.tenant_id,
                thread_id=thread_id,
                filename=filename,
                media_type="application/pdf",
                content=content,
            ),
            self.resources.database.pool,
            self.resources.evolution.clock.now,
        )
        if self.console is not None:
            self.console.print(
                f"[bold]customer uploads:[/bold] {filename} ({len(content)} bytes; net salary read: "
                f"{kept.get('monthly_salary')})"
            )
        return kept


async def demo_lending(settings: Settings, console: Console) -> int:
    """One persona that needs a salary slip, end to end; 0 when it ends as the rules say."""
    from master_agent.runtime import open_resources

    persona = next(p for p in PERSONAS if p.key == "needs_salary_slip")
    async with open_resources(settings) as resources:
        console.rule(f"Loan conversation: {persona.customer}, {persona.behaviour}")
        conversation = await simulate(persona, InProcessChannel(resources, DEMO_TENANT, console))
        record = conversation.values.get("record") or {}
        console.rule("Outcome")
        console.print(
            f"decision {conversation.decision} by rule {conversation.rule}; final stage {conversation.stage}; "
            f"{conversation.turns} turns; thread {conversation.thread_id}"
        )
        moves = conversation.values.get("transitions") or []
        console.print("stages: " + " -> ".join([moves[0]["from"], *(move["to"] for move in moves)]))
        link = (record.get("document_links") or {}).get("sanction_letter")
        if link:
            path = document_path(settings.data_dir, DEMO_TENANT, uuid.UUID(link.rsplit("/", 1)[-1]))
            if path is not None:
                console.print(f"sanction letter {link} ({path}):")
                console.print(pdf_text(path), style="dim")
        events = await audit_events(resources.database.pool, DEMO_TENANT, thread_id=conversation.thread_id)
        counts = Counter(event.kind for event in events)
        console.print(
            f"audit trail: {len(events)} events ("
            + ", ".join(f"{kind} {count}" for kind, count in sorted(counts.items()))
            + f"); master-agent audit --tenant {DEMO_TENANT} --thread {conversation.thread_id}"
        )
    if not conversation.matches:
        console.print(f"[red]expected {persona.decision} at {persona.stage}[/red]")
        return 1
    return 0
