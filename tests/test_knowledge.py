"""Village knowledge on real pgvector with row-level security enforced by Postgres."""

from __future__ import annotations

import psycopg
import pytest

from master_agent.capabilities import install_tenant
from master_agent.evolution import KnowledgeStore, PatternCreate, tenant_session
from master_agent.models import HashingEmbedder
from master_agent.runtime import RuntimeResources

PATTERNS = {
    "coaching": PatternCreate(
        pattern_name="Veteran staff coaching for accessory attach rate",
        domain="retail",
        description="Low accessory attach rate in an electronics store explained by long-tenured staff; "
        "peer coaching plus POS upsell prompts raised attach rate",
        problem_type="low_attach_rate",
        root_cause="staff tenure",
    ),
    "churn": PatternCreate(
        pattern_name="Onboarding calls against subscriber churn",
        domain="saas",
        description="Customer churn in the first 90 days reduced by onboarding calls and usage nudges",
        problem_type="high_churn",
    ),
    "stockouts": PatternCreate(
        pattern_name="Safety stock for weekend stockouts",
        domain="retail",
        description="Weekend stockouts of fast-moving items fixed by raising safety stock before Fridays",
        problem_type="stockouts",
    ),
}


async def _tenants(resources: RuntimeResources) -> KnowledgeStore:
    for tenant in ("kn-alpha", "kn-beta"):
        await install_tenant(resources.database.pool, resources.settings, "retail", tenant)
    return KnowledgeStore(resources.database.pool, HashingEmbedder())


async def test_search_finds_the_pattern_a_paraphrased_goal_means(resources: RuntimeResources) -> None:
    store = await _tenants(resources)
    for pattern in PATTERNS.values():
        await store.add("kn-alpha", pattern)
    goals = {
        "coaching": "Help me increase accessory attach rate at my electronics store",
        "churn": "Our subscribers churn in their first months, reduce churn",
        "stockouts": "We keep running out of fast-moving items on weekends",
    }
    for expected, goal in goals.items():
        best = (await store.search("kn-alpha", goal, limit=3))[0]
        assert best.pattern_name == PATTERNS[expected].pattern_name, goal


async def test_row_level_security_hides_other_tenants_private_patterns(resources: RuntimeResources) -> None:
    store = await _tenants(resources)
    secret = PATTERNS["coaching"].model_copy(update={"pattern_name": "alpha-only secret"})
    shared = PATTERNS["churn"].model_copy(
        update={"pattern_name": "shared churn playbook", "visibility": "shared"}
    )
    await store.add("kn-alpha", secret)
    await store.add("kn-alpha", shared)
    seen_by_beta = {m.pattern_name for m in await store.search("kn-beta", "attach rate churn", limit=50)}
    assert "shared churn playbook" in seen_by_beta
    assert "alpha-only secret" not in seen_by_beta
    # A raw query as the tenant role, no WHERE clause at all: Postgres still filters.
    async with tenant_session(resources.database.pool, "kn-beta") as conn:
        query = "SELECT pattern_name, tenant_id, visibility FROM village_knowledge"
        rows = await (await conn.execute(query)).fetchall()
    assert "alpha-only secret" not in {r["pattern_name"] for r in rows}
    assert "shared churn playbook" in {r["pattern_name"] for r in rows}
    assert all(r["tenant_id"] == "kn-beta" or r["visibility"] == "shared" for r in rows)
    # A shared pattern does not say whose it was.
    [match] = [
        m
        for m in await store.search("kn-beta", "churn", limit=50)
        if m.pattern_name == "shared churn playbook"
    ]
    assert match.tenant_id is None
    assert (await store.get("kn-alpha", match.pattern_id)).tenant_id == "kn-alpha"  # type: ignore[union-attr]
    # and it cannot write a pattern in another tenant's name
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        async with tenant_session(resources.database.pool, "kn-beta") as conn:
            await conn.execute(
                "INSERT INTO village_knowledge (pattern_id, tenant_id, pattern_name, domain, description, problem_type)"
                " VALUES (gen_random_uuid(), 'kn-alpha', 'forged', 'retail', 'x', 'y')"
            )
