"""The state broker (seed 004 section 11): artifacts of one meta request stored by type and version in
Postgres, read whole, as a summary or by section, and written only by their owning role.

The graph state carries ``ArtifactRef`` values (type, version, summary hash), never payloads. Every
access is scoped to the tenant and the request; writing checks ownership (``artifacts.OWNERS``) and
reading whole checks the role's reads (``artifacts.FULL_READS``), in code, whatever a prompt says.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from master_agent.errors import ArtifactAccessError, InputError, NotFoundError
from master_agent.meta.artifacts import (
    ARTIFACT_MODELS,
    FULL_READS,
    OWNERS,
    Artifact,
    ArtifactType,
    PromotionDecision,
    Role,
    artifact_type_of,
    read_section,
)

#: Who may touch the broker: the role leads, and the orchestrator (summaries only).
Reader = Role | Literal["orchestrator"]
#: Entries of the in-state history before the oldest are summarised (section 2.2).
HISTORY_CAP = 50
HISTORY_FOLD = 25

INSERT_REQUEST = """
INSERT INTO meta_requests (request_id, tenant_id, thread_id, request, status, created_at, updated_at)
VALUES (%s, %s, %s, %s, 'running', %s, %s)
"""
LOCK_REQUEST = "SELECT 1 FROM meta_requests WHERE request_id = %s AND tenant_id = %s FOR UPDATE"
NEXT_VERSION = """
SELECT COALESCE(max(version), 0) + 1 AS version FROM meta_artifacts
WHERE request_id = %s AND artifact_type = %s
"""
INSERT_ARTIFACT = """
INSERT INTO meta_artifacts
    (request_id, tenant_id, artifact_type, version, written_by, payload, summary, summary_hash, created_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
"""
SELECT_ARTIFACT = """
SELECT version, payload, summary, summary_hash, written_by FROM meta_artifacts
WHERE request_id = %(request)s AND tenant_id = %(tenant)s AND artifact_type = %(type)s
  AND (%(version)s::int IS NULL OR version = %(version)s)
ORDER BY version DESC LIMIT 1
"""
SELECT_SUMMARIES = """
SELECT DISTINCT ON (artifact_type) artifact_type, summary FROM meta_artifacts
WHERE request_id = %s AND tenant_id = %s AND artifact_type = ANY(%s)
ORDER BY artifact_type, version DESC
"""
SELECT_VERSIONS = """
SELECT version FROM meta_artifacts
WHERE request_id = %s AND tenant_id = %s AND artifact_type = %s ORDER BY version
"""
INSERT_HISTORY = """
INSERT INTO meta_history (request_id, tenant_id, phase, decision, outcome, detail, at)
VALUES (%s, %s, %s, %s, %s, %s, %s)
"""
INSERT_PROMOTION = """
INSERT INTO meta_promotions (decision_id, request_id, tenant_id, proposer, target_artifact, base_version,
                             decision_version, status, created_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, 'pending', %s)
RETURNING *
"""
SELECT_PROMOTION = """
SELECT * FROM meta_promotions WHERE decision_id = %s AND request_id = %s AND tenant_id = %s
"""
DECIDE_PROMOTION = """
UPDATE meta_promotions SET status = %s, decided_by = %s, reason = %s, applied_version = %s, decided_at = %s
WHERE decision_id = %s
RETURNING *
"""
SELECT_PROMOTIONS = """
SELECT * FROM meta_promotions WHERE request_id = %s AND tenant_id = %s ORDER BY created_at, decision_id
"""
SELECT_HISTORY = """
SELECT phase, decision, outcome, detail, at FROM meta_history
WHERE request_id = %s AND tenant_id = %s ORDER BY entry_id
"""


class ArtifactRef(BaseModel):
    """What graph state holds of an artifact."""

    type: ArtifactType
    version: int
    summary_hash: str


PromotionStatus = Literal["pending", "accepted", "modified", "rejected"]


class Promotion(BaseModel):
    """A PromotionDecision's life (section 9): proposed, then accepted, modified or rejected by the
    owner of its target; every one is kept."""

    decision_id: uuid.UUID
    proposer: Role
    target_artifact: ArtifactType
    base_version: int
    decision_version: int
    """The PromotionDecision artifact's version holding the proposed changes."""
    status: PromotionStatus
    decided_by: Role | None = None
    reason: str | None = None
    applied_version: int | None = None
    """The target's version the owner wrote (accepted or modified)."""


class HistoryEntry(BaseModel):
    phase: str
    decision: str
    outcome: str
    timestamp: str
    folded: int = 0
    """How many older entries this one summarises (0: a plain entry)."""


def fold_history(history: list[HistoryEntry]) -> list[HistoryEntry]:
    """The in-state history kept to ``HISTORY_CAP`` entries: past it, the oldest ``HISTORY_FOLD`` become
    one summary entry (the broker keeps the full history)."""
    if len(history) <= HISTORY_CAP:
        return history
    old, recent = history[:HISTORY_FOLD], history[HISTORY_FOLD:]
    folded = sum(entry.folded or 1 for entry in old)
    phases: dict[str, int] = {}
    for entry in old:
        phases[entry.phase] = phases.get(entry.phase, 0) + (entry.folded or 1)
    outcome = ", ".join(f"{phase} x{count}" for phase, count in phases.items())
    summary = HistoryEntry(
        phase="summary",
        decision=f"{folded} earlier decisions",
        outcome=outcome,
        timestamp=old[-1].timestamp,
        folded=folded,
    )
    return [summary, *recent]


class StateBroker:
    """The artifacts of one meta request of one tenant."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        tenant_id: str,
        request_id: uuid.UUID,
        now: Callable[[], datetime],
    ) -> None:
        self.pool = pool
        self.tenant_id = tenant_id
        self.request_id = request_id
        self.now = now

    @classmethod
    async def open_request(
        cls,
        pool: AsyncConnectionPool[Any],
        tenant_id: str,
        request: str,
        now: Callable[[], datetime],
        *,
        thread_id: str | None = None,
        request_id: uuid.UUID | None = None,
    ) -> StateBroker:
        """A new request's broker (its row stored)."""
        request_id = request_id or uuid.uuid4()
        at = now()
        async with pool.connection() as conn:
            await conn.execute(INSERT_REQUEST, (request_id, tenant_id, thread_id, request, at, at))
        return cls(pool, tenant_id, request_id, now)

    async def write(self, role: Role, artifact: Artifact) -> ArtifactRef:
        """Store ``artifact`` as the next version of its type, if ``role`` owns that type."""
        artifact_type = artifact_type_of(artifact)
        owner = OWNERS[artifact_type]
        if role != owner:
            raise ArtifactAccessError(role, artifact_type, "write", owner)
        async with self.pool.connection() as conn, conn.transaction():
            locked = await (await conn.execute(LOCK_REQUEST, (self.request_id, self.tenant_id))).fetchone()
            if locked is None:
                raise NotFoundError("request", str(self.request_id))
            row = await (await conn.execute(NEXT_VERSION, (self.request_id, artifact_type))).fetchone()
            assert row is not None
            version = int(row["version"])
            stored = artifact.model_copy(update={"version": version})
            payload = stored.model_dump(mode="json")
            summary = stored.summary()
            digest = hashlib.sha256(summary.encode()).hexdigest()[:16]
            await conn.execute(
                INSERT_ARTIFACT,
                (
                    self.request_id,
                    self.tenant_id,
                    artifact_type,
                    version,
                    role,
                    Jsonb(payload),
                    summary,
                    digest,
                    self.now(),
                ),
            )
        return ArtifactRef(type=artifact_type, version=version, summary_hash=digest)

    async def propose(self, role: Role, decision: PromotionDecision) -> tuple[ArtifactRef, Promotion]:
        """Store a PromotionDecision (only its owner, the Optimizer, may) as a pending request to the
        owner of its target."""
        ref = await self.write(role, decision)
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    INSERT_PROMOTION,
                    (
                        uuid.uuid4(),
                        self.request_id,
                        self.tenant_id,
                        role,
                        decision.target_artifact,
                        decision.base_version,
                        ref.version,
                        self.now(),
                    ),
                )
            ).fetchone()
        return ref, Promotion.model_validate(row)

    async def decide(
        self,
        role: Role,
        decision_id: uuid.UUID,
        status: Literal["accepted", "modified", "rejected"],
        reason: str,
        applied_version: int | None = None,
    ) -> Promotion:
        """Record the owner's answer to a pending promotion; nobody but the target's owner may answer."""
        async with self.pool.connection() as conn, conn.transaction():
            row = await (
                await conn.execute(
                    SELECT_PROMOTION + " FOR UPDATE", (decision_id, self.request_id, self.tenant_id)
                )
            ).fetchone()
            if row is None:
                raise NotFoundError("promotion", str(decision_id))
            owner = OWNERS[row["target_artifact"]]
            if role != owner:
                raise ArtifactAccessError(role, row["target_artifact"], "decide a promotion of", owner)
            if row["status"] != "pending":
                raise InputError("decision_id", f"promotion {decision_id} is already {row['status']}")
            row = await (
                await conn.execute(
                    DECIDE_PROMOTION, (status, role, reason, applied_version, self.now(), decision_id)
                )
            ).fetchone()
        return Promotion.model_validate(row)

    async def promotion(self, decision_id: uuid.UUID) -> Promotion:
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(SELECT_PROMOTION, (decision_id, self.request_id, self.tenant_id))
            ).fetchone()
        if row is None:
            raise NotFoundError("promotion", str(decision_id))
        return Promotion.model_validate(row)

    async def promotions(self) -> list[Promotion]:
        """Every promotion of the request, oldest first, whatever became of it."""
        async with self.pool.connection() as conn:
            rows = await (await conn.execute(SELECT_PROMOTIONS, (self.request_id, self.tenant_id))).fetchall()
        return [Promotion.model_validate(row) for row in rows]

    async def _row(self, artifact_type: ArtifactType, version: int | None) -> dict[str, Any]:
        async with self.pool.connection() as conn:
            row = await (
                await conn.execute(
                    SELECT_ARTIFACT,
                    {
                        "request": self.request_id,
                        "tenant": self.tenant_id,
                        "type": artifact_type,
                        "version": version,
                    },
                )
            ).fetchone()
        if row is None:
            label = artifact_type if version is None else f"{artifact_type} v{version}"
            raise NotFoundError("artifact", label)
        return dict(row)

    def _check_full_read(self, reader: Reader, artifact_type: ArtifactType) -> None:
        owner = OWNERS[artifact_type]
        if reader == owner or (reader != "orchestrator" and artifact_type in FULL_READS[reader]):
            return
        raise ArtifactAccessError(reader, artifact_type, "read whole", owner)

    async def read_full(
        self, reader: Reader, artifact_type: ArtifactType, version: int | None = None
    ) -> Artifact:
        """The whole artifact (newest version unless given), for its owner and the roles reading it."""
        self._check_full_read(reader, artifact_type)
        row = await self._row(artifact_type, version)
        return ARTIFACT_MODELS[artifact_type].model_validate(row["payload"])

    async def read_summary(self, artifact_type: ArtifactType, version: int | None = None) -> str:
        """The bounded summary any role (and the orchestrator) may read."""
        return str((await self._row(artifact_type, version))["summary"])

    async def summaries(self, artifact_types: list[ArtifactType]) -> dict[str, str]:
        """The newest summary of each of ``artifact_types`` that exists, in one query."""
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(SELECT_SUMMARIES, (self.request_id, self.tenant_id, artifact_types))
            ).fetchall()
        found = {row["artifact_type"]: str(row["summary"]) for row in rows}
        return {name: found[name] for name in artifact_types if name in found}

    async def read_section(
        self, reader: Reader, artifact_type: ArtifactType, path: str, version: int | None = None
    ) -> Any:
        """One section of the artifact by dotted path (same access as reading it whole)."""
        self._check_full_read(reader, artifact_type)
        return read_section((await self._row(artifact_type, version))["payload"], path)

    async def exists(self, artifact_type: ArtifactType) -> bool:
        return bool(await self.versions(artifact_type))

    async def versions(self, artifact_type: ArtifactType) -> list[int]:
        async with self.pool.connection() as conn:
            rows = await (
                await conn.execute(SELECT_VERSIONS, (self.request_id, self.tenant_id, artifact_type))
            ).fetchall()
        return [int(row["version"]) for row in rows]

    async def record(self, phase: str, decision: str, outcome: str, **detail: Any) -> HistoryEntry:
        """Append one decision to the full history; the entry for the in-state history."""
        at = self.now()
        async with self.pool.connection() as conn:
            await conn.execute(
                INSERT_HISTORY,
                (self.request_id, self.tenant_id, phase, decision, outcome, Jsonb(detail), at),
            )
        return HistoryEntry(phase=phase, decision=decision, outcome=outcome, timestamp=at.isoformat())

    async def history(self) -> list[dict[str, Any]]:
        """The full history, oldest first."""
        async with self.pool.connection() as conn:
            rows = await (await conn.execute(SELECT_HISTORY, (self.request_id, self.tenant_id))).fetchall()
        return [dict(row) for row in rows]
