"""E2E: oversized client assistant_id is 422, not a Postgres 500."""

import secrets

import pytest
from httpx import AsyncClient

from tests.peer.aegra._server import settings
from tests.peer.aegra._utils import elog


@pytest.mark.e2e
@pytest.mark.asyncio
async def test_create_assistant_rejects_oversized_id_with_422() -> None:
    assistant_id = secrets.token_hex(2500)
    async with AsyncClient(base_url=settings.app.SERVER_URL, headers=settings.app.HEADERS, timeout=30.0) as http_client:
        resp = await http_client.post("/assistants", json={"graph_id": "agent", "assistant_id": assistant_id})
    elog("oversized assistant_id", {"status": resp.status_code, "body": resp.text[:500]})
    assert resp.status_code == 422
    assert "assistant_id" in resp.text
