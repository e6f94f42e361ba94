"""Reuse: the master agent's first step looks for a proven pattern before researching anything.

A pattern qualifies when it is near the goal in meaning (cosine similarity at least
``MASTER_AGENT_REUSE_MIN_SIMILARITY``, by default the embedder's own threshold), confident enough (``MASTER_AGENT_REUSE_MIN_CONFIDENCE``, its
outcome-updated confidence), and applicable: the same domain, with every entity it needs known (from
the goal, the request, or the tenant's defaults). Its ``reuse`` values (for example the root cause
and the intervention that worked) are then taken as known, and the loop skips research.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from master_agent.evolution.knowledge import KnowledgeStore, PatternMatch
from master_agent.settings import Settings

MARK_REUSED = """
UPDATE village_knowledge SET reuse_count = reuse_count + 1, last_used_at = now() WHERE pattern_id = %s
"""
ANY_VISIBLE = """
SELECT EXISTS (SELECT 1 FROM village_knowledge WHERE embedding_model = %s AND confidence >= %s
               AND (visibility = 'shared' OR tenant_id = %s)) AS found
"""


class ReusedPattern(BaseModel):
    """What the solution reports about the pattern it reused."""

    pattern_id: str
    pattern_name: str
    similarity: float
    confidence: float
    success_rate: float | None
    reuse_count: int
    """Uses before this one."""
    visibility: str
    values: dict[str, Any]
    """What was taken as known from the pattern."""


def applicable(pattern: PatternMatch, domain: str | None, known: dict[str, Any]) -> bool:
    applicability = pattern.applicability
    if applicability.get("domain") not in (None, domain):
        return False
    return all(key in known for key in applicability.get("requires") or [])


async def find_reusable(
    knowledge: KnowledgeStore,
    settings: Settings,
    tenant_id: str,
    domain: str | None,
    goal: str,
    known: dict[str, Any],
) -> ReusedPattern | None:
    """The best qualifying pattern for ``goal`` (its use counted), or None."""
    async with knowledge.pool.connection() as conn:
        row = await (
            await conn.execute(
                ANY_VISIBLE, (knowledge.embedder.model_name, settings.reuse_min_confidence, tenant_id)
            )
        ).fetchone()
    if not row or not row["found"]:
        return None  # nothing to reuse: no need to embed the goal at all
    threshold = settings.reuse_min_similarity
    if threshold is None:
        threshold = knowledge.embedder.reuse_min_similarity
    for pattern in await knowledge.search(tenant_id, goal, limit=5):
        if pattern.similarity < threshold:
            break
        if pattern.confidence < settings.reuse_min_confidence or not applicable(pattern, domain, known):
            continue
        values = dict((pattern.intervention or {}).get("reuse") or {})
        if not values:
            continue
        async with knowledge.pool.connection() as conn:
            await conn.execute(MARK_REUSED, (pattern.pattern_id,))
        return ReusedPattern(
            pattern_id=str(pattern.pattern_id),
            pattern_name=pattern.pattern_name,
            similarity=round(pattern.similarity, 4),
            confidence=pattern.confidence,
            success_rate=pattern.success_rate,
            reuse_count=pattern.reuse_count,
            visibility=pattern.visibility,
            values=values,
        )
    return None
