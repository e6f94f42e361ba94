"""Every user-facing error Master Agent raises.

Hierarchy::

    MasterAgentError                 base of everything below; carries a message fit for a user
    ├── ConfigError                  an environment setting is invalid (names the variable)
    │   └── PromptBudgetError        an agent's smallest prompt is over MASTER_AGENT_PROMPT_TOKENS
    ├── InputError                   a request is invalid (names the field); never stores anything
    │   ├── UnknownTenantError       no such tenant
    │   ├── UnknownThreadError       no such thread (or not this tenant's)
    │   ├── NotFoundError            no such resource of this tenant (playbook, check...)
    │   ├── ScheduleTooFrequentError a schedule fires more often than the deployment allows (422)
    │   └── InvalidAgentError        an agent spec the tenant may not have (every reason listed)
    ├── ConflictError                the request conflicts with current state (a run already active)
    ├── RateLimitedError             a rate limit of the deployment is reached (429, ``Retry-After``)
    ├── ArtifactAccessError          a meta-orchestrator role wrote or read an artifact it may not
    ├── StorageError                 the database could not be reached or migrated
    ├── ToolInputError               a tool refused its arguments (e.g. refused SQL); goes back to
    │                                the model as tool text, never crashes a run
    └── ToolFailure                  a tool's service failed, typed (``api_down``, ``permission``...)
                                     for the master agent's decision matrix; never crashes a run

Control flow (LangGraph interrupts) is not modelled here: it stays LangGraph's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:  # only annotated: a process that never validates (the CLI's help) does not load pydantic
    from pydantic import ValidationError


class MasterAgentError(Exception):
    """Base class; ``str(error)`` is the message shown to the user."""


class ConfigError(MasterAgentError):
    """An environment variable holds an invalid value."""


class PromptBudgetError(ConfigError):
    """An agent's prompt at its smallest (system prompt, tool schemas, goal, latest turn) is over the
    token budget: it is refused before the call, never sent with its instructions cut."""

    def __init__(self, budget: int, tokens: int, parts: dict[str, int]) -> None:
        self.budget = budget
        self.tokens = tokens
        self.parts = parts
        detail = ", ".join(f"{name} {count}" for name, count in parts.items())
        super().__init__(
            f"the prompt needs {tokens} tokens at its smallest ({detail}), over "
            f"MASTER_AGENT_PROMPT_TOKENS={budget}: raise the budget, or give the agent fewer tools"
        )


class InputError(MasterAgentError):
    """A request or command argument is invalid.

    Attributes:
        field: the name of the offending field or argument.
        reason: what is wrong with it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message

    def under(self, prefix: str) -> InputError:
        """The same error with its field named from ``prefix`` (the body part it came in)."""
        return InputError(f"{prefix}.{self.field}", self.reason)

    @classmethod
    def from_validation(
        cls, error: ValidationError, default_field: str = "request", *, prefix: str = ""
    ) -> InputError:
        """The first problem of a pydantic validation error, naming its field (under ``prefix``)."""
        item = error.errors()[0]
        field = ".".join([*([prefix] if prefix else []), *(str(part) for part in item["loc"])])
        field = field or default_field
        return cls(field, str(item["msg"]).removeprefix("Value error, "))


class UnknownTenantError(InputError):
    """The tenant id names no tenant."""

    def __init__(self, tenant_id: str) -> None:
        super().__init__("tenant", f"unknown tenant {tenant_id!r}; create it first or use 'demo-retail'")


class UnknownThreadError(InputError):
    """The thread id names no thread of this tenant."""

    def __init__(self, thread_id: str) -> None:
        super().__init__("thread", f"unknown thread {thread_id!r}")


class NotFoundError(InputError):
    """The id names no resource this tenant can see (another tenant's is reported the same way)."""

    def __init__(self, kind: str, resource_id: str) -> None:
        super().__init__(f"{kind}_id", f"unknown {kind} {resource_id!r}")


class ScheduleTooFrequentError(InputError):
    """A cron schedule fires more often than ``MASTER_AGENT_CRON_MIN_INTERVAL_S`` allows, or has a
    seconds field; answered 422 (the schedule is well formed, the deployment refuses it)."""


class RateLimitedError(MasterAgentError):
    """A rate limit is reached; nothing of the request was done. ``limit`` names it (``requests``,
    ``runs_started``, ``sign_in_failures``), ``retry_after_s`` is when its window ends."""

    def __init__(self, limit: str, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.retry_after_s = retry_after_s


class ConflictError(MasterAgentError):
    """The request conflicts with the current state, e.g. a thread already running a run."""


class ArtifactAccessError(MasterAgentError):
    """A role of the meta-orchestrator wrote an artifact it does not own, or read one whole that it may
    only read as a summary (ownership is enforced in code, seed 004 sections 4 and 9)."""

    def __init__(self, role: str, artifact_type: str, action: str, owner: str) -> None:
        super().__init__(f"{role} may not {action} {artifact_type} (owned by {owner})")
        self.role = role
        self.artifact_type = artifact_type
        self.action = action


class StorageError(MasterAgentError):
    """The database could not be started, reached or migrated."""


class ToolInputError(MasterAgentError):
    """A tool refused its arguments; the message goes back to the model as tool text."""


ToolErrorType = Literal["api_down", "not_found", "permission", "invalid_input", "timeout", "conflict"]
TOOL_ERROR_TYPES: tuple[ToolErrorType, ...] = get_args(ToolErrorType)


class ToolFailure(MasterAgentError):
    """A tool's service failed in a known way. The loop hands the model (and a parent, in the
    sub-agent's envelope) ``error_type`` and ``context``, and decides what to do by the type."""

    def __init__(
        self, error_type: ToolErrorType, message: str, context: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.error_type: ToolErrorType = error_type
        self.context: dict[str, Any] = dict(context or {})


class InvalidAgentError(InputError):
    """An agent document the tenant may not have; ``problems`` lists every reason (field, message)."""

    def __init__(self, field: str, problems: list[dict[str, str]]) -> None:
        reasons = "; ".join(f"{item['field']}: {item['message']}" for item in problems)
        super().__init__(field, f"the agent spec is refused ({len(problems)} problems): {reasons}")
        self.problems = problems
