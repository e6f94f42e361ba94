"""The runs queue: Postgres is the source of truth, any process may execute any run.

A run is claimed with ``FOR UPDATE SKIP LOCKED`` and held by a lease its worker renews with a
heartbeat. A run whose worker died (lease expired) is claimed again by any worker and continues from
its last checkpoint, so no finished step runs again. New runs wake workers through ``NOTIFY``: a run
that can start starts at once; the poll is only a fallback (a lost notification, an expired lease).
Tenants share a process's slots fairly: the queued run of the tenant holding the fewest slots here
goes first, and one tenant alone may take every slot (unless ``tenant_slots`` caps it on purpose).

``RunQueue`` is built up in layers, each a module (the lower ones know nothing of the upper):

    statements.py    the SQL, the notification channels and the timings
    records.py       ``Run`` (a row of ``runs``) and what a run's end writes to its thread and webhook
    bookkeeping.py   ``RunBookkeeping``: this process's slots, waiters, outputs and background tasks
    cancellation.py  ``RunCancellation``: stopping a run, here or in the process executing it
    execution.py     ``RunExecution``: executing a claimed run through outages, storing its end
    claims.py        ``RunClaims``: the claim, lease-renewal and notification loops
    queue.py         ``RunQueue``: enqueue, read and wait for runs; start and stop the worker
"""

from master_agent.runtime.runs.queue import RunQueue
from master_agent.runtime.runs.records import Run, RunStatus, RunTakenOver
from master_agent.runtime.runs.statements import MODEL_ERROR, TERMINAL, CancelAction

__all__ = ["MODEL_ERROR", "TERMINAL", "CancelAction", "Run", "RunQueue", "RunStatus", "RunTakenOver"]
