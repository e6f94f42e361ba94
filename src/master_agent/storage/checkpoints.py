"""LangGraph's Postgres checkpointer, writing each checkpoint and each task's writes in one statement.

The stock ``AsyncPostgresSaver`` writes a checkpoint as a pipeline of one INSERT per blob plus the
checkpoint, and a task's writes as a pipeline of one INSERT per write, each after a hop to a thread to
serialise. Here both are single statements over arrays (``unnest``), serialised inline: the same rows
in the same tables, read back by the stock code, at a fraction of the client CPU per super-step (the
measured bottleneck with many concurrent runs).

In a run that names ``async`` durability (the service's graph runs name it, LangGraph's default), the writes of a step's tasks are held for a
moment (``HOLD_WRITES_S``) so that the step's checkpoint, which follows as soon as the step ends, carries
them in its own statement: one round trip per super-step instead of one per task plus one. Writes whose
checkpoint does not follow within that moment (a sibling task still working) are written alone, and a
task's write call returns only once its writes are stored, so LangGraph's end-of-run wait still means
every write is stored. ``sync`` runs, runs that name no durability, special writes (errors, interrupts,
resumes) and writes outside a run (``update_state``, which names none) are written at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
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
#: Rows of ``checkpoint_writes`` given as parallel arrays (several tasks' writes in one statement).
_WRITE_ROWS = """unnest(%(task_ids)s::text[], %(task_paths)s::text[], %(idx)s::int[], %(channels)s::text[],
       %(types)s::text[], %(blobs)s::bytea[]) AS w (task_id, task_path, idx, channel, type, blob)"""
#: A checkpoint, the blobs of its changed channels and the held writes of the step before it (written
#: against the parent checkpoint). A data-modifying CTE always runs, so the blobs and writes are written
#: even though the outer INSERT does not read them.
PUT_CHECKPOINT = f"""
WITH {COMMIT_MODE},
held_writes AS (
    INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, blob)
    SELECT %(thread_id)s, %(checkpoint_ns)s, %(parent_id)s, w.task_id, w.task_path, w.idx, w.channel, w.type, w.blob
    FROM {_WRITE_ROWS.replace("%(", "%(held_")}
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING
),
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
SELECT %(thread_id)s, %(checkpoint_ns)s, %(checkpoint_id)s, w.task_id, w.task_path, w.idx, w.channel, w.type, w.blob
FROM {_WRITE_ROWS}, commit_mode
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


#: How long a step's task writes wait for the step's checkpoint to carry them before they are written
#: alone. A step's checkpoint follows its last task at once; a sibling still working (a slow tool) must
#: not keep a finished task's writes unsaved for longer than this.
HOLD_WRITES_S = 0.2

#: (thread_id, checkpoint_ns, checkpoint_id): the checkpoint the writes belong to.
_WritesKey = tuple[str, str, str]
#: (task_id, task_path, idx, channel, type, blob)
_WriteRow = tuple[str, str, int, str, str, bytes | None]


@dataclass
class _HeldWrites:
    """Task writes of one checkpoint waiting for the next checkpoint's statement."""

    stored: asyncio.Future[None]
    """Done when the rows are stored (by the next checkpoint's statement or alone)."""
    timer: asyncio.TimerHandle
    synchronous_commit: str
    rows: list[_WriteRow] = field(default_factory=list)


def _write_params(rows: Sequence[_WriteRow], prefix: str = "") -> dict[str, Any]:
    return {
        f"{prefix}task_ids": [row[0] for row in rows],
        f"{prefix}task_paths": [row[1] for row in rows],
        f"{prefix}idx": [row[2] for row in rows],
        f"{prefix}channels": [row[3] for row in rows],
        f"{prefix}types": [row[4] for row in rows],
        f"{prefix}blobs": [row[5] for row in rows],
    }


class CheckpointSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` with one-statement puts (same schema, same reads)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._held: dict[_WritesKey, _HeldWrites] = {}
        self._flushing: set[asyncio.Task[None]] = set()

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
        parent_id = configurable.get("checkpoint_id")
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
        held = self._take_held((thread_id, checkpoint_ns, parent_id)) if parent_id else None
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint["id"],
            "parent_id": parent_id,
            "checkpoint": Jsonb(stored),
            "metadata": Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
            "channels": [row[2] for row in blobs],
            "versions": [row[3] for row in blobs],
            "types": [row[4] for row in blobs],
            "blobs": [row[5] for row in blobs],
            "synchronous_commit": _synchronous_commit(config),
            **_write_params(held.rows if held else [], "held_"),
        }
        try:
            async with self._cursor() as cur:
                await cur.execute(PUT_CHECKPOINT, params)
        except BaseException:
            if held is not None:
                # The writes were not stored with the checkpoint: they go alone, now.
                self._held[(thread_id, checkpoint_ns, cast(str, parent_id))] = held
                self._flush_soon((thread_id, checkpoint_ns, cast(str, parent_id)))
            raise
        if held is not None and not held.stored.done():
            held.stored.set_result(None)
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
        key: _WritesKey = (
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
        )
        dumped = self._dump_writes(*key, task_id, task_path, writes)
        rows: list[_WriteRow] = [(row[3], row[4], row[5], row[6], row[7], row[8]) for row in dumped]
        indexes = [row[2] for row in rows]
        if len(set(indexes)) < len(indexes):
            # One statement cannot write a row twice; the stock saver's per-row upserts can.
            await self._store_held(key)
            await super().aput_writes(config, writes, task_id, task_path)
            return
        special = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        commit = _synchronous_commit(config)
        if special or configurable.get(CONFIG_KEY_DURABILITY) != "async":
            await self._store_held(key)
            await self._store_writes(key, rows, commit, upsert=special)
            return
        held = self._held.get(key)
        if held is None:
            loop = asyncio.get_running_loop()
            held = _HeldWrites(
                stored=loop.create_future(),
                timer=loop.call_later(HOLD_WRITES_S, self._flush_soon, key),
                synchronous_commit=commit,
            )
            self._held[key] = held
        held.rows.extend(rows)
        # Shielded: a cancelled run's finished tasks keep their writes (the flush goes on).
        await asyncio.shield(held.stored)

    def _take_held(self, key: _WritesKey) -> _HeldWrites | None:
        held = self._held.pop(key, None)
        if held is not None:
            held.timer.cancel()
        return held

    def _flush_soon(self, key: _WritesKey) -> None:
        task = asyncio.ensure_future(self._store_held(key))
        self._flushing.add(task)
        task.add_done_callback(self._flushing.discard)

    async def _store_held(self, key: _WritesKey) -> None:
        """Store alone the writes held for ``key`` (none: nothing to do); a failure is raised to the tasks
        whose writes they are, not here."""
        held = self._take_held(key)
        if held is None:
            return
        try:
            await self._store_writes(key, held.rows, held.synchronous_commit, upsert=False)
        except asyncio.CancelledError:
            held.stored.cancel()
            raise
        except Exception as error:
            if not held.stored.done():
                held.stored.set_exception(error)
                held.stored.exception()  # a run already gone leaves nobody to read it: not an unread error
            return
        if not held.stored.done():
            held.stored.set_result(None)

    async def _store_writes(
        self, key: _WritesKey, rows: Sequence[_WriteRow], commit: str, *, upsert: bool
    ) -> None:
        thread_id, checkpoint_ns, checkpoint_id = key
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
            "synchronous_commit": commit,
            **_write_params(rows),
        }
        async with self._cursor() as cur:
            await cur.execute(UPSERT_WRITES if upsert else INSERT_WRITES, params)
