"""Tenant agents as data, through the real service and the official langgraph-sdk: created, run at once,
discovered by the front door, isolated per tenant, refused with every reason, versioned (a run stays on
the version it started on), rolled back."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from langgraph.pregel.remote import RemoteGraph
from langgraph_sdk.errors import NotFoundError

from master_agent.capabilities import assistants
from master_agent.capabilities.agents import MAX_REQUIRED_ENTITIES, MAX_SKILLS, MAX_SUB_AGENTS, MAX_TOOLS
from master_agent.runtime import RuntimeResources
from tests.live_server import LiveServer, chat, data_schema, live_server_fixture, sdk, two_tenant_keys

WEEKLY_REFUNDS = (
    "SELECT store_id, date_trunc('week', sold_at)::date AS week, count(*) AS transactions, "
    "round(avg(refunded::int), 4)::float AS refund_rate FROM transactions "
    "GROUP BY store_id, week ORDER BY week DESC, store_id LIMIT 40"
)


def refund_agent(label: str = "v1", name: str = "refund_rate_reporter") -> dict[str, Any]:
    return {
        "name": name,
        "description": "Reports the weekly refund rate of every store.",
        "skills": ["weekly refund rate per store", "how many sales were refunded each week by store"],
        "instructions": "Run the weekly refund query and report its rows.",
        "queries": [
            {
                "name": f"{name}_weekly",
                "description": "Refund rate of each store per week, latest weeks first.",
                "sql": WEEKLY_REFUNDS.replace("SELECT ", f"SELECT '{label}' AS spec, ", 1),
            }
        ],
        "output_schema": {
            "type": "object",
            "properties": {
                "rows": {"type": "array", "items": {"type": "object"}},
                "row_count": {"type": "integer"},
            },
            "required": ["rows"],
        },
    }


live = live_server_fixture("builder", graphs=("greeter=tests.context_graph:make_graph",))
keys = two_tenant_keys


def _http(live: LiveServer, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=live.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)


async def test_a_tenant_agent_is_created_and_runs_at_once(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    before = await client.assistants.count()
    agent = await client.assistants.create(
        "master_agent", context={"agent_spec": refund_agent(name="refunds_now")}, metadata={"team": "finance"}
    )
    assert agent["name"] == "refunds_now" and agent["version"] == 1
    assert await client.assistants.count() == before + 1
    assert [a["assistant_id"] for a in await client.assistants.search(metadata={"team": "finance"})] == [
        agent["assistant_id"]
    ]

    thread = await client.threads.create()
    out = await client.runs.wait(
        thread["thread_id"], agent["assistant_id"], input={"goal": "weekly refund rate per store"}
    )
    assert isinstance(out, dict)
    assert out["envelope"]["status"] == "success", out["envelope"]
    rows = out["solution"]["rows"]
    assert rows and {"store_id", "week", "refund_rate", "transactions"} <= set(rows[0])
    resources: RuntimeResources = live.server.config.app.state.service.resources
    async with resources.database.pool.connection() as conn:
        schema = await data_schema(live)
        truth = await (
            await conn.execute(
                f"SELECT avg(refunded::int)::float AS rate FROM {schema}.transactions "
                "WHERE store_id = %s AND date_trunc('week', sold_at)::date = %s::date",
                (rows[0]["store_id"], rows[0]["week"]),
            )
        ).fetchone()
    assert rows[0]["refund_rate"] == pytest.approx(truth["rate"], abs=1e-4)  # the tenant's data, really read

    # RemoteGraph on the assistant: the same agent as a graph of another program.
    remote = RemoteGraph(agent["assistant_id"], url=live.url, api_key=keys["demo-retail"])
    streamed = await remote.ainvoke({"goal": "weekly refund rate per store"})
    assert streamed["solution"]["rows"] == rows

    schemas = await client.assistants.get_schemas(agent["assistant_id"])
    assert "goal" in schemas["input_schema"]["properties"]
    assert "agent_id" in schemas["config_schema"]["properties"]


async def test_the_front_door_discovers_a_new_agent(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    await client.assistants.create("master_agent", context={"agent_spec": refund_agent(name="refund_watch")})
    async with _http(live, keys["demo-retail"]) as http:
        values = (await chat(http, "Show the weekly refund rate per store"))["values"]
    assert values["routing"]["target"]["kind"] == "agent", values["routing"]
    assert values["routing"]["target"]["name"] in ("refund_watch", "refunds_now")
    assert values["reply"]["status"] == "success"
    assert values["solution"]["rows"][0]["refund_rate"] >= 0


async def test_another_tenant_cannot_see_run_or_change_it(live: LiveServer, keys: dict[str, str]) -> None:
    mine = sdk(live, keys["demo-retail"])
    theirs = sdk(live, keys["other-shop"])
    agent = await mine.assistants.create(
        "master_agent", context={"agent_spec": refund_agent(name="refunds_private")}
    )
    assistant_id = agent["assistant_id"]
    with pytest.raises(NotFoundError):
        await theirs.assistants.get(assistant_id)
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await theirs.runs.wait(None, assistant_id, input={"goal": "weekly refund rate per store"})
    assert refused.value.response.status_code == 404
    with pytest.raises(NotFoundError):
        await theirs.assistants.update(assistant_id, metadata={"owner": "me"})
    with pytest.raises(NotFoundError):
        await theirs.assistants.delete(assistant_id)
    assert assistant_id not in {a["assistant_id"] for a in await theirs.assistants.search(limit=100)}
    # Its name is its tenant's own: another tenant may use the same one.
    same = await theirs.assistants.create(
        "master_agent", context={"agent_spec": refund_agent(name="refunds_private")}
    )
    assert same["assistant_id"] != assistant_id
    assert (await mine.assistants.get(assistant_id))["version"] == 1


async def test_an_invalid_spec_is_refused_with_every_reason(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    await client.assistants.create("master_agent", context={"agent_spec": refund_agent(name="refund_taken")})
    before = await client.assistants.count()
    bad = {
        **refund_agent(name="refund_taken"),
        "tools": ["query_tenant_data", "send_rockets"],
        "sub_agents": ["research", "nobody"],
        "output_schema": {"type": "object", "properties": {"rows": {"type": "tabular"}}},
        "queries": [{"name": "drop_it", "description": "x", "sql": "DELETE FROM transactions"}],
    }
    async with _http(live, keys["demo-retail"]) as http:
        response = await http.post(
            "/assistants", json={"graph_id": "master_agent", "context": {"agent_spec": bad}}
        )
        assert response.status_code == 400, response.text
        body = response.json()
        fields = {item["field"] for item in body["errors"]}
        assert {"name", "tools[1]", "sub_agents[1]", "output_schema", "queries[0].sql"} <= fields
        assert body["field"] == "context.agent_spec"
        cycle = {**refund_agent(name="loop_a"), "sub_agents": ["loop_a"]}
        response = await http.post(
            "/assistants", json={"graph_id": "master_agent", "context": {"agent_spec": cycle}}
        )
        assert response.status_code == 400
        assert any("cycle" in item["message"] for item in response.json()["errors"])
        shapeless = await http.post(
            "/assistants", json={"graph_id": "master_agent", "context": {"agent_spec": {"name": "X y"}}}
        )
        assert shapeless.status_code == 400
        assert {"name", "description"} <= {item["field"] for item in shapeless.json()["errors"]}
        unknown_runtime = {**refund_agent(name="refund_runtime"), "runtime": "teleport"}
        response = await http.post(
            "/assistants", json={"graph_id": "master_agent", "context": {"agent_spec": unknown_runtime}}
        )
        assert response.status_code == 400
        assert "runtime" in {item["field"] for item in response.json()["errors"]}
        # A deepagents harness spawns one level: a sub-agent with sub-agents of its own is refused.
        parent = {**refund_agent(name="refund_parent"), "sub_agents": ["refund_taken"]}
        await client.assistants.create("master_agent", context={"agent_spec": parent})
        before += 1
        deep = {**refund_agent(name="refund_deep"), "runtime": "deepagents", "sub_agents": ["refund_parent"]}
        response = await http.post(
            "/assistants", json={"graph_id": "master_agent", "context": {"agent_spec": deep}}
        )
        assert response.status_code == 400
        assert [(e["field"], "one level" in e["message"]) for e in response.json()["errors"]] == [
            ("sub_agents[0]", True)
        ]
    assert await client.assistants.count() == before  # nothing stored


async def test_an_agent_too_big_to_serve_is_refused_naming_each_list(
    live: LiveServer, keys: dict[str, str]
) -> None:
    """20,000 skills were accepted, and the tenant's next chat message took 78 s (every skill is
    embedded for discovery): each list of a document has a documented bound."""
    client = sdk(live, keys["demo-retail"])
    before = await client.assistants.count()
    huge = {
        **refund_agent(name="refund_hoarder"),
        "skills": [f"refund question number {n}" for n in range(20_000)],
        "tools": ["query_tenant_data"] * (MAX_TOOLS + 1),
        "sub_agents": ["research"] * (MAX_SUB_AGENTS + 1),
        "required_entities": ["store"] * (MAX_REQUIRED_ENTITIES + 1),
    }
    async with _http(live, keys["demo-retail"]) as http:
        response = await http.post(
            "/assistants", json={"graph_id": "master_agent", "context": {"agent_spec": huge}}
        )
        assert response.status_code == 400, response.text
        fields = {item["field"] for item in response.json()["errors"]}
        assert {"skills", "tools", "sub_agents", "required_entities"} <= fields
        at_most = {
            **refund_agent(name="refund_many_skills"),
            "skills": [f"skill {n}" for n in range(MAX_SKILLS)],
        }
        response = await http.post(
            "/assistants", json={"graph_id": "master_agent", "context": {"agent_spec": at_most}}
        )
        assert response.status_code == 200, response.text
    assert await client.assistants.count() == before + 1


async def test_a_tenant_keeps_at_most_its_documented_number_of_assistants(
    live: LiveServer, keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = sdk(live, keys["demo-retail"])
    count = await client.assistants.count()
    monkeypatch.setattr(assistants, "MAX_ASSISTANTS_PER_TENANT", count + 1)
    await client.assistants.create("greeter", name="one more")
    async with _http(live, keys["demo-retail"]) as http:
        refused = await http.post("/assistants", json={"graph_id": "greeter", "name": "one too many"})
    assert refused.status_code == 400 and refused.json()["field"] == "assistant", refused.text
    assert "delete one first" in refused.text
    assert await client.assistants.count() == count + 1
    # Another tenant's count is its own.
    assert (await sdk(live, keys["other-shop"]).assistants.create("greeter", name="theirs"))[
        "name"
    ] == "theirs"


async def test_a_run_keeps_its_version_while_another_is_promoted_then_rolled_back(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    agent = await client.assistants.create(
        "master_agent", context={"agent_spec": refund_agent("v1", "refund_versions")}
    )
    assistant_id = agent["assistant_id"]
    thread = await client.threads.create()
    # One turn, then a human decides: the run waits in flight, on v1.
    waiting = await client.runs.wait(
        thread["thread_id"],
        assistant_id,
        input={"goal": "weekly refund rate per store"},
        config={"configurable": {"complexity": "strategic", "max_iterations": 1}},
    )
    assert isinstance(waiting, dict) and waiting.get("__interrupt__"), waiting
    v2 = await client.assistants.update(
        assistant_id, context={"agent_spec": refund_agent("v2", "refund_versions")}
    )
    assert v2["version"] == 2
    resumed = await client.runs.wait(
        thread["thread_id"], assistant_id, command={"resume": "Run the query and answer."}
    )
    assert isinstance(resumed, dict), resumed
    assert {row["spec"] for row in resumed["solution"]["rows"]} == {
        "v1"
    }  # finished on the version it began on

    fresh = await client.runs.wait(None, assistant_id, input={"goal": "weekly refund rate per store"})
    assert isinstance(fresh, dict) and {row["spec"] for row in fresh["solution"]["rows"]} == {"v2"}

    versions = await client.assistants.get_versions(assistant_id)
    assert [v["version"] for v in versions] == [2, 1]
    back = await client.assistants.set_latest(assistant_id, 1)
    assert back["version"] == 1
    rolled = await client.runs.wait(None, assistant_id, input={"goal": "weekly refund rate per store"})
    assert isinstance(rolled, dict) and {row["spec"] for row in rolled["solution"]["rows"]} == {"v1"}
    async with _http(live, keys["demo-retail"]) as http:
        missing = await http.post(f"/assistants/{assistant_id}/latest", json={"version": 9})
        assert missing.status_code == 400 and missing.json()["field"] == "version"
    await client.assistants.delete(assistant_id)
    with pytest.raises(NotFoundError):
        await client.assistants.get(assistant_id)


async def test_an_assistants_context_reaches_a_graph_with_a_context_schema(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    french = await client.assistants.create("greeter", context={"language": "fr"}, name="french greeter")
    out = await client.runs.wait(None, french["assistant_id"], input={"name": "Ana"})
    assert isinstance(out, dict) and out["greeting"] == "Bonjour, Ana"
    # A run's own context wins over its assistant's.
    out = await client.runs.wait(
        None, french["assistant_id"], input={"name": "Bo"}, context={"language": "en"}
    )
    assert isinstance(out, dict) and out["greeting"] == "Hello, Bo"
    schemas = await client.assistants.get_schemas(french["assistant_id"])
    assert schemas["context_schema"]["properties"] == {"language": {"title": "Language", "type": "string"}}


async def test_subgraphs_list_the_agents_an_agent_calls(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    master = (await client.assistants.search(graph_id="master_agent", metadata={"created_by": "system"}))[0]
    top = await client.assistants.get_subgraphs(master["assistant_id"])
    assert "master_agent" in top
    deep = await client.assistants.get_subgraphs(
        master["assistant_id"], namespace="master_agent", recurse=True
    )
    assert "master_agent|research" in deep and "master_agent|research|data_analysis" in deep
    assert "store_id" in deep["master_agent|research"]["input_schema"]["properties"]
    composite = await client.assistants.create(
        "master_agent",
        context={
            "agent_spec": {
                **refund_agent(name="refunds_and_causes"),
                "sub_agents": ["research"],
            }
        },
    )
    nested = await client.assistants.get_subgraphs(composite["assistant_id"])
    assert list(nested) == ["research"]


async def test_system_assistants_cannot_be_changed(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    master = (await client.assistants.search(graph_id="master_agent", metadata={"created_by": "system"}))[0]
    async with _http(live, keys["demo-retail"]) as http:
        response = await http.delete(f"/assistants/{master['assistant_id']}")
        assert response.status_code == 409
        response = await http.post("/assistants", json={"graph_id": "nope"})
        assert response.status_code == 400 and response.json()["field"] == "graph_id"
        taken = str(uuid.uuid4())
        assert (
            await http.post("/assistants", json={"graph_id": "greeter", "assistant_id": taken})
        ).status_code == 200
        again = await http.post("/assistants", json={"graph_id": "greeter", "assistant_id": taken})
        assert again.status_code == 409


def _question(turn: dict[str, Any]) -> dict[str, Any]:
    interrupts = turn["state"]["interrupts"]
    assert interrupts, turn["values"].get("reply")
    value: dict[str, Any] = interrupts[0]["value"]
    return value


async def test_the_builder_conversation_creates_an_agent_after_a_preview(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["demo-retail"])
    before = await client.assistants.count()
    async with _http(live, keys["demo-retail"]) as http:
        turn = await chat(http, "Create an agent that reports the weekly refund rate per store")
        # Even with agents whose skills are this very task, "create an agent that ..." is a CREATE.
        assert turn["values"]["routing"]["target"]["kind"] == "builder"
        asked = _question(turn)
        assert asked["kind"] == "agent_builder"
        rounds = 0
        while asked["step"] == "clarification":  # a missing piece: at most three rounds
            rounds += 1
            assert rounds <= 3 and asked["options"]
            turn = await chat(http, asked["options"][0], turn["thread_id"])
            asked = _question(turn)
        assert asked["step"] == "preview" and not asked["problems"]
        spec = asked["spec"]
        assert spec["name"].startswith("weekly_refund_rate") and spec["tools"]
        assert await client.assistants.count() == before  # nothing before the confirmation

        # A change first: the preview comes back with it.
        turn = await chat(http, "call it refund_reporter", turn["thread_id"])
        asked = _question(turn)
        assert asked["step"] == "preview" and asked["spec"]["name"] == "refund_reporter"
        turn = await chat(http, "yes", turn["thread_id"])
        reply = turn["values"]["reply"]
        assert reply["kind"] == "builder" and reply["status"] == "created", reply
        assert not turn["state"]["interrupts"]
    made = await client.assistants.get(reply["data"]["assistant_id"])
    assert made["name"] == "refund_reporter" and made["metadata"]["created_by"] == "builder"
    assert await client.assistants.count() == before + 1

    async with _http(live, keys["demo-retail"]) as http:
        # UPDATE: the change is shown as a diff of the spec, applied only when confirmed.
        turn = await chat(http, "Update the agent refund_reporter: add search_village_knowledge")
        assert turn["values"]["routing"]["target"]["kind"] == "builder"
        asked = _question(turn)
        assert asked["step"] == "preview" and '+    "search_village_knowledge"' in asked["diff"]
        turn = await chat(http, "no", turn["thread_id"])
        assert turn["values"]["reply"]["status"] == "cancelled"
        assert (await client.assistants.get(made["assistant_id"]))["version"] == 1
        turn = await chat(http, "Update the agent refund_reporter: add search_village_knowledge")
        turn = await chat(http, "yes", turn["thread_id"])
        assert turn["values"]["reply"]["status"] == "updated"
    assert (await client.assistants.get(made["assistant_id"]))["version"] == 2


async def test_an_agent_is_changed_by_name_words_and_a_free_request_with_the_builders_preview(
    live: LiveServer, keys: dict[str, str]
) -> None:
    client = sdk(live, keys["other-shop"])
    digest = {
        **refund_agent(name="returns_digest"),
        "description": "A weekly digest of product returns per store.",
        "skills": ["weekly returns digest per store"],
    }
    made = await client.assistants.create("master_agent", context={"agent_spec": digest})
    async with _http(live, keys["other-shop"]) as http:
        for message, shown in (
            # By its name's words, not its name: "my returns digest agent".
            ("Add search_village_knowledge to my returns digest agent", '+    "search_village_knowledge"'),
            # Nothing the builder reads structurally: the request joins the instructions, previewed.
            ("Update returns_digest so it also shows the refunded amount", "also shows the refunded amount"),
            ("Rename returns_digest to returns_weekly", '"name": "returns_weekly"'),
        ):
            turn = await chat(http, message)
            assert turn["values"]["routing"]["target"]["kind"] == "builder", message
            asked = _question(turn)
            assert asked["step"] == "preview" and shown in asked["diff"], (message, asked)
            assert "returns_digest" in asked["question"]
            turn = await chat(http, "no", turn["thread_id"])
            assert turn["values"]["reply"]["status"] == "cancelled"
    assert (await client.assistants.get(made["assistant_id"]))["version"] == 1  # nothing without a yes
