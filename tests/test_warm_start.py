"""Warm start (issue 42): ``serve`` loads what routing needs before ``/ok`` reports ready, so the first
message loads nothing more than the next."""

from __future__ import annotations

import httpx

from master_agent.routing import intent
from master_agent.routing.graph import discovery_for
from master_agent.runtime import RuntimeResources
from master_agent.runtime.factory import graph_cache
from master_agent.service.state import ServiceState
from tests.live_server import LiveServer, chat, live_server_fixture, two_tenant_keys

live = live_server_fixture("warm", warm_routing=True)
keys = two_tenant_keys


async def test_ok_is_503_until_routing_is_loaded_and_the_first_message_loads_nothing_more(
    live: LiveServer, keys: dict[str, str]
) -> None:
    service: ServiceState = live.server.config.app.state.service
    resources: RuntimeResources = service.resources
    async with httpx.AsyncClient(base_url=live.url, timeout=120) as client:
        assert (await client.get("/ok")).json() == {"ok": True}
        service.ready.clear()  # as while warming up
        unready = await client.get("/ok")
        assert unready.status_code == 503 and unready.json()["ok"] is False
        service.ready.set()
        assert (await client.get("/ok")).status_code == 200

    discovery = discovery_for(resources.evolution, resources.settings)
    cache = graph_cache(resources)
    builds, misses = discovery.builds, cache.misses
    exemplars = len(intent._EXEMPLAR_VECTORS)
    assert builds >= 1 and exemplars > 0  # loaded before ready
    headers = {"Authorization": f"Bearer {keys['demo-retail']}"}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=120) as client:
        first = await chat(client, "list my agents")
    assert first["values"]["routing"]["target"] == {"kind": "query", "name": "list_agents"}
    # The first message found the tenant's graph, discovery index and exemplar vectors ready.
    assert discovery.builds == builds and cache.misses == misses
    assert len(intent._EXEMPLAR_VECTORS) == exemplars
