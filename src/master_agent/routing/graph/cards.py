"""The tenant's agents as the front door sees them (cards, routing exemplars) and how a chat message fills an
agent's arguments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from master_agent.capabilities import AgentSpec, DomainPack, TenantCapabilities
from master_agent.routing.discovery import AgentCard
from master_agent.routing.exemplars import GENERIC_EXEMPLARS, Exemplar
from master_agent.routing.intent_head import master_examples, refused_examples
from master_agent.runtime.loop import TASK_FIELDS


def chat_arguments(spec: AgentSpec) -> tuple[str | None, tuple[str, ...]] | None:
    """How a chat message fills ``spec``'s required arguments: (the field its text goes to, the fields
    its entities go to), or None when one needs another agent's results (a strategy, a root cause)."""
    text: str | None = None
    entities: list[str] = []
    for name, info in spec["input_schema"].model_fields.items():
        if not info.is_required():
            continue
        if info.annotation is str and text is None and name in TASK_FIELDS:
            text = name
        elif info.annotation in (int, float, str):
            entities.append(name)
        else:
            return None
    return text, tuple(entities)


def message_field(spec: AgentSpec, known: dict[str, Any]) -> str | None:
    """The required text argument of ``spec`` a chat message fills: its only one not known already
    (the goal's entities and the tenant's defaults fill the others)."""
    missing = [
        name
        for name, info in spec["input_schema"].model_fields.items()
        if info.is_required() and info.annotation is str and name not in known
    ]
    return missing[0] if len(missing) == 1 else None


def agent_cards(capabilities: TenantCapabilities, pack: DomainPack) -> list[AgentCard]:
    """The tenant's agents as the front door sees them."""
    cards = []
    for spec in [capabilities.master, *capabilities.sub_agents.values()]:
        skills = tuple(spec.get("skills") or ())
        own = spec["name"] in capabilities.tenant_agents
        runnable = bool(skills) and (spec is capabilities.master or own)
        arguments = chat_arguments(spec)
        required = tuple(spec.get("required_entities") or ())
        if not runnable and arguments is not None:
            required = tuple(dict.fromkeys((*required, *arguments[1])))
        cards.append(
            AgentCard(
                name=spec["name"],
                description=spec["description"],
                skills=skills,
                domain=spec.get("domain") or pack.name,
                runnable=runnable,
                addressable=runnable or arguments is not None,
                required_entities=required,
                examples=master_examples(pack.name) if spec is capabilities.master else (),
                refused=refused_examples(pack.name) if spec is capabilities.master else (),
                source="tenant" if own else "pack",
            )
        )
    return cards


def exemplars_for(pack: DomainPack, cards: Sequence[AgentCard]) -> list[Exemplar]:
    found = [*GENERIC_EXEMPLARS, *pack.routing_examples]
    for card in cards:
        if card.runnable:
            found.extend(
                Exemplar(text, "EXECUTE", None, card.domain) for text in (card.description, *card.skills)
            )
    return found
