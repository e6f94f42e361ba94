"""The personal assistant's master agent (seed 002), as a spec.

It works the user's own mail, calendar and contacts through the pack's tools. What it may do on the
user's behalf is the runtime's business (``runtime.proposals``): reads run, a meeting or an email is a
draft the user approves, a mass email or a large invitation is a preview the user accepts in a new
message.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from master_agent.capabilities import AgentSpec
from master_agent.domains.assistant.requests import EXAMPLES


class AssistantRequest(BaseModel):
    goal: str = Field(min_length=1, max_length=4000)


class AssistantAnswer(BaseModel):
    """What the assistant answers; every part is optional, a request needs only some of them."""

    answer: str | None = Field(default=None, description="The reply to the user, in plain words.")
    free_slots: list[dict[str, Any]] | None = Field(default=None, description="Free slots found.")
    day: str | None = Field(default=None, description="The day the slots are on (ISO).")
    events: list[dict[str, Any]] | None = Field(default=None, description="Calendar events found.")
    conflicts: list[list[str]] | None = Field(default=None, description="Events that overlap.")
    contacts: list[dict[str, Any]] | None = Field(default=None, description="Contacts found.")
    chosen: str | None = Field(default=None, description="The contact the user chose.")
    messages: list[dict[str, Any]] | None = Field(default=None, description="Emails found.")
    mail_summary: str | None = Field(default=None, description="A summary of the emails found.")
    attendees: list[str] | None = Field(default=None, description="The people an event invites.")
    invited_by: list[str] | None = Field(default=None, description="The event whose attendees they are.")
    event: dict[str, Any] | None = Field(default=None, description="The event created.")
    sent: dict[str, Any] | None = Field(default=None, description="The email sent.")
    cancelled: dict[str, Any] | None = Field(default=None, description="The event cancelled.")
    action: dict[str, Any] | None = Field(
        default=None,
        description="The change the user asked for: requested, done (only when read back from the "
        "server) and the server's identifiers, or why it was not done.",
    )
    proposal: dict[str, Any] | None = Field(default=None, description="The preview waiting, or answered.")
    confidence: float = Field(ge=0, le=1)


MASTER = AgentSpec(
    name="personal_assistant",
    description="Reads, summarises and sends the user's email, schedules, moves and cancels meetings, "
    "finds free time and looks up contacts.",
    system_prompt=(
        "You are the user's personal assistant. Use the tools for the user's own calendar, contacts "
        "and mailbox; never invent an event, an address or an email. Resolve people to addresses with "
        "find_contacts before inviting or emailing them. Check free slots before scheduling. Move or "
        "cancel an event with reschedule_event or cancel_event. To write "
        "an email, draft it (draft_email) or write subject and body yourself, then send_email. Writing "
        "tools are guarded by the runtime: a meeting or an email is shown to the user as a draft to "
        "approve, a mass email (more than ten recipients) becomes a preview the user accepts later. "
        "When the input carries a 'proposal' the user accepted, call its tool with exactly its "
        "arguments; when it was revised, call it again with the change. Never say a change was made "
        "unless its tool's 'action' says done; say what was not done and why. Reply with a short 'answer'."
    ),
    input_schema=AssistantRequest,
    output_schema=AssistantAnswer,
    tools=[
        "find_free_slots",
        "calendar_events",
        "find_contacts",
        "find_correspondents",
        "search_email",
        "draft_email",
        "find_event",
        "find_attendees",
        "first_free_after",
        "create_event",
        "reschedule_event",
        "cancel_event",
        "send_email",
    ],
    progress_keys=[],
    ask_below_confidence=0.7,
    domain="assistant",
    skills=[
        "find free time in my calendar",
        "when am I free next week for an hour",
        "schedule a meeting with someone tomorrow at 2pm",
        "book a board meeting next month",
        "check my calendar for a day or a week",
        "email someone or the whole team about something",
        "email the team about the budget freeze",
        "send a note to a colleague about the offsite",
        "find emails from someone and summarise them",
        "look up a contact's email address",
        "who is someone in my contacts",
        "move or reschedule a meeting to another day or time",
        "cancel a meeting in my calendar",
        "summarise my unread email",
        "tell the team something by email",
        "invite people to an event",
        # The everyday ways of asking for each action the assistant has a tool for (``requests``), so
        # the front door matches a request worded as users word it.
        *(
            text
            for action, texts in EXAMPLES.items()
            if action not in ("unsupported", "feedback")
            for text in texts
        ),
    ],
)
