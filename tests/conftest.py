"""Shared fixtures: one embedded PostgreSQL for the session, a fresh database where a test needs one."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import pytest

# The engine is imported by the fixtures that use it, not with this module: pytest-xdist's controller
# loads this file for its scheduling hooks alone (~2 CPU-s of imports while the workers start).
if TYPE_CHECKING:
    from master_agent.runtime import RuntimeResources
    from master_agent.settings import Settings

#: Units that take the longest (a whole run measured per test, session 12: ``--junitxml`` and the CPU time of
#: the test process, its subprocesses and PostgreSQL), handed out first when pytest-xdist spreads the units
#: (modules, and ``_ONE_UNIT``) over its workers (``make test``: ``--dist loadfile``): started last, one of
#: them would keep one worker busy after the other has finished.
_LONGEST_FIRST = (
    "test_schemathesis.py",
    "test_stop_rules.py",
    "test_console.py",
    "tests/peer/",
    "test_meta_rules.py",
    "test_cli.py",
    "test_assistant_verbs.py",
    "test_stream_order.py",
    "test_front_door.py",
    "test_service_crash.py",
    "test_service_workers.py",
)

#: Files handed to one worker together under ``--dist loadfile``: the vendored peer suite's files share one
#: ``master-agent serve`` (its package-scoped fixture), which every worker given some of them started.
_ONE_UNIT = ("tests/peer/",)


def _unit(nodeid: str) -> str | None:
    return next((prefix for prefix in _ONE_UNIT if nodeid.startswith(prefix)), None)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the files under each of ``_ONE_UNIT`` as one unit."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FilesAndUnits(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid) or super()._split_scope(nodeid)

    return FilesAndUnits(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a pytest-xdist worker, the longest units first (the order the workers are given units in);
    each unit's tests keep their order, and a run without workers keeps the files' order."""
    if hasattr(config, "workerinput"):
        rank = {name: place for place, name in enumerate(_LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(_unit(item.nodeid) or item.path.name, len(rank)))


@pytest.fixture(scope="session", autouse=True)
def served_graphs() -> None:
    """The front door and the graphs, registered as the service and the CLI register them at start."""
    from master_agent.service.graphs import register_graphs

    register_graphs()


@pytest.fixture(scope="session")
def pg_server_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real embedded PostgreSQL 16 + pgvector, stopped at the end of the session."""
    from pgserver import get_server  # type: ignore[attr-defined]

    from master_agent.storage.embedded import require_passwords

    server = get_server(Path(tmp_path_factory.mktemp("pgdata")), cleanup_mode="stop")
    require_passwords(server)
    # A throwaway server never waits for the disk: every commit (a run's checkpoint writes two per step)
    # and every database copy skips the fsync (~6 ms a commit here, ~8x slower than without). Commits,
    # their visibility and ``synchronous_commit`` (tests/test_checkpoints.py reads it) are unchanged;
    # only a crash of the machine itself would lose data.
    # Every SQL tool query connects as the tenant's reader role with its password (SCRAM-SHA-256): the
    # client derives the key from the password with ``scram_iterations`` rounds of HMAC, 4096 by default,
    # ~2 ms of CPU a connection. On this throwaway server the roles' keys are made with one round: the
    # same password checks, refusals and re-keying, without the cost of resisting a stolen key.
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET fsync = off")
        conn.execute("ALTER SYSTEM SET full_page_writes = off")
        conn.execute("ALTER SYSTEM SET scram_iterations = 1")
        conn.execute("SELECT pg_reload_conf()")
    yield server.get_uri()
    server.cleanup()


def database_uri(server_uri: str, name: str) -> str:
    head, _, query = server_uri.partition("?")
    return f"{head.rsplit('/', 1)[0]}/{name}?{query}"


def create_database(server_uri: str, prefix: str = "t", *, template: str | None = None) -> str:
    """A new database on the session server (empty, or a copy of ``template``); its URI."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(server_uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    return database_uri(server_uri, name)


# Opening a service on an empty database migrates it and installs the demo tenants (~4 s each, dozens of
# times a session); a copy of one database prepared so is ~1 s. The copy is then opened like any other
# database: migrations find nothing to apply and every install finds its tenant there.
_INSTALL = """
import asyncio, sys
from pathlib import Path
from master_agent.runtime import open_resources
from master_agent.settings import Settings

async def main() -> None:
    settings = Settings(database_url=sys.argv[1], data_dir=Path(sys.argv[2]), model="offline",
                        warm_routing=False)
    async with open_resources(settings):
        pass

asyncio.run(main())
"""
_installed_templates: dict[str, str] = {}


def installed_template(server_uri: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The name of a database migrated with the default packs' demo tenants, made once per server."""
    if server_uri not in _installed_templates:
        name = f"installed_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(server_uri, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        subprocess.run(
            [
                sys.executable,
                "-c",
                _INSTALL,
                database_uri(server_uri, name),
                str(tmp_path_factory.mktemp("template")),
            ],
            check=True,
            timeout=600,
        )
        _installed_templates[server_uri] = name
    return _installed_templates[server_uri]


def server_settings(
    server_uri: str, tmp_path_factory: pytest.TempPathFactory, prefix: str, **overrides: Any
) -> Settings:
    """Settings of a service under test: a fresh database, offline model, ``overrides`` on top.

    The database is a copy of the installed template unless the test names its own domain packs (whose
    tenants the template does not hold, and whose absent packs' tenants it should not see)."""
    from master_agent.settings import Settings

    template = None if "domain_packs" in overrides else installed_template(server_uri, tmp_path_factory)
    return Settings(
        **{
            "database_url": create_database(server_uri, prefix, template=template),
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
    from master_agent.settings import Settings

    return Settings(
        database_url=shared_database_uri,
        data_dir=tmp_path_factory.mktemp("data"),
        model="offline",
        subagent_timeout_s=30,
    )


@pytest.fixture(scope="session")
async def resources(settings: Settings) -> AsyncIterator[RuntimeResources]:
    """Migrated shared database with the retail demo tenant installed, offline model."""
    from master_agent.runtime import open_resources

    async with open_resources(settings) as opened:
        yield opened
