"""Entry points APScheduler calls (stored in the job store by reference, so they must be importable
module functions). They act on the evolution context of the process that runs the scheduler."""

from __future__ import annotations

import logging
from datetime import timedelta

from master_agent.evolution.context import EvolutionContext
from master_agent.storage.retention import SweepResult, retention_policy, sweep_checkpoints

logger = logging.getLogger(__name__)

_context: EvolutionContext | None = None


def use_evolution_context(context: EvolutionContext | None) -> None:
    """The context jobs run with in this process (set where the scheduler starts)."""
    global _context
    _context = context


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


PENDING_CHECKS = "SELECT check_id, due_at FROM outcome_checks WHERE status = 'scheduled'"
ACTIVE_CRONS = "SELECT playbook_id, schedule FROM playbooks WHERE status = 'active' AND schedule IS NOT NULL"


async def leader_tick(context: EvolutionContext) -> None:
    """The leader's periodic work: jobs for rows stored by processes without a scheduler (the CLI's
    ``none`` role, ``langgraph dev``), then the outbox."""
    from master_agent.evolution.outbox import deliver_pending

    await reconcile_jobs(context)
    await deliver_pending(context.pool, context.notifier)
    await sweep_checkpoints_if_due(context)


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
            scheduler.add_cron_job(job_id, PLAYBOOK_JOB, playbook["schedule"], [str(playbook["playbook_id"])])
            added += 1
    return added
