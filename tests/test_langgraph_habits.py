"""What a LangGraph user does out of habit, through the official langgraph-sdk against the real service,
answered as langgraph-api answers it: run-time context defaulted, unknown body fields ignored, options
the SDK sends acted on, thread metadata stamped by runs, native subgraphs listed."""

from __future__ import annotations

import uuid

from langgraph_sdk.client import LangGraphClient

from tests.live_server import LiveServer, live_server_fixture, sdk, two_tenant_keys

live = live_server_fixture(
    "habits",
    graphs=(
        "habits=tests.habits_graph:make_graph",
        "tally=tests.tally_graph:make_graph",
        "sleepy=tests.sleepy_graph:make_graph",
    ),
)
keys = two_tenant_keys


def _client(live: LiveServer, keys: dict[str, str]) -> LangGraphClient:
    return sdk(live, keys["demo-retail"])


async def test_a_run_without_context_gets_the_context_schema_defaults(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = _client(live, keys)
    thread = await client.threads.create()
    plain = await client.runs.wait(thread["thread_id"], "habits", input={"name": "Ana"})
    assert plain["greeting"] == "Hello, Ana!"
    # A context given is used; a key the schema does not declare is dropped, as langgraph-api drops it.
    given = await client.runs.wait(
        None, "habits", input={"name": "Ana"}, context={"greeting": "Bonjour", "mood": "sunny"}
    )
    assert given["greeting"] == "Bonjour, Ana!"
    # Without context, the configurable keys the schema declares are the context (langgraph-api's).
    configured = await client.runs.wait(
        None, "habits", input={"name": "Ana"}, config={"configurable": {"punctuation": "?"}}
    )
    assert configured["greeting"] == "Hello, Ana?"
    # An assistant's context is under the request's.
    assistant = await client.assistants.create("habits", context={"greeting": "Hi"}, name=uuid.uuid4().hex)
    mine = await client.runs.wait(None, assistant["assistant_id"], input={"name": "Ana"})
    assert mine["greeting"] == "Hi, Ana!"
