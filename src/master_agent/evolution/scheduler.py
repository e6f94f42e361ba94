"""APScheduler for the evolution loop: one leader process runs jobs, every process may add them.

Jobs (outcome checks, playbook triggers) live in APScheduler's ``SQLAlchemyJobStore`` in the same
PostgreSQL, so they survive restarts. Every process starts its scheduler *paused*: adding a job writes
it to the store. The process holding a session-level advisory lock is the leader and resumes its
scheduler; if it dies, its connection (and lock) goes with it and another process takes over at its
next poll. Late jobs run once when a leader comes back (no misfire grace limit, coalesced).

The leader also wakes its scheduler every poll: APScheduler sleeps until the next run time it knows,
and a job another process added may be due sooner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Literal

import psycopg
from apscheduler.jobstores.base import JobLookupError
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine, make_url

logger = logging.getLogger(__name__)

_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")


def _weekday_field(field: str) -> str:
    """A crontab day-of-week field in APScheduler 3's terms: its numbers count from Monday, crontab's
    from Sunday (0 and 7), so numbers become day names (ranges and steps spelled out)."""
    if not any(char.isdigit() for char in field.split("/")[0]):
        return field  # '*', '*/2' over names is the same in both; names mean the same days
    days: list[str] = []
    for item in field.split(","):
        span, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if span == "*":
            first, last = 0, 6
        elif "-" in span:
            first_text, last_text = span.split("-", 1)
            first, last = int(first_text), int(last_text)
        else:
            first = last = int(span)
            if step_text:
                last = 6
        if not (0 <= first <= 7 and 0 <= last <= 7 and first <= last and step >= 1):
            raise ValueError(f"day of week {item!r}: numbers 0-7 (0 and 7 are Sunday), low to high")
        days.extend(_WEEKDAYS[day] for day in range(first, last + 1, step))
    return ",".join(dict.fromkeys(days))


def crontab_trigger(
    expr: str, timezone: str | tzinfo = "UTC", end_date: datetime | None = None
) -> CronTrigger:
    """A trigger for a crontab as cron reads it: five fields (minute hour day month weekday), or six
    with seconds last (croniter's form, which langgraph-api accepts)."""
    fields = expr.split()
    if len(fields) not in (5, 6):
        raise ValueError(
            f"{len(fields)} fields; expected 5 (minute hour day month weekday) or 6 (then seconds)"
        )
    if any(char.isdigit() for char in fields[4]) and any(char.isalpha() for char in fields[4]):
        raise ValueError("day of week: numbers or names, not both")
    return CronTrigger(
        minute=fields[0],
        hour=fields[1],
        day=fields[2],
        month=fields[3],
        day_of_week=_weekday_field(fields[4]),
        second=fields[5] if len(fields) == 6 else "0",
        timezone=timezone,
        end_date=end_date,
    )


#: Consecutive firings read to find a schedule's closest two: enough to cross the hour, day, month and
#: year ends where an irregular schedule ('0,59 * * * *', '0 0 1,31 * *') fires closest.
FREQUENCY_SAMPLES = 64
MIN_INTERVAL_SETTING = "MASTER_AGENT_CRON_MIN_INTERVAL_S"


def _duration(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def check_cron_frequency(
    expr: str, min_interval_s: int, timezone: str | tzinfo = "UTC", now: datetime | None = None
) -> None:
    """ValueError when the crontab ``expr`` fires more often than ``min_interval_s`` allows (0: any
    frequency), or has a seconds field while the minimum is a minute or more (a seconds field only
    serves schedules firing within a minute)."""
    trigger = crontab_trigger(expr, timezone)
    if min_interval_s <= 0:
        return
    if len(expr.split()) == 6 and min_interval_s >= 60:
        raise ValueError(
            "the seconds field (the sixth) is not accepted: five fields (minute hour day month weekday), "
            f"at least {_duration(min_interval_s)} between firings ({MIN_INTERVAL_SETTING})"
        )
    fire: datetime | None = trigger.get_next_fire_time(None, now or datetime.now(UTC))
    closest: timedelta | None = None
    for _ in range(FREQUENCY_SAMPLES):
        if fire is None:
            break
        following: datetime | None = trigger.get_next_fire_time(fire, fire + timedelta(microseconds=1))
        if following is None:
            break
        # In UTC: two aware times of one zone subtract as wall-clock times, wrong across a DST change.
        gap = following.astimezone(UTC) - fire.astimezone(UTC)
        closest = gap if closest is None else min(closest, gap)
        fire = following
    if closest is not None and closest.total_seconds() < min_interval_s:
        raise ValueError(
            f"fires {_duration(closest.total_seconds())} apart at its closest; at least "
            f"{_duration(min_interval_s)} between two firings ({MIN_INTERVAL_SETTING})"
        )


LEADER_LOCK_KEY = 0x6D61_7363_6864  # "masch d"
JOBS_TABLE = "apscheduler_jobs"
SchedulerState = Literal["stopped", "standby", "leader"]


def job_store_engine(database_uri: str) -> Engine:
    """A SQLAlchemy engine on the same database, through psycopg 3."""
    url = make_url(database_uri).set(drivername="postgresql+psycopg")
    return create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=2)


class EvolutionScheduler:
    def __init__(
        self,
        database_uri: str,
        *,
        poll_s: float = 5.0,
        lock_key: int = LEADER_LOCK_KEY,
        on_lead: Callable[[], Awaitable[object]] | None = None,
        on_tick: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.database_uri = database_uri
        self.on_lead = on_lead
        """Called each time this process becomes the leader (to add jobs stored without one)."""
        self.on_tick = on_tick
        """Called at every poll while leading (to deliver the outbox)."""
        self.poll_s = poll_s
        self.lock_key = lock_key
        self.engine = job_store_engine(database_uri)
        self.scheduler = AsyncIOScheduler(
            jobstores={"default": SQLAlchemyJobStore(engine=self.engine, tablename=JOBS_TABLE)},
            job_defaults={"misfire_grace_time": None, "coalesce": True, "max_instances": 1},
            timezone="UTC",
        )
        self._lock_conn: psycopg.AsyncConnection[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self.state: SchedulerState = "stopped"

    async def start(self, *, lead: bool = True) -> None:
        """Open the job store; with ``lead``, compete for leadership in the background."""
        # The job store's table comes from migration 0007; its own create-if-missing check on start
        # then finds it (two processes starting together never race to create it).
        self.scheduler.start(paused=True)
        self.state = "standby"
        if lead:
            await self._try_lead()
            self._task = asyncio.create_task(self._watch(), name="evolution-scheduler-leader")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        await self._release()
        await asyncio.to_thread(self.engine.dispose)
        self.state = "stopped"

    async def _try_lead(self) -> None:
        try:
            if self._lock_conn is None or self._lock_conn.closed:
                self._lock_conn = await psycopg.AsyncConnection.connect(
                    self.database_uri, autocommit=True, application_name="master-agent-scheduler"
                )
            cursor = await self._lock_conn.execute("SELECT pg_try_advisory_lock(%s)", (self.lock_key,))
            row = await cursor.fetchone()
        except psycopg.Error as error:
            logger.warning("scheduler: cannot reach the database to lead: %s", error)
            await self._release()
            return
        if row and row[0]:
            self.state = "leader"
            if self.on_lead is not None:
                try:
                    await self.on_lead()
                except Exception:
                    logger.exception("scheduler: reconciling jobs failed")
            self.scheduler.resume()
            logger.info("scheduler: this process leads (jobs run here)")

    async def _still_leading(self) -> bool:
        try:
            assert self._lock_conn is not None
            await self._lock_conn.execute("SELECT 1")
        except (psycopg.Error, AssertionError):
            return False
        return True

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            if self.state == "leader":
                if await self._still_leading():
                    self.scheduler.wakeup()
                    await self._tick()
                    continue
                logger.warning("scheduler: lost the leader lock; pausing")
                self.scheduler.pause()
                self.state = "standby"
                await self._release()
            await self._try_lead()

    async def _tick(self) -> None:
        if self.on_tick is None:
            return
        try:
            await self.on_tick()
        except Exception:
            logger.exception("scheduler: periodic work failed")

    async def _release(self) -> None:
        if self._lock_conn is not None:
            with contextlib.suppress(psycopg.Error):
                await self._lock_conn.close()
            self._lock_conn = None

    # -- jobs ----------------------------------------------------------------------------------

    def add_date_job(self, job_id: str, func: str, run_at: datetime, args: list[Any]) -> None:
        self.scheduler.add_job(
            func, "date", run_date=run_at, args=args, id=job_id, replace_existing=True, name=job_id
        )
        self._nudge()

    def add_cron_job(self, job_id: str, func: str, trigger: CronTrigger, args: list[Any]) -> None:
        self.scheduler.add_job(func, trigger, args=args, id=job_id, replace_existing=True, name=job_id)
        self._nudge()

    def remove_job(self, job_id: str) -> None:
        with contextlib.suppress(JobLookupError):
            self.scheduler.remove_job(job_id)

    def next_run(self, job_id: str) -> datetime | None:
        job = self.scheduler.get_job(job_id)
        return job.next_run_time if job is not None else None

    def _nudge(self) -> None:
        if self.state == "leader":
            self.scheduler.wakeup()
