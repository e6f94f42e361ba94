"""A role lead's artifact drafted by the configured chat model as structured output: the artifact's own
schema is the function the model must call, the answer is validated by it, and a refused answer is
asked for once more with the reason. Without a model (the offline planner), or when both answers
fail, the role's offline draft is used, and the note says which it was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import ValidationError

from master_agent.meta.artifacts import ARTIFACT_MODELS, Artifact, ArtifactType, Role
from master_agent.models.chat import describe_model_failure
from master_agent.models.offline import OfflinePlanner

#: Answers asked of the model for one artifact: the first, and one more after a refusal.
ATTEMPTS = 2


@dataclass(frozen=True)
class Draft:
    """An artifact and how it was drafted."""

    artifact: Artifact
    by_model: bool
    note: str
    failed: bool = False
    """A model is configured but its drafts failed: the offline one stands in (a fallback)."""


async def model_draft(
    model: BaseChatModel,
    role: Role,
    artifact_type: ArtifactType,
    request: str,
    task: str,
    offline: Artifact,
) -> Draft:
    """``offline`` improved by the model (validated by the artifact's schema, asked again once), or
    ``offline`` itself, labelled as the fallback."""
    if isinstance(model, OfflinePlanner):
        return Draft(offline, False, f"offline draft of {artifact_type} (no model configured)")
    schema = ARTIFACT_MODELS[artifact_type]
    messages: list[BaseMessage] = [
        SystemMessage(
            content=f"You are the {role} lead of a meta-orchestrator that builds agent systems. {task} "
            f"Answer by calling {artifact_type} with the whole artifact. Start from this draft, keep "
            f"what is right and mend what is not:\n{json.dumps(offline.model_dump(mode='json'))}"
        ),
        HumanMessage(content=request),
    ]
    runnable = model.with_structured_output(schema, method="function_calling")
    why = ""
    for attempt in range(ATTEMPTS):
        try:
            answer = await runnable.ainvoke(messages)
            artifact = answer if isinstance(answer, schema) else schema.model_validate(answer)
        except ValidationError as error:
            why = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()[:5])
            messages = [
                *messages,
                HumanMessage(content=f"That {artifact_type} was refused ({why}). Answer again, valid."),
            ]
            continue
        except Exception as error:  # a model fault must not end the request: the offline draft stands
            why = describe_model_failure(error)
            break
        retried = " after one refusal" if attempt else ""
        return Draft(artifact, True, f"{artifact_type} drafted by the model{retried}")
    return Draft(offline, False, f"offline draft of {artifact_type}: the model's draft failed ({why})", True)
