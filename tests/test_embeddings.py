"""Retrieval quality: paraphrased goals find the pattern they mean (precision@1), local MiniLM on real
pgvector. The local embedder is installed by ``make install`` (CI too), so it is required here."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid

import httpx2
import numpy as np
import pytest

from master_agent.capabilities import install_tenant
from master_agent.errors import ConfigError
from master_agent.evolution import KnowledgeStore, PatternCreate
from master_agent.models import LocalMiniLMEmbedder, make_embedder
from master_agent.models.embeddings import HashingEmbedder
from master_agent.runtime import RuntimeResources
from master_agent.settings import Settings

PATTERNS = {
    "attach_rate": "Low accessory attach rate in electronics retail fixed by peer coaching of veteran staff "
    "and point-of-sale upsell prompts",
    "churn": "Subscriber churn in the first 90 days reduced by onboarding calls and in-app usage nudges",
    "stockouts": "Weekend stockouts of fast-moving products fixed by raising safety stock before Fridays",
    "late_deliveries": "Late last-mile deliveries cut by re-planning courier routes and earlier dispatch cut-offs",
    "support_backlog": "Customer support ticket backlog reduced with triage rules and self-service answers",
    "loan_defaults": "Loan default rate lowered by earlier payment reminders and restructuring offers",
}
PARAPHRASES = {
    "attach_rate": [
        "Help me increase accessory attach rate at my electronics store",
        "Our phone shop sells too few cases and chargers with each device",
        "Staff rarely add accessories to a sale; how do we raise that?",
        "Boost add-on sales of headphones and screen protectors in store 3",
        "Increase the share of transactions that include an accessory by 15%",
    ],
    "churn": [
        "Too many new customers cancel their subscription in the first months",
        "Reduce early cancellations of our SaaS plan",
        "How can we keep new subscribers from leaving after signup?",
        "Retention of new accounts is poor; cut churn by a third",
        "Users drop off and unsubscribe soon after onboarding",
    ],
    "stockouts": [
        "We keep running out of best-selling items on Saturdays",
        "Shelves are empty for popular products every weekend",
        "Avoid inventory shortages of fast movers at the end of the week",
        "Customers complain that top sellers are out of stock on Sundays",
        "Improve product availability during weekend peaks",
    ],
    "late_deliveries": [
        "Our parcels arrive late too often",
        "Reduce the number of delayed home deliveries",
        "Drivers miss promised delivery windows; fix on-time delivery",
        "Improve on-time rate of courier shipments to customers",
        "Packages reach customers a day later than promised",
    ],
    "support_backlog": [
        "The help desk has thousands of unanswered tickets",
        "Customer service queue keeps growing; shorten response times",
        "Reduce the pile of open support requests",
        "Agents cannot keep up with incoming customer emails",
        "Clear the backlog of complaints waiting for a reply",
    ],
    "loan_defaults": [
        "Too many borrowers stop repaying their loans",
        "Lower the share of credit customers who miss payments",
        "Reduce delinquency on our personal loan book",
        "How do we cut non-performing loans by 20%?",
        "Fewer customers should default on instalments",
    ],
}


async def _precision_at_1(resources: RuntimeResources, store: KnowledgeStore, tenant: str) -> float:
    ids = {}
    for key, description in PATTERNS.items():
        pattern_id = await store.add(
            tenant,
            PatternCreate(pattern_name=key, domain="eval", description=description, problem_type=key),
        )
        ids[pattern_id] = key
    hits = total = 0
    for key, goals in PARAPHRASES.items():
        for goal in goals:
            best = (await store.search(tenant, goal, limit=1))[0]
            hits += best.pattern_name == key
            total += 1
    return hits / total


async def test_local_embedder_finds_the_pattern_paraphrases_mean(resources: RuntimeResources) -> None:
    assert LocalMiniLMEmbedder.available(), "the local embedder is missing: run 'make install'"
    assert sum(len(goals) for goals in PARAPHRASES.values()) >= 30 and len(PATTERNS) >= 6
    tenant = f"emb-{uuid.uuid4().hex[:6]}"
    await install_tenant(resources.database.pool, resources.settings, "retail", tenant)
    local = await _precision_at_1(
        resources, KnowledgeStore(resources.database.pool, LocalMiniLMEmbedder()), tenant
    )
    hashing = await _precision_at_1(
        resources, KnowledgeStore(resources.database.pool, HashingEmbedder()), tenant
    )
    print(
        f"precision@1 over {sum(map(len, PARAPHRASES.values()))} paraphrases: local {local:.2f}, hashing {hashing:.2f}"
    )
    assert local >= 0.85
    assert local > hashing  # the fallback only matches shared words


def test_auto_picks_the_best_installed_embedder() -> None:
    assert isinstance(make_embedder("auto"), LocalMiniLMEmbedder)
    assert isinstance(make_embedder("hashing"), HashingEmbedder)


class EmbeddingsEndpoint:
    """The OpenAI embeddings endpoint at the network edge: answers each request the way the API does
    (float32 vectors, base64-encoded when asked), one deterministic vector per input text."""

    def __init__(self) -> None:
        self.requests: list[dict[str, object]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append({"url": str(request.url), **body})
        data = []
        for index, text in enumerate(body["input"]):
            seed = int.from_bytes(hashlib.sha256(str(text).encode()).digest()[:4], "little")
            vector = np.random.default_rng(seed).normal(size=body.get("dimensions", 1536)).astype("<f4")
            vector /= np.linalg.norm(vector)
            encoded = (
                base64.b64encode(vector.tobytes()).decode()
                if body.get("encoding_format") == "base64"
                else vector.tolist()
            )
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        usage = {"prompt_tokens": 8, "total_tokens": 8}
        return httpx2.Response(
            200, json={"object": "list", "data": data, "model": body["model"], "usage": usage}
        )


async def test_openai_embeddings_through_the_real_client() -> None:
    endpoint = EmbeddingsEndpoint()
    settings = Settings(openai_api_key="sk-test", openai_base_url="http://llm.test/v1")
    embedder = make_embedder(
        "openai:text-embedding-3-small",
        settings,
        http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(endpoint)),
    )
    assert (embedder.model_name, embedder.dim) == ("openai:text-embedding-3-small@384", 384)
    first, second, again = await embedder.embed(["attach rate", "staff tenure", "attach rate"])
    assert len(first) == 384 and first == again and first != second
    assert abs(sum(v * v for v in first) - 1.0) < 1e-4
    [request] = endpoint.requests
    assert request["url"] == "http://llm.test/v1/embeddings"
    assert request["model"] == "text-embedding-3-small" and request["dimensions"] == 384


def test_openai_embeddings_need_a_known_model_and_an_endpoint() -> None:
    with pytest.raises(ConfigError, match="unknown OpenAI embedding model"):
        make_embedder("openai:word2vec", Settings(openai_api_key="sk-test"))
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_embedder("openai:text-embedding-3-small", Settings())
    with pytest.raises(ConfigError, match="MASTER_AGENT_EMBEDDINGS"):
        Settings.from_env({"MASTER_AGENT_EMBEDDINGS": "bert"})
