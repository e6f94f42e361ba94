"""The agent-builder conversation (seed 003 FR-02), run inside the front door's ``build_agent`` node.

CREATE: the description becomes a draft (``draft.AgentDrafter``); what is missing is asked for (at most
``MAX_ROUNDS`` clarifications); the draft is shown as a preview, and the agent is created only when the
user confirms. A reply that is neither yes nor no is a change to the draft, and the preview is shown
again. UPDATE: the agent named (or chosen) gets the change the message asks for, shown as a diff of its
spec, applied (a new live version) only on confirmation. Every question is a LangGraph ``interrupt()``:
the chat's next message is its answer, so a conversation survives restarts like any run.
"""

from __future__ import annotations

import difflib
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from langgraph.types import interrupt

from master_agent.builder.draft import AgentDrafter, Draft, task_phrase
from master_agent.capabilities import TenantRecord, load_tenant
from master_agent.capabilities.agents import AgentCatalogue, check_document, live_agents, parse_document
from master_agent.capabilities.assistants import AGENT_SPEC_KEY, GRAPH_ID, resolve_assistant
from master_agent.runtime.graphs import graph_ids
from master_agent.runtime.resources import RuntimeResources
from master_agent.runtime.tenant_agents import agent_catalogue, change_assistant, save_assistant

MAX_ROUNDS = 3
_YES = re.compile(
    r"^\s*(y|yes|yep|yeah|ok|okay|sure|confirm(ed)?|create( it)?|apply( it)?|save( it)?|do it|go ahead)\b",
    re.I,
)
_NO = re.compile(r"^\s*(n|no|nope|cancel|stop|discard|drop it|never ?mind|forget it)\b", re.I)
_REMOVE = re.compile(r"\b(remove|drop|without|stop using|no longer use|delete)\b", re.I)
_RENAME = re.compile(r"\b(?:rename(?:\s+[\w-]+)?\s+to|call it|name it)\s+[\"'`]?([A-Za-z][\w-]{2,63})", re.I)
_FIELD = re.compile(r"\b(description|instructions)\s*[:=]\s*(.+)$", re.I | re.S)


@dataclass(frozen=True)
class BuilderReply:
    status: str
    """created | updated | cancelled | unchanged | not_found"""
    text: str
    data: dict[str, Any]


def _ask(step: str, question: str, options: list[str], **extra: Any) -> str:
    answer = interrupt(
        {"kind": "agent_builder", "step": step, "question": question, "options": options, **extra}
    )
    if isinstance(answer, dict):
        answer = answer.get("answer") or answer.get("message") or json.dumps(answer)
    return str(answer).strip()


def _picked(answer: str, options: list[str]) -> list[str]:
    chosen = [option for option in options if re.search(rf"\b{re.escape(option)}\b", answer)]
    for number in re.findall(r"\b(\d)\b", answer):
        if 1 <= int(number) <= len(options) and options[int(number) - 1] not in chosen:
            chosen.append(options[int(number) - 1])
    return chosen


#: Cosine similarity of a message to an agent's name and description that names it, and the lead over
#: the next agent it needs (else the builder asks which agent).
REFERENCE_SIMILARITY, REFERENCE_MARGIN = 0.5, 0.1


def _stems(text: str) -> set[str]:
    """Lower-case words, a plural's final s dropped ("refunds" names "refund")."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in re.findall(r"[a-z0-9]+", text.lower())}


def _problems(spec: dict[str, Any], catalogue: AgentCatalogue, replacing: str | None = None) -> list[str]:
    document, problems = parse_document(spec)
    if document is not None:
        problems = check_document(document, catalogue, replacing=replacing)
    return [f"{problem.field}: {problem.message}" for problem in problems]


def apply_change(spec: dict[str, Any], request: str, catalogue: AgentCatalogue) -> dict[str, Any]:
    """The spec with the change ``request`` asks for: tools and sub-agents it names added (or removed,
    when it says remove/drop/without), a new name, description or instructions."""
    changed: dict[str, Any] = json.loads(json.dumps(spec))
    removing = bool(_REMOVE.search(request))
    for key, known in (("tools", catalogue.tools), ("sub_agents", catalogue.pack_agents)):
        for name in known:
            if not re.search(rf"\b{re.escape(name)}\b", request):
                continue
            current = list(changed.get(key) or [])
            if removing and name in current:
                current.remove(name)
            elif not removing and name not in current:
                current.append(name)
            changed[key] = current
    renamed = _RENAME.search(request)
    if renamed:
        changed["name"] = re.sub(r"[^a-z0-9]+", "_", renamed.group(1).lower()).strip("_")
    field = _FIELD.search(request)
    if field:
        changed[field.group(1).lower()] = field.group(2).strip()
    if changed == spec and request.strip():
        # Nothing the builder reads structurally ("so it also shows the refunded amount"): the request
        # joins the agent's instructions as said, shown in the preview before anything changes.
        instructions = str(changed.get("instructions") or "").rstrip()
        changed["instructions"] = f"{instructions}\nAlso, as asked: {request.strip()}".strip()
    return changed


def spec_diff(before: dict[str, Any], after: dict[str, Any]) -> str:
    """A unified diff of two specs as indented JSON."""
    lines = difflib.unified_diff(
        json.dumps(before, indent=2, sort_keys=True).splitlines(),
        json.dumps(after, indent=2, sort_keys=True).splitlines(),
        "live",
        "proposed",
        lineterm="",
    )
    return "\n".join(lines)


class AgentBuilder:
    """One tenant's builder conversation."""

    def __init__(self, resources: RuntimeResources, tenant: TenantRecord, drafter: AgentDrafter) -> None:
        self.resources = resources
        self.tenant_id = tenant.tenant_id
        self.drafter = drafter

    async def _catalogue(self) -> AgentCatalogue:
        # Read now, not when the graph was built: an agent made since must be seen (its name is taken).
        tenant = await load_tenant(self.resources.database.pool, self.tenant_id)
        return await agent_catalogue(self.resources, tenant)

    async def converse(self, action: str, message: str, agent_name: str | None = None) -> BuilderReply:
        if action == "UPDATE":
            return await self.update(message, agent_name)
        return await self.create(message)

    async def create(self, message: str) -> BuilderReply:
        catalogue = await self._catalogue()
        description = message
        draft = await self.drafter.draft(description, catalogue)
        rounds = 0
        while draft.missing and rounds < MAX_ROUNDS:
            rounds += 1
            draft = await self._fill(draft, description, catalogue)
            description = draft.spec.get("description", description)
        spec = draft.spec
        for _ in range(MAX_ROUNDS + 1):
            problems = _problems(spec, catalogue)
            answer = _ask(
                "preview",
                f"Create the agent {spec['name']!r}? Reply yes to create it, no to drop it, or say what to "
                "change (e.g. 'add research', 'remove query_tenant_data', 'call it refund_watch').",
                ["yes", "no"],
                spec=spec,
                problems=problems,
            )
            if _NO.match(answer):
                return BuilderReply(
                    "cancelled", f"Nothing was created; the draft of {spec['name']!r} is dropped.", {}
                )
            if _YES.match(answer) and not problems:
                assistant = await save_assistant(
                    self.resources,
                    self.tenant_id,
                    assistant_id=uuid.uuid4(),
                    graph_id=GRAPH_ID,
                    name=None,
                    description=None,
                    config={},
                    context={AGENT_SPEC_KEY: spec},
                    metadata={"created_by": "builder"},
                )
                skill = (spec.get("skills") or [spec["description"]])[0]
                return BuilderReply(
                    "created",
                    f"Created the agent {spec['name']!r} (version {assistant.version}). Ask it, e.g. "
                    f"{skill!r}; it is an assistant too: {assistant.assistant_id}.",
                    {"assistant_id": str(assistant.assistant_id), "version": assistant.version, "spec": spec},
                )
            if not _YES.match(answer):
                spec = apply_change(spec, answer, catalogue)
        return BuilderReply(
            "cancelled",
            "Nothing was created: the draft still has problems after several changes.",
            {"spec": spec},
        )

    async def _fill(self, draft: Draft, description: str, catalogue: AgentCatalogue) -> Draft:
        """One clarification round for the first missing piece."""
        if "task" in draft.missing:
            answer = _ask(
                "clarification",
                "What should the agent do? One sentence, e.g. 'report the weekly refund rate per store'.",
                [],
            )
            return await self.drafter.draft(answer, catalogue)
        options = draft.options
        answer = _ask(
            "clarification",
            f"None of your tools clearly fits {task_phrase(description) or description!r}. Which should it use? "
            "Name one or more, or give their numbers.",
            options,
        )
        chosen = _picked(answer, options) or _picked(answer, list(catalogue.tools))
        if chosen:
            draft.spec["tools"] = chosen
            draft.missing.remove("tools")
        return draft

    async def _referenced(self, message: str, agents: dict[str, Any]) -> str | None:
        """The tenant agent ``message`` names: by its name ("returns_digest"), its name's words ("my
        returns digest agent"), or else its description, when one agent is clearly the closest."""
        exact = [n for n in agents if re.search(rf"\b{re.escape(n)}\b", message)]
        if len(exact) == 1:
            return exact[0]
        said = _stems(message)
        by_words = [n for n in agents if (_stems(n.replace("_", " ")) - {"agent"}) <= said]
        if len(by_words) == 1:
            return by_words[0]
        if by_words or exact:
            return None  # several fit: ask which
        names = sorted(agents)
        texts = [f"{n.replace('_', ' ')}: {agents[n].document.description}" for n in names]
        query, *vectors = await self.drafter.embedder.embed([message, *texts])
        sims = sorted(
            (
                (sum(a * b for a, b in zip(query, v, strict=True)), n)
                for v, n in zip(vectors, names, strict=True)
            ),
            reverse=True,
        )
        best = sims[0]
        runner_up = sims[1][0] if len(sims) > 1 else 0.0
        if best[0] >= REFERENCE_SIMILARITY and best[0] - runner_up >= REFERENCE_MARGIN:
            return best[1]
        return None

    async def update(self, message: str, agent_name: str | None) -> BuilderReply:
        pool = self.resources.database.pool
        tenant = await load_tenant(pool, self.tenant_id)
        agents = await live_agents(pool, tenant.tenant_id, tenant.capability_version)
        if not agents:
            return BuilderReply(
                "not_found", "You have no agents of your own to change yet; describe one to create it.", {}
            )
        name = agent_name if agent_name in agents else None
        name = name or await self._referenced(message, agents)
        rounds = 0
        while name is None and rounds < MAX_ROUNDS:
            rounds += 1
            answer = _ask("clarification", "Which agent should change?", sorted(agents))
            name = next(iter(_picked(answer, sorted(agents))), None)
        if name is None:
            return BuilderReply("cancelled", "Nothing was changed: no agent was chosen.", {})
        catalogue = await self._catalogue()
        before = agents[name].document.model_dump(mode="json")
        after = apply_change(before, message, catalogue)
        if after == before:
            return BuilderReply(
                "unchanged",
                f"I found nothing to change in {name!r} in that message. Say e.g. 'add research to {name}', "
                f"'remove query_tenant_data from {name}' or '{name} description: ...'.",
                {"spec": before},
            )
        diff = spec_diff(before, after)
        problems = _problems(after, catalogue, replacing=name)
        answer = _ask(
            "preview",
            f"Apply this change to {name!r}? Reply yes to apply it as a new version, or no.",
            ["yes", "no"],
            diff=diff,
            spec=after,
            problems=problems,
        )
        if not _YES.match(answer) or problems:
            return BuilderReply("cancelled", f"Nothing was changed; {name!r} stays as it is.", {"diff": diff})
        current = await resolve_assistant(
            pool, self.tenant_id, agents[name].assistant_id, graph_ids(self.resources)
        )
        assert current is not None
        changed = await change_assistant(
            self.resources, self.tenant_id, current, context={AGENT_SPEC_KEY: after}
        )
        return BuilderReply(
            "updated",
            f"Updated {name!r}: version {changed.version} is live.\n{diff}",
            {"assistant_id": str(changed.assistant_id), "version": changed.version, "diff": diff},
        )
