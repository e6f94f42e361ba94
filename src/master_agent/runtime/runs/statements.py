"""The runs queue's SQL as named statements, its notification channels, and its timings."""

from __future__ import annotations

from typing import Literal

from master_agent.runtime.run_events import INSERT_EVENTS

#: The error name of a run whose master agent's model failed (stream ``error`` events, run output).
MODEL_ERROR = "ModelError"
TERMINAL: frozenset[str] = frozenset({"success", "error", "interrupted"})
#: Wakes the claim loops of every process; the payload is the delay of a delayed run (seconds), when
#: it falls due.
CHANNEL = "master_agent_runs"
CANCEL_CHANNEL = "master_agent_cancel"
#: Tells every process a run has finished, so waiters elsewhere answer at once instead of polling.
DONE_CHANNEL = "master_agent_run_done"
CancelAction = Literal["interrupt", "rollback"]
#: How often a waiter first re-reads a run executing elsewhere (it is woken by notifications first),
#: and how long the listener waits before reconnecting.
POLL_S = 0.5
#: A waiter for a run is woken by the run's end (here, or notified from elsewhere). While this process
#: listens it re-reads the run this often, as a safety net; while it does not, after POLL_S, then less
#: and less often (up to this).
WAIT_POLL_MAX_S = 8.0

INSERT_RUN = """
INSERT INTO runs (run_id, tenant_id, thread_id, kind, solution_id, status)
VALUES (%s, %s, %s, %s, %s, 'pending')
"""
#: Runs of one tenant a claim weighs: its oldest claimable ones (more than one, so that claims of other
#: processes in flight, which lock theirs, leave some to take).
CLAIM_CANDIDATES_PER_TENANT = 8
#: The claimable run whose thread has no other live or earlier run (runs on one thread go one at a
#: time, in order: the enqueue strategy) of the tenant holding the fewest of this process's slots
#: (``held``: tenant -> slots), oldest first. Tenants at their cap (``full_tenants``) wait.
#: ``queued_s``: how long the run waited since it was due.
#: Only each tenant's oldest claimable runs are weighed (``candidates``, read through the index of live
#: runs by tenant), so a claim costs the same with thousands queued: sorting every queued run took 21 ms
#: a claim at 5,000 queued (``benchmarks/claim_query.py``). The claimable test is repeated on the row
#: locked, so a run another process claimed meanwhile is passed over.
CLAIM_RUN = f"""
UPDATE runs SET status = 'running', lease_owner = %(owner)s,
       lease_expires_at = now() + make_interval(secs => %(lease)s),
       started_at = coalesce(started_at, now()), attempts = attempts + 1, updated_at = now()
FROM (
    SELECT r.run_id, extract(epoch FROM clock_timestamp() - r.created_at) AS queued_s FROM runs r
    WHERE r.run_id IN (
        SELECT candidate.run_id FROM tenants t CROSS JOIN LATERAL (
            SELECT c.run_id FROM runs c
            WHERE c.tenant_id = t.tenant_id AND c.status IN ('pending', 'running')
              AND ((c.status = 'pending' AND c.created_at <= now())
                   OR (c.status = 'running' AND c.lease_expires_at < now()))
              AND NOT (c.status = 'running' AND c.lease_owner = %(owner)s)
              AND NOT EXISTS (
                  SELECT 1 FROM runs o
                  WHERE o.tenant_id = c.tenant_id AND o.thread_id = c.thread_id AND o.run_id <> c.run_id
                    AND ((o.status = 'running' AND o.lease_expires_at >= now())
                         OR (o.status IN ('pending', 'running') AND o.created_at < c.created_at)))
            ORDER BY c.created_at
            LIMIT {CLAIM_CANDIDATES_PER_TENANT}
        ) AS candidate
        WHERE t.tenant_id <> ALL(%(full_tenants)s::text[])
    )
      AND ((r.status = 'pending' AND r.created_at <= now())
           OR (r.status = 'running' AND r.lease_expires_at < now()))
      AND NOT (r.status = 'running' AND r.lease_owner = %(owner)s)
    ORDER BY coalesce((%(held)s::jsonb ->> r.tenant_id)::int, 0), r.created_at
    FOR UPDATE OF r SKIP LOCKED
    LIMIT 1
) AS chosen
WHERE runs.run_id = chosen.run_id
RETURNING runs.run_id, runs.tenant_id, runs.thread_id, runs.kind, runs.solution_id, runs.attempts, runs.kwargs,
          chosen.queued_s
"""
#: A graph run, queued ('pending'), or already claimed by ``owner`` when this process executes it at once;
#: its thread marked busy in the same statement: busy, and the graph shape its runs use (kept when
#: ``config`` is null), its metadata stamped with the run's graph and assistant, as langgraph-api stamps
#: them (so ``threads.search(metadata={"graph_id": ...})`` finds it). A delayed run (``after_seconds``) is
#: created in the future, as langgraph-api does: no worker claims it before then, and runs on its thread
#: created before that go first.
ENQUEUE_GRAPH_RUN = """
WITH inserted AS (
    INSERT INTO runs (run_id, tenant_id, thread_id, kind, status, assistant_id, kwargs, metadata,
                      multitask_strategy, lease_owner, lease_expires_at, started_at, attempts, created_at,
                      updated_at)
    VALUES (%(run_id)s, %(tenant_id)s, %(thread_id)s, 'graph',
            CASE WHEN %(owner)s::text IS NULL THEN 'pending' ELSE 'running' END,
            %(assistant_id)s, %(kwargs)s, %(metadata)s, %(strategy)s, %(owner)s,
            CASE WHEN %(owner)s::text IS NULL THEN NULL ELSE now() + make_interval(secs => %(lease)s) END,
            CASE WHEN %(owner)s::text IS NULL THEN NULL ELSE now() END,
            CASE WHEN %(owner)s::text IS NULL THEN 0 ELSE 1 END,
            now() + make_interval(secs => %(after_seconds)s), now())
    RETURNING *
),
busy AS (
    UPDATE threads SET status = 'busy', config = coalesce(%(thread_config)s::jsonb, config), updated_at = now(),
      metadata = metadata || jsonb_build_object('graph_id', %(graph_id)s::text, 'assistant_id', %(assistant_key)s::text)
    WHERE thread_id = %(thread_id)s::uuid
)
SELECT * FROM inserted
"""
LOCK_THREAD = "SELECT thread_id FROM threads WHERE thread_id = %s FOR UPDATE"
#: A due run of another tenant is queued: a tenant already running here lets it go first.
OTHERS_QUEUED = """
SELECT 1 FROM runs WHERE status = 'pending' AND created_at <= now() AND tenant_id <> %s LIMIT 1
"""
ACTIVE_ON_THREAD = "SELECT 1 FROM runs WHERE thread_id = %s AND status IN ('pending', 'running') LIMIT 1"
MARK_THREAD = "UPDATE threads SET status = %s, updated_at = now() WHERE thread_id = %s"
FINISH_RUN = """
UPDATE runs SET status = %(status)s, error = %(error)s, finished_at = now(), updated_at = now(),
       lease_expires_at = NULL
WHERE run_id = %(run_id)s AND lease_owner = %(owner)s
"""
#: A run's end in one statement: its last events (those not written yet), its status, its thread's
#: status (``thread_key`` null for a thread with no row), and whether runs queued behind it on its
#: thread wait (``queued``: the workers are woken for them). Its notifications (waiters and streams
#: elsewhere, queued runs) are sent after its commit (``storage/notifications.py``).
END_RUN = f"""
WITH {INSERT_EVENTS},
finished AS ({FINISH_RUN}),
marked AS (
    UPDATE threads SET status = %(thread_status)s, updated_at = now(),
           "values" = CASE WHEN %(set_values)s THEN %(values)s::jsonb ELSE "values" END,
           interrupts = coalesce(%(interrupts)s::jsonb, interrupts)
    WHERE thread_id = %(thread_key)s
)
SELECT EXISTS (SELECT 1 FROM runs WHERE thread_id = %(thread_id)s AND status = 'pending') AS queued
"""
RENEW_LEASES = """
UPDATE runs SET lease_expires_at = now() + make_interval(secs => %(lease)s)
WHERE lease_owner = %(owner)s AND status = 'running' AND run_id = ANY(%(runs)s)
"""
SELECT_RUN = "SELECT * FROM runs WHERE run_id = %s"
SELECT_STATUS = "SELECT status FROM runs WHERE run_id = %s"
LOCK_RUN = "SELECT status, thread_id, kind FROM runs WHERE run_id = %s FOR UPDATE"
ACTIVE_RUNS_ON_THREAD = "SELECT run_id FROM runs WHERE thread_id = %s AND status IN ('pending', 'running')"
REQUEST_CANCEL = "UPDATE runs SET cancel_action = %s, updated_at = now() WHERE run_id = %s"
CANCEL_PENDING = """
UPDATE runs SET status = 'interrupted', cancel_action = 'interrupt', finished_at = now(), updated_at = now()
WHERE run_id = %s
"""
DELETE_RUN = "DELETE FROM runs WHERE run_id = %s"
#: The checkpoints a run wrote (LangGraph copies ``configurable.run_id`` into checkpoint metadata).
ROLLBACK_CHECKPOINTS = [
    """DELETE FROM checkpoint_writes w USING checkpoints c
       WHERE c.thread_id = %(thread)s AND c.metadata ->> 'run_id' = %(run)s
         AND w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id""",
    "DELETE FROM checkpoints WHERE thread_id = %(thread)s AND metadata ->> 'run_id' = %(run)s",
]
COUNT_BY_STATUS = "SELECT status, count(*) AS n FROM runs GROUP BY status"
