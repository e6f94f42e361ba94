"""LangGraph's Postgres checkpointer, writing each checkpoint and each task's writes in one statement.

The stock ``AsyncPostgresSaver`` writes a checkpoint as a pipeline of one INSERT per blob plus the
checkpoint, and a task's writes as a pipeline of one INSERT per write, each after a hop to a thread to
serialise. Here both are single statements over arrays (``unnest``), serialised inline: the same rows
in the same tables, read back by the stock code, at a fraction of the client CPU per super-step (the
measured bottleneck with many concurrent runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import CONFIG_KEY_DURABILITY
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from psycopg.types.json import Jsonb

#: Sets the commit mode of the statement's own (implicit) transaction: ``off`` commits without waiting
#: for the WAL flush. Postgres reads the setting when the transaction commits, before it is undone.
COMMIT_MODE = "commit_mode AS (SELECT set_config('synchronous_commit', %(synchronous_commit)s, true))"
#: A checkpoint and the blobs of its changed channels. A data-modifying CTE always runs, so the blobs
#: are written even though the outer INSERT does not read them.
PUT_CHECKPOINT = f"""
WITH {COMMIT_MODE},
blobs AS (
    INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
    SELECT %(thread_id)s, %(checkpoint_ns)s, b.channel, b.version, b.type, b.blob
    FROM unnest(%(channels)s::text[], %(versions)s::text[], %(types)s::text[], %(blobs)s::bytea[])
         AS b (channel, version, type, blob)
    ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING
)
INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata)
SELECT %(thread_id)s::text, %(checkpoint_ns)s::text, %(checkpoint_id)s::text, %(parent_id)s::text,
       %(checkpoint)s, %(metadata)s
FROM commit_mode
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)
DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata
"""
_PUT_WRITES = f"""
WITH {COMMIT_MODE}
INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, blob)
SELECT %(thread_id)s, %(checkpoint_ns)s, %(checkpoint_id)s, %(task_id)s, %(task_path)s,
       w.idx, w.channel, w.type, w.blob
FROM unnest(%(idx)s::int[], %(channels)s::text[], %(types)s::text[], %(blobs)s::bytea[])
     AS w (idx, channel, type, blob), commit_mode
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
"""
#: Special writes (errors, interrupts, resumes) replace an earlier one at their index; ordinary writes
#: of a task are written once (the stock saver's two statements).
UPSERT_WRITES = (
    _PUT_WRITES + "DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type, blob = EXCLUDED.blob"
)
INSERT_WRITES = _PUT_WRITES + "DO NOTHING"


def _synchronous_commit(config: RunnableConfig) -> str:
    """``on`` for a run asking for ``sync`` durability: each step is on disk before the next starts.
    Otherwise (``async``, LangGraph's default, and ``exit``) steps commit without waiting for the WAL
    flush: a crash of the serving process loses nothing, a crash of Postgres itself may lose the last
    fraction of a second of steps, which the run then executes again from the checkpoint before."""
    durability = config["configurable"].get(CONFIG_KEY_DURABILITY)
    return "on" if durability == "sync" else "off"


class CheckpointSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` with one-statement puts (same schema, same reads)."""

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        configurable = config["configurable"]
        thread_id = configurable["thread_id"]
        checkpoint_ns = configurable["checkpoint_ns"]
        stored = checkpoint.copy()
        values = dict(stored["channel_values"])
        # As the stock saver: primitive values stay inline in the checkpoint, others go to blobs.
        blob_values: dict[str, Any] = {}
        for key, value in checkpoint["channel_values"].items():
            if isinstance(value, _DeltaSnapshot):
                blob_values[key] = values.pop(key)
                values[key] = True
            elif not (value is None or isinstance(value, str | int | float | bool)):
                blob_values[key] = values.pop(key)
        stored["channel_values"] = values
        blobs = self._dump_blobs(
            thread_id,
            checkpoint_ns,
            blob_values,
            {key: version for key, version in new_versions.items() if key in blob_values},
        )
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
            "parent_id": configurable.get("checkpoint_id"),
            "checkpoint": Jsonb(stored),
            "metadata": Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
            "channels": [row[2] for row in blobs],
            "versions": [row[3] for row in blobs],
            "types": [row[4] for row in blobs],
            "blobs": [row[5] for row in blobs],
            "synchronous_commit": _synchronous_commit(config),
        }
        async with self._cursor() as cur:
            await cur.execute(PUT_CHECKPOINT, params)
        return {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if not writes:
            return
        configurable = config["configurable"]
        rows = self._dump_writes(
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
            task_id,
            task_path,
            writes,
        )
        indexes = [row[5] for row in rows]
        if len(set(indexes)) < len(indexes):
            # One statement cannot write a row twice; the stock saver's per-row upserts can.
            await super().aput_writes(config, writes, task_id, task_path)
            return
        special = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        params = {
            "thread_id": configurable["thread_id"],
            "checkpoint_ns": configurable["checkpoint_ns"],
            "checkpoint_id": configurable["checkpoint_id"],
            "task_id": task_id,
            "task_path": task_path,
            "idx": indexes,
            "channels": [row[6] for row in rows],
            "types": [row[7] for row in rows],
            "blobs": [cast(bytes | None, row[8]) for row in rows],
            "synchronous_commit": _synchronous_commit(config),
        }
        async with self._cursor() as cur:
            await cur.execute(UPSERT_WRITES if special else INSERT_WRITES, params)
