"""The peer suite's helpers (``tests/e2e/_utils.py`` of aegra-api 0.11.0), reaching our server: the
same names and behaviour, the client given the live server's URL and API key."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.peer.aegra._server import settings

TERMINAL_RUN_STATES = ("success", "error", "interrupted", "timeout")


async def await_terminal_run(
    client: Any,
    thread_id: str,
    run_id: str,
    *,
    timeout: float = 15.0,  # noqa: ASYNC109 (the peer's signature)
) -> dict[str, Any]:
    """Poll a run until it settles (a cancel is finished by the worker that owns the run)."""
    deadline = asyncio.get_running_loop().time() + timeout
    run: dict[str, Any] = await client.runs.get(thread_id, run_id)
    while run["status"] not in TERMINAL_RUN_STATES:
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(
                f"Run {run_id} did not settle within {timeout}s, last status={run['status']!r}"
            )
        await asyncio.sleep(0.25)
        run = await client.runs.get(thread_id, run_id)
    return run


def elog(title: str, payload: Any) -> None:
    """Pretty JSON of what a step saw (shown by pytest only when the test fails)."""
    try:
        formatted = json.dumps(payload, ensure_ascii=False, indent=2, default=str)
    except (TypeError, ValueError):
        formatted = str(payload)
    print(f"\n=== {title} ===\n{formatted}\n")


def get_e2e_client() -> LangGraphClient:
    """The LangGraph SDK client of the live server, with the demo tenant's key."""
    return get_client(url=settings.app.SERVER_URL, api_key=settings.app.API_KEY)


def check_and_skip_if_geo_blocked(run_data: dict[str, Any]) -> None:
    """Aegra's guard against OpenAI refusing the region; the graphs here call no remote model."""
