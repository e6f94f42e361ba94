"""Environment -> one validated ``Settings`` object.

This is the only module that reads ``os.environ``. Every variable is documented in README.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from ipaddress import IPv4Network, IPv6Network, ip_address
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from master_agent.errors import ConfigError

#: Environment variable -> Settings field.
ENV_FIELDS: dict[str, str] = {
    "DATABASE_URL": "database_url",
    "MASTER_AGENT_DATA_DIR": "data_dir",
    "MASTER_AGENT_MODEL": "model",
    "OPENAI_API_KEY": "openai_api_key",
    "OPENAI_BASE_URL": "openai_base_url",
    "OPENAI_TIMEOUT_S": "openai_timeout_s",
    "OPENAI_MAX_RETRIES": "openai_max_retries",
    "MASTER_AGENT_MAX_TOKENS": "max_tokens",
    "MASTER_AGENT_MAX_TOKENS_FIELD": "max_tokens_field",
    "MASTER_AGENT_PROMPT_TOKENS": "prompt_tokens",
    "MASTER_AGENT_TOKENIZER": "tokenizer",
    "MASTER_AGENT_SCHEMA_MODE": "schema_mode",
    "MAX_DEPTH": "max_depth",
    "MAX_ITERATIONS": "max_iterations",
    "SUBAGENT_TIMEOUT_S": "subagent_timeout_s",
    "MASTER_AGENT_GRAPH_CACHE_TTL_S": "graph_cache_ttl_s",
    "MASTER_AGENT_POOL_MAX": "pool_max_size",
    "MASTER_AGENT_POOL_TIMEOUT_S": "pool_timeout_s",
    "MASTER_AGENT_SQL_TIMEOUT_MS": "sql_timeout_ms",
    "MASTER_AGENT_SQL_ROW_CAP": "sql_row_cap",
    "MASTER_AGENT_SQL_MAX_BYTES": "sql_max_bytes",
    "MASTER_AGENT_SECRET_KEY": "secret_key",
    "MASTER_AGENT_TENANT_SLOTS": "tenant_slots",
    "MASTER_AGENT_DOMAIN_PACKS": "domain_packs",
    "MASTER_AGENT_GRAPHS": "graphs",
    "MASTER_AGENT_EMBEDDINGS": "embeddings",
    "MASTER_AGENT_KNOWLEDGE_SHARING": "knowledge_sharing",
    "MASTER_AGENT_REUSE_MIN_SIMILARITY": "reuse_min_similarity",
    "MASTER_AGENT_REUSE_MIN_CONFIDENCE": "reuse_min_confidence",
    "MASTER_AGENT_SCHEDULER": "scheduler",
    "MASTER_AGENT_SCHEDULER_POLL_S": "scheduler_poll_s",
    "MASTER_AGENT_NOTIFIER": "notifier",
    "MASTER_AGENT_AUTH": "auth",
    "MASTER_AGENT_CONSOLE_SESSION_S": "console_session_s",
    "MASTER_AGENT_CONSOLE_IDLE_S": "console_idle_s",
    "MASTER_AGENT_MAX_BODY_BYTES": "max_body_bytes",
    "MASTER_AGENT_MAX_HEADER_BYTES": "max_header_bytes",
    "MASTER_AGENT_OPERATOR_TOKEN": "operator_token",
    "MASTER_AGENT_RUN_LEASE_S": "run_lease_s",
    "MASTER_AGENT_RUN_CONCURRENCY": "run_concurrency",
    "MASTER_AGENT_RUN_POLL_S": "run_poll_s",
    "MASTER_AGENT_OUTAGE_WAIT_S": "outage_wait_s",
    "MASTER_AGENT_CHECKPOINT_TTL": "checkpoint_ttl",
    "MASTER_AGENT_CHECKPOINT_TTL_MINUTES": "checkpoint_ttl_minutes",
    "MASTER_AGENT_CHECKPOINT_SWEEP_MINUTES": "checkpoint_sweep_minutes",
    "MASTER_AGENT_STORE_INDEX_FIELDS": "store_index_fields",
    "MASTER_AGENT_STORE_DEFAULT_TTL_MINUTES": "store_default_ttl_minutes",
    "MASTER_AGENT_STORE_SWEEP_MINUTES": "store_sweep_minutes",
    "MASTER_AGENT_WEBHOOK_ALLOWED_NETWORKS": "webhook_allowed_networks",
    "MASTER_AGENT_WEBHOOK_ATTEMPTS": "webhook_attempts",
    "MASTER_AGENT_WEBHOOK_BACKOFF_S": "webhook_backoff_s",
    "MASTER_AGENT_WEBHOOK_TIMEOUT_S": "webhook_timeout_s",
    "MASTER_AGENT_ROUTE_CONFIDENCE": "route_confidence",
    "MASTER_AGENT_ROUTE_SCORE": "route_score",
    "MASTER_AGENT_CLARIFY_BELOW": "clarify_below",
    "MASTER_AGENT_SIMILAR_SCORE": "similar_score",
    "MASTER_AGENT_CLARIFY_ROUNDS": "clarify_rounds",
    "MASTER_AGENT_CONTEXT_MESSAGES": "context_messages",
    "MASTER_AGENT_CONTEXT_WINDOW_S": "context_window_s",
    "MASTER_AGENT_DISCOVERY_TTL_S": "discovery_ttl_s",
    "MASTER_AGENT_WARM_ROUTING": "warm_routing",
    "MASTER_AGENT_RATE_REQUESTS": "rate_requests",
    "MASTER_AGENT_RATE_REQUESTS_WINDOW_S": "rate_requests_window_s",
    "MASTER_AGENT_RATE_RUNS": "rate_runs",
    "MASTER_AGENT_RATE_RUNS_WINDOW_S": "rate_runs_window_s",
    "MASTER_AGENT_SIGN_IN_FAILURES": "sign_in_failures",
    "MASTER_AGENT_SIGN_IN_WINDOW_S": "sign_in_window_s",
    "MASTER_AGENT_CRON_MIN_INTERVAL_S": "cron_min_interval_s",
    "MASTER_AGENT_NOW": "now",
    "MASTER_AGENT_HOST": "host",
    "MASTER_AGENT_PORT": "port",
    "MASTER_AGENT_CURRENCY": "currency",
    "MASTER_AGENT_CORS_ALLOW_ORIGINS": "cors_allow_origins",
    "MASTER_AGENT_LANGGRAPH_JSON": "langgraph_json",
}
_FIELD_ENV = {field: env for env, field in ENV_FIELDS.items()}


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback: where ``auth=disabled`` is
    honoured. Here, with the settings, so that ``master-agent serve`` refuses a bind before it loads the
    service."""
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


class Settings(BaseModel):
    """Process-wide configuration, read once from the environment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    database_url: str | None = None
    """PostgreSQL URI; unset means an embedded PostgreSQL 16 + pgvector in ``data_dir``."""
    data_dir: Path = Path(".master-agent")
    """Where the embedded database and other local state live."""
    model: str = "offline"
    """``offline`` (the deterministic planner) or ``openai:<model>``."""
    openai_api_key: SecretStr | None = None
    """Key for the OpenAI-compatible endpoint."""
    openai_base_url: str | None = None
    """Base URL of any OpenAI-compatible server (vLLM, Ollama, Azure proxy, ...)."""
    openai_timeout_s: float | None = Field(default=None, gt=0)
    """The one timeout of every model client (chat, streaming, embeddings): connect, read, write and
    pool wait of one request, and the longest silence between two chunks of a streamed answer; unset:
    60 s for a hosted endpoint, 300 s for a server on this machine (one slot, read on a CPU: a long
    first prompt takes a minute)."""
    openai_max_retries: int | None = Field(default=None, ge=0, le=10)
    """Retries of a failed chat-completion request (timeouts, 408/409/429 honouring ``Retry-After``,
    5xx; with the client's backoff); unset: 3 for a hosted endpoint, 1 for a server on this machine
    (which keeps generating an abandoned answer, so each retry waits behind it)."""
    max_tokens: int = Field(default=2048, ge=16, le=200_000)
    """Most tokens of one model answer (sent with every request)."""
    max_tokens_field: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    """The request field carrying ``max_tokens``: ``auto`` sends ``max_completion_tokens`` to OpenAI
    itself and ``max_tokens`` (which every compatible server reads) to any ``OPENAI_BASE_URL``."""
    prompt_tokens: int = Field(default=16_000, ge=500, le=2_000_000)
    """Token budget of one prompt (system prompt, history, tool schemas): older tool results, then the
    context box, then the oldest turns are trimmed to fit before the call."""
    tokenizer: str = Field(default="auto", pattern=r"^(auto|estimate|tiktoken:[\w.-]+|file:.+)$")
    """How prompt tokens are counted: ``auto`` (tiktoken's encoding of the model for OpenAI itself, else
    the estimate), ``estimate`` (3 bytes per token, an over-count for every mainstream tokenizer),
    ``tiktoken:<encoding>``, or ``file:<path>`` (a Hugging Face ``tokenizer.json``)."""
    schema_mode: Literal["auto", "strict", "portable"] = "auto"
    """JSON schemas sent to the model server (tool parameters, structured output): ``strict`` as pydantic
    writes them; ``portable`` without what grammar-constrained servers choke on (length, pattern,
    format, item-count and range keywords, enums over 64 values, titles), each dropped constraint
    noted in the field's description and still checked on our side; ``auto``: strict for OpenAI
    itself, portable for any ``OPENAI_BASE_URL``."""
    max_depth: int = Field(default=5, ge=1, le=20)
    """Deepest sub-agent level; at the cap sub-agent tools are not offered."""
    max_iterations: int = Field(default=10, ge=1, le=100)
    """Agent turns per agent loop before escalating to a human."""
    subagent_timeout_s: float = Field(default=300.0, gt=0)
    """Wall-clock limit of one sub-agent call; past it the call returns an error envelope."""
    graph_cache_ttl_s: float = Field(default=300.0, ge=0)
    """How long a compiled per-tenant graph is reused."""
    pool_max_size: int = Field(default=10, ge=2, le=200)
    """Largest size of the shared connection pool."""
    pool_timeout_s: float = Field(default=30.0, gt=0, le=600)
    """How long a request waits for a pool connection while all are in use; past it the request is
    answered 503 ``busy`` (the database answers, the service is saturated)."""
    sql_timeout_ms: int = Field(default=5000, ge=10)
    """statement_timeout of the read-only SQL tool."""
    sql_row_cap: int = Field(default=500, ge=1)
    """Most rows the read-only SQL tool returns."""
    sql_max_bytes: int = Field(default=1_048_576, ge=1024)
    """Most bytes (of rows as JSON text) the read-only SQL tool returns; a larger row is not fetched."""
    secret_key: SecretStr | None = None
    """Secret the tenant reader roles' passwords are derived from; unset: ``<data_dir>/secret_key``."""
    auth: Literal["enabled", "disabled"] = "enabled"
    """``disabled`` is honoured only on a loopback bind; every request then acts as ``demo-retail``."""
    console_session_s: int = Field(default=43_200, ge=300, le=30 * 86_400)
    """Absolute lifetime of a web console sign-in (12 h), however active it is."""
    console_idle_s: int = Field(default=7_200, ge=120, le=30 * 86_400)
    """A web console sign-in unused this long ends (2 h); noticed within a minute."""
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    """Largest request body the service accepts (413 beyond)."""
    max_header_bytes: int = Field(default=65_536, ge=1024)
    """Largest request line plus headers the service reads (431 beyond, and the connection closed)."""
    operator_token: SecretStr | None = None
    """Bearer token for operator endpoints (``/metrics``); unset: they answer loopback clients only."""
    run_lease_s: float = Field(default=30.0, ge=1.0)
    """How long a worker owns a running run without a heartbeat; past it another worker takes over."""
    run_concurrency: int = Field(default=4, ge=1, le=256)
    """Runs one service process executes at once."""
    run_poll_s: float = Field(default=0.5, gt=0, le=3600)
    """How often an idle run worker looks for claimable runs without being told: a fallback only (new
    runs and freed slots wake it at once; the poll finds runs whose worker died and missed notices)."""
    outage_wait_s: float = Field(default=300.0, gt=0)
    """How long a run (and a stream) waits for an unreachable database to come back before failing;
    it then continues from its last checkpoint."""
    checkpoint_ttl: Literal["off", "keep_latest", "delete"] = "keep_latest"
    """Retention of idle threads' checkpoints (langgraph-api's ``checkpointer.ttl.strategy``)."""
    checkpoint_ttl_minutes: float = Field(default=10_080.0, ge=0)
    """Idle time after which a thread is swept (langgraph-api's ``default_ttl``); 7 days."""
    checkpoint_sweep_minutes: float = Field(default=60.0, gt=0)
    """How often the scheduler leader sweeps (langgraph-api's ``sweep_interval_minutes``)."""
    tenant_slots: int | None = Field(default=None, ge=1, le=256)
    """Most of a process's run slots one tenant may hold (a hard cap, isolating a hostile tenant at the
    cost of slots left idle); unset: none, any tenant may use every free slot. Either way the queued run
    of the tenant holding the fewest slots is claimed first."""
    embeddings: str = Field(default="auto", pattern=r"^(auto|local|hashing|openai:[A-Za-z0-9._-]+)$")
    """Embedding provider of village knowledge: the best installed (``auto``), ``local``, ``hashing`` or
    ``openai:<model>``."""
    knowledge_sharing: Literal["shared", "private"] = "shared"
    """Whether patterns learned from outcomes are shared (anonymised) with every tenant or kept private."""
    reuse_min_similarity: float | None = Field(default=None, ge=0, le=1)
    """Least cosine similarity between a goal and a pattern for the short path (unset: the embedder's
    own, measured on the paraphrase set: local 0.40, hashing 0.20, openai 0.40)."""
    reuse_min_confidence: float = Field(default=0.6, ge=0, le=1)
    """Least pattern confidence for the short path."""
    scheduler: Literal["enabled", "disabled"] = "enabled"
    """Whether ``serve`` runs the evolution scheduler (outcome checks, playbook triggers)."""
    notifier: str | None = Field(default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    """``module:attribute`` of the outbox notifier (an object with ``async deliver(message)``, or a
    class/factory making one); unset: the default notifier, which only records delivery."""
    scheduler_poll_s: float = Field(default=5.0, gt=0, le=3600)
    """How often a standby process tries to become the scheduler leader, and the leader wakes up."""
    graphs: tuple[str, ...] = ()
    """Extra graphs the API serves besides ``master_agent``: ``graph_id=module:function`` items (comma-
    separated in the env); the function takes a RunnableConfig and returns an uncompiled StateGraph."""
    domain_packs: tuple[str, ...] = ()
    """Extra modules to import at start; each registers domain packs (comma-separated in the env)."""
    store_index_fields: tuple[str, ...] = ("$",)
    """Long-term memory store: the JSON paths of an item's value that are embedded for semantic search
    (langgraph.json's ``store.index.fields``; ``$`` is the whole value; comma-separated in the env)."""
    store_default_ttl_minutes: float | None = Field(default=None, gt=0)
    """Store items put without a ``ttl`` expire after this (``store.ttl.default_ttl``); unset: never."""
    store_sweep_minutes: int = Field(default=5, ge=1)
    """How often expired store items are deleted (``store.ttl.sweep_interval_minutes``)."""
    webhook_allowed_networks: tuple[IPv4Network | IPv6Network, ...] = ()
    """Networks a run's webhook may reach although they are not public (loopback, private, link-local
    addresses are refused otherwise, against server-side request forgery); CIDRs, comma-separated."""
    webhook_attempts: int = Field(default=6, ge=1, le=50)
    """How many times a webhook is tried before it is given up (a 5xx, 408, 429 or no answer is retried)."""
    webhook_backoff_s: float = Field(default=2.0, gt=0, le=3600)
    """The wait before a webhook's second try; it doubles at each further try (at most an hour)."""
    webhook_timeout_s: float = Field(default=10.0, gt=0, le=300)
    """How long one webhook delivery may take."""
    route_confidence: float = Field(default=0.85, ge=0, le=1)
    """Front door: least intent confidence from which a follow-up read with the goal before it asks
    for another thing than that goal ("why so low?" after a figure); with a model configured, the local
    classifier's confidence from which it overrules the model."""
    route_score: float = Field(default=0.85, ge=0, le=1)
    """Front door: least score of the best agent (the relevance head's probability) that routes an
    EXECUTE at once, also one whose intent is less sure than ``clarify_below``."""
    clarify_below: float = Field(default=0.60, ge=0, le=1)
    """Front door: an intent less sure than this gets a clarifying question."""
    similar_score: float = Field(default=0.15, ge=0, le=1)
    """Front door: agents scoring within this of the best are offered as a choice."""
    warm_routing: bool = True
    """``serve`` loads what routing needs (embedder, intent head, exemplar vectors, discovery indexes,
    every tenant's chat graph) before ``/ok`` reports ready; off, they load on first use."""
    clarify_rounds: int = Field(default=3, ge=0, le=10)
    """Front door: clarifying questions per message at most; then the best guess, flagged."""
    context_messages: int = Field(default=10, ge=0, le=100)
    """Front door: earlier messages read with a new one (follow-ups), at most ..."""
    context_window_s: float = Field(default=3600.0, ge=0)
    """... and no older than this."""
    discovery_ttl_s: float = Field(default=30.0, ge=0)
    """Front door: how long a tenant's agent index (skills, success history) is reused."""
    rate_requests: int = Field(default=6000, ge=0)
    """Authenticated API requests one tenant may make per ``rate_requests_window_s`` (429 beyond); 0: no
    limit. Counted in PostgreSQL, so the limit holds for all the deployment's processes together."""
    rate_requests_window_s: int = Field(default=60, ge=1, le=86_400)
    """The window of ``rate_requests``."""
    rate_runs: int = Field(default=1200, ge=0)
    """Runs one tenant may start through the API per ``rate_runs_window_s`` (thread, stateless, batch,
    chat and goal runs; a cron's own firings are not counted); 0: no limit."""
    rate_runs_window_s: int = Field(default=60, ge=1, le=86_400)
    """The window of ``rate_runs``."""
    sign_in_failures: int = Field(default=10, ge=0)
    """Failed console sign-ins per client address, and per key prefix, in ``sign_in_window_s``; past it
    every sign-in from there (the right key too) is refused until the window ends; 0: no limit."""
    sign_in_window_s: int = Field(default=300, ge=1, le=86_400)
    """The window of ``sign_in_failures``."""
    cron_min_interval_s: int = Field(default=300, ge=0, le=86_400)
    """Least time between two firings of a cron or playbook schedule (refused 422 when shorter); below
    60 a seconds field (six-field cron) is accepted too; 0: no minimum."""
    host: str = "127.0.0.1"
    """Where ``serve`` listens (``0.0.0.0`` in a container); ``--host`` overrides it."""
    port: int = Field(default=8000, gt=0, lt=65536)
    """The port ``serve`` listens on; ``--port`` overrides it."""
    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")
    """The ISO 4217 code the console writes money in (costs, budgets, revenue): ``$9,000`` for USD."""
    cors_allow_origins: tuple[str, ...] = ()
    """Browser origins allowed to call the API (CORS, preflights answered); comma-separated, ``*`` for
    any. Unset: none (no CORS headers; a preflight is refused). LangGraph Studio:
    ``https://smith.langchain.com`` (``https://eu.smith.langchain.com`` in the EU region)."""
    langgraph_json: Path | None = None
    """A ``langgraph.json`` whose ``http`` section is honoured as langgraph-api honours it: ``http.app``
    (``./path.py:app`` or ``module:app``, a Starlette/FastAPI app whose routes are mounted before the
    service's, its lifespan run with it) and ``http.cors`` (when ``cors_allow_origins`` is unset)."""
    now: datetime | None = None
    """The runtime clock's reading at start (it runs on from there): "last month" and "today" in requests
    and every scheduled check count from it. Unset: the system clock. For evaluations and demos."""

    @field_validator("now")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value

    @field_validator("graphs")
    @classmethod
    def _graph_items(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            graph_id, _, target = item.partition("=")
            module, _, attribute = target.partition(":")
            if not graph_id or not module or not attribute:
                raise ValueError(f"{item!r} is not graph_id=module:function")
        return value

    @field_validator(
        "domain_packs",
        "graphs",
        "store_index_fields",
        "webhook_allowed_networks",
        "cors_allow_origins",
        mode="before",
    )
    @classmethod
    def _split_modules(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("model")
    @classmethod
    def _known_model(cls, value: str) -> str:
        if value == "offline":
            return value
        provider, _, name = value.partition(":")
        if provider != "openai" or not name:
            raise ValueError(f"{value!r} is not 'offline' or 'openai:<model>'")
        return value

    @field_validator("database_url")
    @classmethod
    def _postgres_uri(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must start with postgresql:// (or postgres://)")
        return value

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``environ`` (default ``os.environ``); raise ConfigError naming a bad variable."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {
            field: env[name] for name, field in ENV_FIELDS.items() if env.get(name, "") != ""
        }
        if "model" not in values:
            values["model"] = "openai:gpt-4o-mini" if values.get("openai_api_key") else "offline"
        try:
            return cls(**values)
        except ValidationError as error:
            problems = []
            for item in error.errors():
                field = str(item["loc"][0]) if item["loc"] else "?"
                problems.append(f"{_FIELD_ENV.get(field, field)}: {item['msg']}")
            raise ConfigError("invalid environment: " + "; ".join(problems)) from None

    @property
    def local_model_server(self) -> bool:
        """Whether ``OPENAI_BASE_URL`` is a server on this machine (loopback)."""
        host = urlsplit(self.openai_base_url or "").hostname or ""
        return host == "localhost" or host == "::1" or host.startswith("127.")

    def model_timeout_s(self) -> float:
        if self.openai_timeout_s is not None:
            return self.openai_timeout_s
        return 300.0 if self.local_model_server else 60.0

    def model_schema_mode(self) -> Literal["strict", "portable"]:
        if self.schema_mode != "auto":
            return self.schema_mode
        return "portable" if self.openai_base_url else "strict"

    def model_max_retries(self) -> int:
        if self.openai_max_retries is not None:
            return self.openai_max_retries
        return 1 if self.local_model_server else 3

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated like the environment)."""
        return type(self)(**{**self.model_dump(), **changes})
