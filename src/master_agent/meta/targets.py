"""The system a debug, optimize, evaluate, harden or incident request works on: named by the request
(``name``, or its words in the text) among the systems the tenant built, and its artifacts read back
from the request that built it. Such a request never falls back to a build: with no system it is an
error saying so, with several candidates a question naming them.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from psycopg_pool import AsyncConnectionPool

from master_agent.meta.artifacts import ArtifactType

#: The artifacts a system is worked on from (what its owners adopt).
SYSTEM_ARTIFACTS: tuple[ArtifactType, ...] = ("SystemSpec", "PromptPack", "ToolContract", "EvalSpec")

BUILT_SYSTEMS = """
SELECT DISTINCT ON (system_name) system_name, request_id, request FROM meta_requests
WHERE tenant_id = %s AND system_name IS NOT NULL AND status IN ('done', 'partial')
ORDER BY system_name, updated_at DESC
"""
LATEST_ARTIFACTS = """
SELECT DISTINCT ON (artifact_type) artifact_type, payload FROM meta_artifacts
WHERE request_id = %s AND tenant_id = %s AND artifact_type = ANY(%s)
ORDER BY artifact_type, version DESC
"""
_WORD = re.compile(r"[a-z0-9]+")
#: Words that say what to do or that every request has, never which system.
_GENERIC = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "it",
        "its",
        "our",
        "my",
        "your",
        "we",
        "i",
        "is",
        "are",
        "be",
        "to",
        "of",
        "for",
        "and",
        "or",
        "in",
        "on",
        "by",
        "with",
        "from",
        "as",
        "at",
        "system",
        "systems",
        "agent",
        "agents",
        "multi",
        "build",
        "builds",
        "create",
        "design",
        "make",
        "set",
        "up",
        "please",
        "can",
        "you",
        "debug",
        "fix",
        "broken",
        "bug",
        "failing",
        "fails",
        "crash",
        "wrong",
        "optimize",
        "optimise",
        "faster",
        "cheaper",
        "reduce",
        "improve",
        "latency",
        "cost",
        "harden",
        "secure",
        "reliable",
        "robust",
        "guardrail",
        "evaluate",
        "assess",
        "benchmark",
        "score",
        "test",
        "incident",
        "outage",
        "paged",
        "on",
        "call",
        "again",
        "now",
    ]
)


@dataclass(frozen=True)
class Target:
    """Which system a request works on, or why none was picked."""

    system: str | None = None
    request_id: uuid.UUID | None = None
    candidates: tuple[str, ...] = ()
    """The systems it could be, when it is ambiguous."""
    problem: str | None = None


def _words(text: str) -> set[str]:
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in _WORD.findall(text.lower())}


def _named(system: str, text: str, words: set[str]) -> bool:
    """The text names the system: its name as written, or every word of it (a numeric suffix aside)."""
    if re.search(rf"\b{re.escape(system)}\b", text.lower()):
        return True
    parts = [p for p in system.split("_") if p and not p.isdigit()]
    return bool(parts) and all((p[:-1] if p.endswith("s") and len(p) > 3 else p) in words for p in parts)


async def built_systems(pool: AsyncConnectionPool[Any], tenant_id: str) -> dict[str, tuple[uuid.UUID, str]]:
    """The systems the tenant built (name -> the latest request that finished it, and its text)."""
    async with pool.connection() as conn:
        rows = await (await conn.execute(BUILT_SYSTEMS, (tenant_id,))).fetchall()
    return {row["system_name"]: (row["request_id"], row["request"]) for row in rows}


async def find_target(
    pool: AsyncConnectionPool[Any], tenant_id: str, intent: str, text: str, name: str | None
) -> Target:
    systems = await built_systems(pool, tenant_id)
    if name is not None:
        if name in systems:
            return Target(name, systems[name][0])
        known = f"; its systems: {', '.join(sorted(systems))}" if systems else ""
        return Target(problem=f"no system {name!r} was built in this tenant to {intent}{known}")
    if not systems:
        return Target(
            problem=f"nothing to {intent}: this tenant has no system built by the meta-orchestrator "
            "(build one first, or send its SystemSpec)"
        )
    words = _words(text)
    named = sorted(s for s in systems if _named(s, text, words))
    if len(named) > 1:
        # A name written out wins over names whose words merely appear ("desk" and "desk_2").
        named = [s for s in named if re.search(rf"\b{re.escape(s)}\b", text.lower())] or named
    if len(named) == 1:
        return Target(named[0], systems[named[0]][0])
    if not named:
        # Otherwise the systems whose name or request share a word with this request's own words.
        own = words - _GENERIC
        named = sorted(
            s
            for s, (_, built) in systems.items()
            if own & (_words(s.replace("_", " ") + " " + built) - _GENERIC)
        )
        if len(named) == 1:
            return Target(named[0], systems[named[0]][0])
    if not named:
        return Target(
            candidates=tuple(sorted(systems)),
            problem=f"no system this tenant built matches the {intent} request; "
            f"name one of: {', '.join(sorted(systems))}",
        )
    return Target(
        candidates=tuple(named),
        problem=f"which system is the {intent} request about? name one of: {', '.join(named)}",
    )


async def system_artifacts(
    pool: AsyncConnectionPool[Any], tenant_id: str, request_id: uuid.UUID
) -> dict[str, dict[str, Any]]:
    """The latest artifacts a system was built with (type -> payload)."""
    async with pool.connection() as conn:
        rows = await (
            await conn.execute(LATEST_ARTIFACTS, (request_id, tenant_id, list(SYSTEM_ARTIFACTS)))
        ).fetchall()
    return {row["artifact_type"]: row["payload"] for row in rows}
