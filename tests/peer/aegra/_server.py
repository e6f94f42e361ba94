"""Where the vendored peer suite reaches the server: the ``settings`` its modules imported from
``aegra_api.settings`` (server URL, and the few server settings the tests read), filled by
``conftest.py`` with the live ``master-agent serve`` it started and an API key of the demo tenant."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from master_agent.service.routes.runs.request import KEEPALIVE_S


@dataclass
class _App:
    SERVER_URL: str = ""
    #: The service answers only callers with a key; the SDK clients and raw HTTP clients send it.
    API_KEY: str = ""
    HEADERS: dict[str, str] = field(default_factory=dict)
    KEEPALIVE_INTERVAL_SECS: float = KEEPALIVE_S
    #: The largest ``limit`` a search takes (threads, store); above it, 422 naming ``limit``.
    MAX_SEARCH_LIMIT: int = 1000


@dataclass
class _Cron:
    #: Six-field (seconds) schedules are accepted below a minimum interval of 60 s (set by the fixture).
    CRON_ALLOW_SECONDS_SCHEDULE: bool = True
    CRON_POLL_INTERVAL_SECONDS: float = 1.0


@dataclass
class _Db:
    database_url: str = ""


@dataclass
class _Settings:
    app: _App = field(default_factory=_App)
    cron: _Cron = field(default_factory=_Cron)
    db: _Db = field(default_factory=_Db)


settings = _Settings()

#: The namespace of a graph's default assistant id (``uuid5(namespace, graph_id)``), langgraph-api's
#: ``NAMESPACE_GRAPH`` (Aegra's ``ASSISTANT_NAMESPACE_UUID`` is the same value).
ASSISTANT_NAMESPACE_UUID = UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
