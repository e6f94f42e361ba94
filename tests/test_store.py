"""Long-term memory through the official langgraph-sdk against the real service: the ``/store`` API on
LangGraph's Postgres store, tenant-scoped, and the same store inside graphs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

from master_agent.runtime import RuntimeResources
from tests.live_server import LiveServer, live_server_fixture, sdk, two_tenant_keys
from tests.memory_graph import NAMESPACE

live = live_server_fixture("store", graphs=("memory=tests.memory_graph:make_graph",))
keys = two_tenant_keys


async def test_put_get_search_list_and_delete_items(live: LiveServer, keys: dict[str, str]) -> None:
    store = sdk(live, keys["demo-retail"]).store
    await store.put_item(["prefs", "alice"], "food", {"text": "Alice loves spicy ramen", "kind": "food"})
    await store.put_item(
        ["prefs", "alice"], "sport", {"text": "Alice plays tennis on Sundays", "kind": "sport"}
    )
    await store.put_item(["prefs", "bob"], "food", {"text": "Bob is vegetarian", "kind": "food"})
    await store.put_item(["docs"], "unindexed", {"text": "not searchable by meaning"}, index=False)

    item = await store.get_item(["prefs", "alice"], "food")
    assert item is not None
    assert item["namespace"] == ["prefs", "alice"] and item["key"] == "food"
    assert item["value"] == {"text": "Alice loves spicy ramen", "kind": "food"}
    assert await store.get_item(["prefs", "alice"], "missing") is None

    by_filter = await store.search_items(["prefs"], filter={"kind": "food"})
    assert {(tuple(i["namespace"]), i["key"]) for i in by_filter["items"]} == {
        (("prefs", "alice"), "food"),
        (("prefs", "bob"), "food"),
    }
    by_meaning = await store.search_items(["prefs", "alice"], query="which sport does she play", limit=1)
    assert [i["key"] for i in by_meaning["items"]] == ["sport"]
    assert by_meaning["items"][0]["score"] is not None
    paged = await store.search_items(["prefs"], limit=1, offset=1)
    assert len(paged["items"]) == 1

    everything = await store.list_namespaces()
    assert sorted(map(tuple, everything["namespaces"])) == [("docs",), ("prefs", "alice"), ("prefs", "bob")]
    shallow = await store.list_namespaces(prefix=["prefs"], max_depth=1)
    assert shallow["namespaces"] == [["prefs"]]
    assert (await store.list_namespaces(suffix=["bob"]))["namespaces"] == [["prefs", "bob"]]

    await store.put_item(["prefs", "alice"], "food", {"text": "Alice now prefers sushi", "kind": "food"})
    replaced = await store.get_item(["prefs", "alice"], "food")
    assert replaced is not None and replaced["value"]["text"] == "Alice now prefers sushi"
    await store.delete_item(["prefs", "alice"], "food")
    assert await store.get_item(["prefs", "alice"], "food") is None


async def test_no_tenant_reads_or_changes_another_tenants_items(
    live: LiveServer, keys: dict[str, str]
) -> None:
    mine, theirs = sdk(live, keys["demo-retail"]).store, sdk(live, keys["other-shop"]).store
    await mine.put_item(["secrets"], "plan", {"text": "our price cut for Black Friday"})
    assert await theirs.get_item(["secrets"], "plan") is None
    assert (await theirs.search_items([], query="price cut Black Friday"))["items"] == []
    assert ["secrets"] not in (await theirs.list_namespaces())["namespaces"]
    await theirs.delete_item(["secrets"], "plan")
    await theirs.put_item(["secrets"], "plan", {"text": "theirs"})
    kept = await mine.get_item(["secrets"], "plan")
    assert kept is not None and kept["value"]["text"] == "our price cut for Black Friday"
    # The tenant mark is not a namespace a tenant can name its way into.
    assert (await theirs.list_namespaces(prefix=["tenant:demo-retail"]))["namespaces"] == []


async def test_items_expire_after_their_ttl(live: LiveServer, keys: dict[str, str]) -> None:
    resources: RuntimeResources = live.server.config.app.state.service.resources
    store = sdk(live, keys["demo-retail"]).store
    await store.put_item(["session"], "short", {"text": "gone soon"}, ttl=1)
    await store.put_item(["session"], "long", {"text": "kept"})
    async with resources.database.pool.connection() as conn:
        row = await (
            await conn.execute("SELECT expires_at FROM store WHERE key = 'short' AND prefix LIKE '%%session'")
        ).fetchone()
        assert row is not None and row["expires_at"] is not None
        assert row["expires_at"] - datetime.now(UTC) < timedelta(minutes=1, seconds=5)
        # A minute later, as the sweeper sees it.
        await conn.execute("UPDATE store SET expires_at = now() - interval '1 second' WHERE key = 'short'")
    assert await resources.store.sweep_ttl() >= 1
    assert await store.get_item(["session"], "short") is None
    assert await store.get_item(["session"], "long") is not None


async def test_a_graph_remembers_through_the_tenants_store(live: LiveServer, keys: dict[str, str]) -> None:
    client = sdk(live, keys["demo-retail"])
    for fact in ("The CFO prefers Tuesday meetings", "Store 3 closes at 9pm"):
        output = await client.runs.wait(None, "memory", input={"fact": fact})
        assert isinstance(output, dict) and fact in output["recalled"]
    recalled = (await client.store.search_items(list(NAMESPACE), query="when does the CFO like to meet"))[
        "items"
    ]
    assert recalled[0]["value"]["text"] == "The CFO prefers Tuesday meetings"
    # The graph's writes are the caller's tenant's.
    other = sdk(live, keys["other-shop"])
    assert (await other.store.search_items(list(NAMESPACE)))["items"] == []


async def test_bad_store_input_is_a_4xx_naming_the_field(live: LiveServer, keys: dict[str, str]) -> None:
    headers = {"X-API-Key": keys["demo-retail"]}
    async with httpx.AsyncClient(base_url=live.url, headers=headers, timeout=30) as http:
        dotted = await http.put("/store/items", json={"namespace": ["a.b"], "key": "k", "value": {}})
        assert dotted.status_code == 422 and "namespace" in dotted.text
        nul = await http.put("/store/items", json={"namespace": ["a\u0000"], "key": "k", "value": {}})
        assert nul.status_code == 422 and "namespace" in nul.text
        no_value = await http.put("/store/items", json={"namespace": ["a"], "key": "k", "value": [1]})
        assert no_value.status_code == 422 and "value" in no_value.text
        no_key = await http.get("/store/items", params={"namespace": "a"})
        assert no_key.status_code == 422 and "key" in no_key.text
        bad_limit = await http.post("/store/items/search", json={"namespace_prefix": [], "limit": 0})
        assert bad_limit.status_code == 422 and "limit" in bad_limit.text
        forever = await http.put(
            "/store/items", json={"namespace": ["a"], "key": "k", "value": {}, "ttl": 4.6e307}
        )
        assert forever.status_code == 422 and "ttl" in forever.text
        listed = await http.post("/store/namespaces", json={})
        assert listed.status_code == 200
        assert ["a"] not in listed.json()["namespaces"]  # nothing was stored by the refused calls


async def test_a_filter_with_an_unknown_operator_is_refused_naming_it(
    live: LiveServer, keys: dict[str, str]
) -> None:
    async with httpx.AsyncClient(
        base_url=live.url, headers={"X-API-Key": keys["demo-retail"]}, timeout=30
    ) as http:
        body = {"namespace_prefix": ["prefs"], "filter": {"kind": {"$like": "fo%"}}}
        refused = await http.post("/store/items/search", json=body)
        assert refused.status_code == 422 and "$like" in refused.text and "filter" in refused.text
        body["filter"] = {"kind": {"$ne": "drink"}}
        assert (await http.post("/store/items/search", json=body)).status_code == 200
