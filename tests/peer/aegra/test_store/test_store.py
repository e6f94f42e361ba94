import pytest
from httpx import AsyncClient
from langgraph_sdk.errors import PermissionDeniedError

from tests.peer.aegra._server import settings
from tests.peer.aegra._utils import elog, get_e2e_client


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_store_endpoints_via_sdk():
    client = get_e2e_client()

    # Use a user-private namespace implicitly; server will scope to ["users", <identity>]
    # Insert item
    ns = ["notes"]
    key = "e2e-item-1"
    value = {"title": "Hello", "tags": ["e2e", "store"], "score": 42}

    await client.store.put_item(ns, key=key, value=value)
    elog("store.put_item", {"namespace": ns, "key": key, "value": value})

    # Get item (SDK sends dotted namespace on GET)
    got = await client.store.get_item(ns, key=key)
    elog("store.get_item", got)
    assert got["key"] == key
    assert got["value"] == value
    assert got.get("namespace") in (ns, ["users"]) or isinstance(got.get("namespace"), list)

    # Search by namespace prefix
    search = await client.store.search_items(["notes"], limit=10)
    elog("store.search_items", search)
    assert isinstance(search, dict)
    assert "items" in search
    assert any(item.get("key") == key for item in search["items"])

    # Delete item (SDK sends JSON body)
    await client.store.delete_item(ns, key=key)
    elog("store.delete_item", {"namespace": ns, "key": key})

    # Ensure deleted
    with pytest.raises(Exception):  # noqa: B017 - SDK doesn't expose specific exception type
        await client.store.get_item(ns, key=key)


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_store_search_accepts_sdk_page_size_500() -> None:
    """LangGraph SDK clients page store search with limit=500; must not 422."""
    client = get_e2e_client()
    ns = ["notes"]
    key = "e2e-limit-500"
    await client.store.put_item(ns, key=key, value={"title": "limit-500"})
    try:
        search = await client.store.search_items(["notes"], limit=500)
        elog("store.search_items limit=500", search)
        assert isinstance(search, dict)
        assert "items" in search
        assert any(item.get("key") == key for item in search["items"])
    finally:
        await client.store.delete_item(ns, key=key)


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_store_search_returns_422_when_limit_exceeds_cap() -> None:
    """limit above MAX_SEARCH_LIMIT is rejected before the store query."""
    async with AsyncClient(base_url=settings.app.SERVER_URL, headers=settings.app.HEADERS, timeout=30.0) as http_client:
        resp = await http_client.post(
            "/store/items/search",
            json={"namespace_prefix": ["notes"], "limit": settings.app.MAX_SEARCH_LIMIT + 1},
        )
    assert resp.status_code == 422, resp.text
    assert "limit" in resp.text


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_org_prefix_without_org_membership_is_forbidden():
    """The anonymous user has no org_id, so the "orgs" prefix is rejected with 403.

    Relies on aegra.json configuring store.scopes {"orgs": ["org_id"]}. The org-scoped
    happy path needs auth that sets org_id; it lives in the auth-enabled suite
    (manual_auth_tests/test_store_org_isolation_e2e.py).
    """
    client = get_e2e_client()

    with pytest.raises(PermissionDeniedError) as exc_info:
        await client.store.put_item(["orgs", "shared-prompts"], key="greeting", value={"text": "hi"})
    elog("store.put_item orgs prefix rejected", str(exc_info.value))
    # Names the attribute the scope needs, so the message stays actionable.
    assert "org_id" in str(exc_info.value)


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_store_rejects_non_dict_values():
    """Test that store API rejects non-dictionary values"""
    client = get_e2e_client()

    ns = ["test"]
    key = "invalid-value"

    # Test array value (should be rejected)
    with pytest.raises(Exception) as exc_info:  # noqa: B017
        await client.store.put_item(ns, key=f"{key}-array", value=[1, 2, 3])
    error_msg = str(exc_info.value).lower()
    assert "dictionary" in error_msg or "object" in error_msg or "422" in str(exc_info.value)

    # Test scalar values (should be rejected)
    for scalar_value in [42, "string", True, None]:
        with pytest.raises(Exception) as exc_info:  # noqa: B017
            await client.store.put_item(ns, key=f"{key}-{type(scalar_value).__name__}", value=scalar_value)
        error_msg = str(exc_info.value).lower()
        assert "dictionary" in error_msg or "object" in error_msg or "422" in str(exc_info.value)
