"""LangGraph Studio talks to ``serve`` directly: its requests replayed from a browser origin the operator
allowed (preflight, info, assistants, graph, threads, a streamed run), answered with CORS headers; an
origin not allowed gets none. And langgraph.json's ``http.app`` routes served beside the API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from master_agent.service.auth import create_key
from tests.live_server import LiveServer, live_server_fixture, sse_events

STUDIO = "https://smith.langchain.com"
GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"

live = live_server_fixture(
    "studio",
    cors_allow_origins=(STUDIO,),
    langgraph_json=Path(__file__).parent / "studio" / "langgraph.json",
)


@pytest.fixture(scope="module")
async def studio(live: LiveServer) -> AsyncIterator[httpx.AsyncClient]:
    """A client that sends what the Studio page's SDK sends: its origin and an API key."""
    key = (await create_key(live.server.config.app.state.service.resources.database.pool, "demo-retail")).key
    headers = {"Origin": STUDIO, "x-api-key": key}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=120) as client:
        yield client


async def _preflight(
    client: httpx.AsyncClient, method: str, path: str, origin: str = STUDIO
) -> httpx.Response:
    return await client.options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "content-type,x-api-key",
            # Chrome's private network access: a public page calling a loopback server asks first.
            "Access-Control-Request-Private-Network": "true",
        },
    )


def _allowed(response: httpx.Response) -> None:
    assert response.headers.get("access-control-allow-origin") == STUDIO, response.headers


async def _replayed(studio: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> httpx.Response:
    preflight = await _preflight(studio, method, path)
    assert preflight.status_code == 200, preflight.text
    _allowed(preflight)
    assert method in preflight.headers["access-control-allow-methods"]
    assert "x-api-key" in preflight.headers["access-control-allow-headers"].lower()
    assert preflight.headers["access-control-allow-private-network"] == "true"
    response = await studio.request(method, path, **kwargs)
    assert response.status_code == 200, response.text
    _allowed(response)
    return response


async def test_studios_requests_are_answered(studio: httpx.AsyncClient) -> None:
    info = await _replayed(studio, "GET", "/info")
    assert "version" in info.json()
    assistants = await _replayed(
        studio, "POST", "/assistants/search", json={"graph_id": "master_agent", "limit": 100, "offset": 0}
    )
    assistant_id = assistants.json()[0]["assistant_id"]
    assert "x-pagination-total" in assistants.headers["access-control-expose-headers"].lower()
    graph = await _replayed(studio, "GET", f"/assistants/{assistant_id}/graph", params={"xray": "true"})
    assert graph.json()["nodes"]
    await _replayed(studio, "GET", f"/assistants/{assistant_id}/schemas")
    thread = (await _replayed(studio, "POST", "/threads", json={"metadata": {}})).json()

    run = {
        "assistant_id": assistant_id,
        "input": {"goal": GOAL},
        "config": {"configurable": {}},
        "metadata": {},
        "stream_mode": ["values", "messages-tuple", "updates"],
        "stream_subgraphs": True,
        "stream_resumable": True,
        "on_disconnect": "cancel",
        "multitask_strategy": "rollback",
        "checkpoint": None,
    }
    path = f"/threads/{thread['thread_id']}/runs/stream"
    assert (await _preflight(studio, "POST", path)).status_code == 200
    events = []
    async with studio.stream("POST", path, json=run) as streamed:
        assert streamed.status_code == 200
        _allowed(streamed)
        assert "content-location" in streamed.headers["access-control-expose-headers"].lower()
        async for _, event, data in sse_events(streamed):
            events.append((event, data))
    names = [event for event, _ in events]
    assert names[0] == "metadata" and "values" in names and "error" not in names
    assert [data for event, data in events if event == "values"][-1]["goal"] == GOAL

    # The thread list Studio shows, by graph: the run stamped it.
    found = await _replayed(
        studio,
        "POST",
        "/threads/search",
        json={"metadata": {"graph_id": "master_agent"}, "limit": 10, "offset": 0, "sort_by": "updated_at"},
    )
    assert thread["thread_id"] in [t["thread_id"] for t in found.json()]
    state = await _replayed(studio, "GET", f"/threads/{thread['thread_id']}/state")
    assert state.json()["values"]["goal"] == GOAL


async def test_an_origin_not_allowed_gets_no_cors_headers(studio: httpx.AsyncClient) -> None:
    refused = await _preflight(studio, "POST", "/threads/search", origin="https://elsewhere.example")
    assert refused.status_code == 400 and "access-control-allow-origin" not in refused.headers
    answered = await studio.get("/info", headers={"Origin": "https://elsewhere.example"})
    assert "access-control-allow-origin" not in answered.headers


async def test_custom_routes_of_langgraph_json_are_served(live: LiveServer) -> None:
    async with httpx.AsyncClient(base_url=live.url, timeout=30) as http:
        hello = await http.get("/custom/hello")
        assert hello.status_code == 200 and hello.json() == {"greeting": "hello from the custom app"}
        # The service's own routes are still there, behind their keys.
        assert (await http.get("/ok")).status_code == 200
        assert (await http.post("/threads/search", json={})).status_code in (401, 403)


def test_a_langgraph_json_naming_no_app_is_refused(tmp_path: Path) -> None:
    from master_agent.errors import ConfigError
    from master_agent.service.app import create_app
    from master_agent.settings import Settings

    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"http": {"app": "./missing.py:app"}}))
    with pytest.raises(ConfigError, match=r"missing\.py"):
        create_app(Settings(langgraph_json=config))
