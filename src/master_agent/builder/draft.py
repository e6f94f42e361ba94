"""A description in plain words -> a draft agent document.

A real chat model drafts it with structured output (temperature 0), given the tenant's catalogue; the
offline filler (and the fallback when the model fails) matches the catalogue's tools and sub-agents to
the description with the embedder and names the agent from the description's own words.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from master_agent.capabilities.agents import NAME_PATTERN, AgentCatalogue
from master_agent.models.chat import describe_model_failure
from master_agent.models.embeddings import Embedder
from master_agent.models.offline import OfflinePlanner

logger = logging.getLogger(__name__)

#: Cosine similarity between the description and a tool's (or agent's) description that counts as a match.
TOOL_MATCH = 0.3
MAX_TOOLS = 4
SQL_TOOL = "query_tenant_data"
MAX_SUB_AGENTS = 2
NAME_WORDS = 4
_LEAD = re.compile(
    r"^\s*(please\s+)?(can you\s+|could you\s+)?(i\s+(want|need|would like)\s+)?"
    r"((create|build|make|set up|setup|add|write|design|define|give me|spin up)\s+)?(me\s+)?"
    r"((a|an|one|new|another|the)\s+)*(new\s+)?(custom\s+)?(ai\s+)?(agent|assistant|bot|helper)\s*"
    r"(called\s+\S+\s*|named\s+\S+\s*)?(that|which|who|to|for|able to)?\s*",
    re.I,
)
_NAMED = re.compile(r"\b(?:called|named)\s+[\"'`]?([A-Za-z][\w-]{2,63})", re.I)
_WORD = re.compile(r"[a-z0-9]+")
_SKIP = frozenset(
    """a an the of to in on for by at and or per each every my our me us it its this that which who with
    from into can will should would could please also always just report reports show shows tell tells
    give gives compute computes calculate calculates track tracks find finds answer answers list lists
    monitor monitors get gets what how is are be""".split()  # noqa: SIM905
)


class AgentDraft(BaseModel):
    """The parts of an agent a model drafts from a description (the rest take their defaults)."""

    name: str = Field(description="snake_case name, 3-64 characters, starting with a letter.")
    description: str = Field(description="One sentence: what the agent does.")
    skills: list[str] = Field(description="Two to four requests a user would make of it, in their words.")
    instructions: str = Field(description="Its role and method, for its system prompt.")
    tools: list[str] = Field(default_factory=list, description="Tool names from the catalogue only.")
    sub_agents: list[str] = Field(default_factory=list, description="Agent names from the catalogue only.")


@dataclass
class Draft:
    """A draft document and what is still missing from it."""

    spec: dict[str, Any]
    missing: list[str] = field(default_factory=list)
    """``task`` (the description says too little) and/or ``tools`` (nothing in the catalogue matched)."""
    options: list[str] = field(default_factory=list)
    """Tool names to offer when ``tools`` is missing, best first."""


def task_phrase(description: str) -> str:
    """The description without its request wrapper ("create an agent that ..."), one line (empty when
    the description is only the wrapper)."""
    text = " ".join(description.split())
    return _LEAD.sub("", text, count=1).strip(" .!?")


def agent_name(description: str, taken: Sequence[str] = ()) -> str:
    """A name from the description: its stated name, else its first content words; unique among ``taken``."""
    named = _NAMED.search(description)
    if named:
        base = re.sub(r"[^a-z0-9]+", "_", named.group(1).lower()).strip("_")
    else:
        words = [word for word in _WORD.findall(task_phrase(description).lower()) if word not in _SKIP]
        base = "_".join(words[:NAME_WORDS]) or "custom"
        base = base if base.endswith("agent") else f"{base}_agent"
    if not re.match(r"^[a-z]", base):
        base = f"agent_{base}"
    base = base[:56].rstrip("_")
    name, suffix = base, 2
    while name in taken or not re.fullmatch(NAME_PATTERN, name):
        name = f"{base}_{suffix}" if len(base) >= 3 else f"{base}_agent"
        suffix += 1
    return name


def _content_words(text: str) -> list[str]:
    return [word for word in _WORD.findall(text.lower()) if word not in _SKIP]


class AgentDrafter:
    """Drafts agent documents for one tenant."""

    def __init__(self, embedder: Embedder, model: BaseChatModel) -> None:
        self.embedder = embedder
        self.model = None if isinstance(model, OfflinePlanner) else model

    async def draft(self, description: str, catalogue: AgentCatalogue) -> Draft:
        phrase = task_phrase(description)
        taken = [*catalogue.tenant_agents, *catalogue.pack_agents, *catalogue.reserved, *catalogue.tools]
        ranked = await self._ranked(phrase, catalogue)
        proposal = await self._model_draft(description, catalogue) if self.model is not None else None
        if proposal is None:
            tools = [name for name, score in ranked["tools"] if score >= TOOL_MATCH][:MAX_TOOLS]
            subs = [name for name, score in ranked["agents"] if score >= TOOL_MATCH][:MAX_SUB_AGENTS]
            sentence = phrase[0].upper() + phrase[1:] if phrase else description
            proposal = AgentDraft(
                name=agent_name(description, taken),
                description=f"Agent that {phrase}." if phrase else description,
                skills=[phrase] if phrase else [],
                instructions=f"{sentence}. Use your tools on the tenant's own data; answer with the figures "
                "you found and say what they rest on.",
                tools=tools,
                sub_agents=subs,
            )
        spec = proposal.model_dump()
        spec["tools"] = [name for name in spec["tools"] if name in catalogue.tools]
        spec["sub_agents"] = [name for name in spec["sub_agents"] if name in catalogue.pack_agents]
        if spec["name"] in taken or not re.fullmatch(NAME_PATTERN, spec["name"]):
            spec["name"] = agent_name(spec["name"].replace("_", " "), taken)
        missing = []
        if len(_content_words(phrase)) < 2:
            missing.append("task")
        if not spec["tools"] and not spec["sub_agents"]:
            missing.append("tools")
        options = [name for name, _ in ranked["tools"]]
        if catalogue.tables and SQL_TOOL in options:
            # The read-only SQL tool fits any question about the tenant's data: offered first.
            options.remove(SQL_TOOL)
            options.insert(0, SQL_TOOL)
        options = options[:MAX_TOOLS]
        return Draft(spec=spec, missing=missing, options=options)

    async def _ranked(self, phrase: str, catalogue: AgentCatalogue) -> dict[str, list[tuple[str, float]]]:
        tools = list(catalogue.tools)
        agents = list(catalogue.pack_agents)
        texts = [phrase, *(catalogue.descriptions.get(name, name) for name in [*tools, *agents])]
        vectors = await self.embedder.embed(texts)
        query, rest = vectors[0], vectors[1:]

        def score(vector: list[float]) -> float:
            return sum(a * b for a, b in zip(query, vector, strict=True))

        scored = [score(vector) for vector in rest]
        ranked_tools = sorted(zip(tools, scored[: len(tools)], strict=True), key=lambda item: -item[1])
        ranked_agents = sorted(zip(agents, scored[len(tools) :], strict=True), key=lambda item: -item[1])
        return {"tools": ranked_tools, "agents": ranked_agents}

    async def _model_draft(self, description: str, catalogue: AgentCatalogue) -> AgentDraft | None:
        assert self.model is not None
        model = self.model
        if "temperature" in type(model).model_fields:
            model = model.model_copy(update={"temperature": 0.0})
        listing = "\n".join(
            f"- {name}: {catalogue.descriptions.get(name, '')}"
            for name in [*catalogue.tools, *catalogue.pack_agents]
        )
        prompt = [
            SystemMessage(
                content="You draft agents for a tenant of an orchestration service. Name the agent in "
                "snake_case, describe it in one sentence, give its skills in a user's words, write its "
                "instructions, and choose only from these tools and agents:\n" + listing
            ),
            HumanMessage(content=description),
        ]
        try:
            answer = await model.with_structured_output(AgentDraft, method="function_calling").ainvoke(prompt)
            return answer if isinstance(answer, AgentDraft) else AgentDraft.model_validate(answer)
        except Exception as error:  # a model fault must not end the conversation: the filler drafts
            logger.warning("agent draft by the model failed: %s", describe_model_failure(error))
            return None
