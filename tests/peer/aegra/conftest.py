"""One real service for the whole vendored peer suite: ``create_app`` under uvicorn on a loopback port,
on a fresh database of the session's embedded PostgreSQL, serving the graphs of ``graphs.py`` under the
names the suite uses; ``_server.settings`` tells the tests its URL and an API key of the demo tenant."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from master_agent.service.api_parity import PEER_DIFFERENCES
from master_agent.service.auth import create_key
from tests.conftest import server_settings
from tests.live_server import LiveServer
from tests.peer.aegra._server import settings
from tests.peer.aegra.graphs import GRAPHS

PEER = "tests/peer/aegra/"

#: Longest one peer test may take: a test waiting for what never comes fails instead of hanging.
PEER_TEST_TIMEOUT_S = 60.0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: the peer's end-to-end tests (against a live server)")
    config.addinivalue_line("markers", "prod_only: the peer's tests of a production deployment")


def _bounded(test: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(test)
    async def bounded(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.wait_for(test(*args, **kwargs), PEER_TEST_TIMEOUT_S)

    return bounded


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if PEER not in item.nodeid or not isinstance(item, pytest.Function):
            continue
        # The peer sends the deprecated ``checkpoint_during`` on purpose; the SDK warns as it sends it.
        item.add_marker(
            pytest.mark.filterwarnings("ignore:`checkpoint_during` is deprecated:DeprecationWarning")
        )
        # Its expectations that are Aegra's own and not langgraph-api's (``make api-diff`` lists them).
        why = PEER_DIFFERENCES.get(item.nodeid.split(PEER, 1)[1])
        if why is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=why))
        if inspect.iscoroutinefunction(item.obj):
            item.obj = _bounded(item.obj)


@pytest.fixture(scope="package", autouse=True)
async def peer_server(
    pg_server_uri: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LiveServer]:
    served = server_settings(
        pg_server_uri,
        tmp_path_factory,
        "peer",
        graphs=GRAPHS,
        # The suite's cron smoke test fires a six-field (seconds) schedule.
        cron_min_interval_s=0,
    )
    async with LiveServer(served) as live:
        pool = live.server.config.app.state.service.resources.database.pool
        key = (await create_key(pool, "demo-retail")).key
        settings.app.SERVER_URL = live.url
        settings.app.API_KEY = key
        settings.app.HEADERS = {"X-API-Key": key}
        settings.db.database_url = str(served.database_url)
        yield live
