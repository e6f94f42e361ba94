"""Shared fixtures: one embedded PostgreSQL for the session, a fresh database where a test needs one."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pgserver import get_server  # type: ignore[attr-defined]

from master_agent.runtime import RuntimeResources, open_resources
from master_agent.service.graphs import register_graphs
from master_agent.settings import Settings
from master_agent.storage.embedded import require_passwords


@pytest.fixture(scope="session", autouse=True)
def served_graphs() -> None:
    """The front door and the graphs, registered as the service and the CLI register them at start."""
    register_graphs()


@pytest.fixture(scope="session")
def pg_server_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real embedded PostgreSQL 16 + pgvector, stopped at the end of the session."""
    server = get_server(Path(tmp_path_factory.mktemp("pgdata")), cleanup_mode="stop")
    require_passwords(server)
    yield server.get_uri()
    server.cleanup()


def database_uri(server_uri: str, name: str) -> str:
    head, _, query = server_uri.partition("?")
    return f"{head.rsplit('/', 1)[0]}/{name}?{query}"


def create_database(server_uri: str, prefix: str = "t") -> str:
    """A new, empty database on the session server; its URI."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return database_uri(server_uri, name)


def server_settings(
    server_uri: str, tmp_path_factory: pytest.TempPathFactory, prefix: str, **overrides: Any
) -> Settings:
    """Settings of a service under test: a fresh database, offline model, ``overrides`` on top."""
    return Settings(
        **{
            "database_url": create_database(server_uri, prefix),
            "data_dir": tmp_path_factory.mktemp(prefix),
            "model": "offline",
            # Warming every tenant's routing before ready costs each service seconds; a test's first
            # message loads what it needs (tests/test_warm_start.py turns it on).
            "warm_routing": False,
            **overrides,
        }
    )


@pytest.fixture
def fresh_database_uri(pg_server_uri: str) -> str:
    """A new, empty database on the session server."""
    return create_database(pg_server_uri)


@pytest.fixture(scope="session")
def shared_database_uri(pg_server_uri: str) -> str:
    with psycopg.connect(pg_server_uri, autocommit=True) as conn:
        conn.execute('CREATE DATABASE "shared"')
    return database_uri(pg_server_uri, "shared")


@pytest.fixture(scope="session")
def settings(shared_database_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        database_url=shared_database_uri,
        data_dir=tmp_path_factory.mktemp("data"),
        model="offline",
        subagent_timeout_s=30,
    )


@pytest.fixture(scope="session")
async def resources(settings: Settings) -> AsyncIterator[RuntimeResources]:
    """Migrated shared database with the retail demo tenant installed, offline model."""
    async with open_resources(settings) as opened:
        yield opened
