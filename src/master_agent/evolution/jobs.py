"""Entry points APScheduler calls (stored in the job store by reference, so they must be importable
module functions). They act on the evolution context of the process that runs the scheduler."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from master_agent.evolution.context import EvolutionContext
from master_agent.evolution.scheduler import crontab_trigger
from master_agent.storage.rate_limits import sweep_counters
from master_agent.storage.retention import (
    SweepResult,
    ThreadTTLSweep,
    retention_policy,
    sweep_checkpoints,
    sweep_thread_ttls,
)

logger = logging.getLogger(__name__)

_context: EvolutionContext | None = None


def use_evolution_context(context: EvolutionContext | None) -> None:
    """The context jobs run with in this process (set where the scheduler starts)."""
    global _context
    _context = context


_cron_firer: Callable[[str], Awaitable[object]] | None = None


def use_cron_firer(firer: Callable[[str], Awaitable[object]] | None) -> None:
    """What makes a cron's run in this process (the service sets it: a run needs its run queue)."""
    global _cron_firer
    _cron_firer = firer


def _require() -> EvolutionContext:
    if _context is None:
        raise RuntimeError("no evolution context in this process; jobs run where the scheduler started")
    return _context


async def run_outcome_check(check_id: str) -> None:
    from master_agent.evolution.outcomes import run_check

    result = await run_check(_require(), check_id)
    logger.info("outcome check %s: %s", check_id, result.status)


async def run_playbook(playbook_id: str) -> None:
    from master_agent.evolution.playbooks import execute_playbook

    context = _require()
    # The trigger's minute names the execution: a repeated fire of the same minute stores one run.
    instant = context.clock.now().replace(second=0, microsecond=0)
    result = await execute_playbook(context, playbook_id, instant)
    logger.info("playbook %s: %s", playbook_id, result.status)


async def run_cron(cron_id: str) -> None:
    if _cron_firer is None:
        raise RuntimeError("no cron firer in this process; crons fire where the service leads the scheduler")
    result = await _cron_firer(cron_id)
    logger.info("cron %s: %s", cron_id, result)


PENDING_CHECKS = "SELECT check_id, due_at FROM outcome_checks WHERE status = 'scheduled'"
ACTIVE_CRONS = "SELECT playbook_id, schedule FROM playbooks WHERE status = 'active' AND schedule IS NOT NULL"
#: The API's crons whose job the leader adds when it finds none (made where no scheduler ran).
SCHEDULED_API_CRONS = """
SELECT cron_id, schedule, timezone, end_time FROM crons
WHERE enabled AND next_run_date IS NOT NULL AND (end_time IS NULL OR end_time > now())
"""
API_CRON_JOB = "master_agent.evolution.jobs:run_cron"


def api_cron_job_id(cron_id: object) -> str:
    return f"cron:{cron_id}"


async def leader_tick(context: EvolutionContext) -> None:
    """The leader's periodic work: jobs for rows stored by processes without a scheduler (the CLI's
    ``none`` role, ``langgraph dev``), then the outbox (webhooks whose retry is due included); then
    sweeps, among them the rate-limit counters whose window has ended."""
    from master_agent.evolution.outbox import deliver_pending
    from master_agent.evolution.webhooks import deliver_webhooks

    await reconcile_jobs(context)
    await deliver_pending(context.pool, context.notifier)
    await deliver_webhooks(context.pool, context.settings)
    await sweep_checkpoints_if_due(context)
    await sweep_thread_ttls_if_due(context)
    await sweep_counters(context.pool)


async def sweep_checkpoints_if_due(context: EvolutionContext) -> SweepResult | None:
    """The retention sweep, every ``MASTER_AGENT_CHECKPOINT_SWEEP_MINUTES`` (None when not due or off)."""
    policy = retention_policy(context.settings)
    now = context.clock.now()
    last = context.checkpoints_swept_at
    if policy is None or (
        last is not None and now - last < timedelta(minutes=context.settings.checkpoint_sweep_minutes)
    ):
        return None
    context.checkpoints_swept_at = now
    result = await sweep_checkpoints(context.pool, policy, now)
    if result.threads:
        logger.info("checkpoint retention: %s", result.model_dump())
    return result


async def sweep_thread_ttls_if_due(context: EvolutionContext) -> ThreadTTLSweep | None:
    """Threads' own TTLs, every ``MASTER_AGENT_CHECKPOINT_SWEEP_MINUTES`` (None when not due)."""
    now = context.clock.now()
    last = context.thread_ttls_swept_at
    if last is not None and now - last < timedelta(minutes=context.settings.checkpoint_sweep_minutes):
        return None
    context.thread_ttls_swept_at = now
    result = await sweep_thread_ttls(context.pool, now)
    if result.deleted or result.pruned:
        logger.info("thread TTLs: %s", result.model_dump())
    return result


async def reconcile_jobs(context: EvolutionContext) -> int:
    """Add the jobs of scheduled checks and active playbooks that were stored without one (by a
    process with no scheduler); returns how many were added."""
    from master_agent.evolution.outcomes import CHECK_JOB, check_job_id
    from master_agent.evolution.playbooks import PLAYBOOK_JOB, playbook_job_id

    scheduler = context.scheduler
    if scheduler is None:
        return 0
    async with context.pool.connection() as conn:
        checks = await (await conn.execute(PENDING_CHECKS)).fetchall()
        crons = await (await conn.execute(ACTIVE_CRONS)).fetchall()
        api_crons = await (await conn.execute(SCHEDULED_API_CRONS)).fetchall()
    known = {job.id for job in scheduler.scheduler.get_jobs()}
    added = 0
    for check in checks:
        job_id = check_job_id(check["check_id"])
        if job_id not in known:
            scheduler.add_date_job(job_id, CHECK_JOB, check["due_at"], [str(check["check_id"])])
            added += 1
    for playbook in crons:
        job_id = playbook_job_id(playbook["playbook_id"])
        if job_id not in known:
            scheduler.add_cron_job(
                job_id, PLAYBOOK_JOB, crontab_trigger(playbook["schedule"]), [str(playbook["playbook_id"])]
            )
            added += 1
    for cron in api_crons:
        job_id = api_cron_job_id(cron["cron_id"])
        if job_id not in known:
            trigger = crontab_trigger(cron["schedule"], cron["timezone"] or "UTC", cron["end_time"])
            scheduler.add_cron_job(job_id, API_CRON_JOB, trigger, [str(cron["cron_id"])])
            added += 1
    return added
