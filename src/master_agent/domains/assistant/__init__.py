"""Personal-assistant domain pack (seed 002): the user's email, calendar and contacts over IMAP, SMTP,
CalDAV and CardDAV, on the tenant's own servers or the embedded local ones."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from psycopg_pool import AsyncConnectionPool

from master_agent.capabilities import DomainPack, MissingInformation
from master_agent.capabilities.spec import routing_examples
from master_agent.capabilities.tools.context import ToolContext
from master_agent.domains.assistant.agents import MASTER
from master_agent.domains.assistant.tools import build_tools, configured_accounts, goal_entities

DEMO_TENANT = "demo-assistant"
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


async def stated_entities(goal: str, context: ToolContext) -> dict[str, Any]:
    """The goal's days, times, people and topics, read in the tenant's time zone."""
    configured = configured_accounts(context.tenant_id)
    zone = ZoneInfo(configured.timezone if configured else "UTC")
    return goal_entities(goal, context.now().astimezone(zone).date())


def missing_information(known: dict[str, Any]) -> MissingInformation | None:
    """A meeting cannot be scheduled without its day and start time (a period like "next month" is
    not a day): ask for them rather than guess."""
    if not known.get("summary"):
        return None
    fields = [name for name in ("day", "start_time") if not known.get(name)]
    if not fields:
        return None
    asked = {("day", "start_time"): "Which day and time", ("day",): "Which day", ("start_time",): "What time"}
    period = known.get("period")
    within = f" ({period})" if period and not known.get("day") else ""
    return MissingInformation(
        fields=fields, question=f"{asked[tuple(fields)]} should {known['summary']!r} be{within}?"
    )


def describe_answer(solution: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if solution.get("answer"):
        lines.append(str(solution["answer"]))
    if solution.get("free_slots") is not None:
        slots = ", ".join(f"{s['start']}-{s['end']}" for s in solution["free_slots"]) or "none"
        lines.append(f"Free on {solution.get('day') or 'that day'}: {slots}.")
    for pair in dict.fromkeys(tuple(pair) for pair in solution.get("conflicts") or []):
        lines.append(f"Conflict: {' overlaps '.join(pair)}.")
    if solution.get("events") is not None and solution.get("free_slots") is None:
        lines.append(f"{len(solution['events'])} event(s):")
        lines.extend(f"- {e['day']} {e['start']}-{e['end']} {e['summary']}" for e in solution["events"][:20])
    if solution.get("chosen"):
        lines.append(f"Contact: {solution['chosen']}.")
    if solution.get("mail_summary"):
        lines.append(str(solution["mail_summary"]))
    event = solution.get("event")
    if isinstance(event, dict):
        who = ", ".join(event.get("attendees") or []) or "no attendees"
        lines.append(
            f"Created: {event['summary']} on {event['day']} {event['start']}-{event['end']} ({who})."
        )
    sent = solution.get("sent")
    if isinstance(sent, dict):
        lines.append(f"Sent {sent.get('subject')!r} to {len(sent.get('recipients') or [])} recipient(s).")
    return lines


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
)

__all__ = ["ASSISTANT", "DEMO_TENANT"]
