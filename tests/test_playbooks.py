"""Playbooks on real Postgres and the real APScheduler job store: deploy, execute, disable, roll back."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import ClassVar

import pytest

from master_agent.errors import ConflictError, NotFoundError, ToolInputError
from master_agent.evolution.context import EvolutionContext
from master_agent.evolution.playbooks import (
    PlaybookRefused,
    change_status,
    deploy_playbook,
    execute_playbook,
    get_playbook,
    playbook_history,
    playbook_job_id,
)
from master_agent.evolution.scheduler import EvolutionScheduler
from master_agent.evolution.tools import build_evolution_tools
from master_agent.runtime import RuntimeResources
from tests.test_evolution_units import VALID_PLAYBOOK


@pytest.fixture
async def evolution(resources: RuntimeResources) -> AsyncIterator[EvolutionContext]:
    """The shared resources' evolution context with a scheduler that adds jobs (no leader here)."""
    scheduler = EvolutionScheduler(resources.database.uri, poll_s=0.2, lock_key=21)
    await scheduler.start(lead=False)
    try:
        yield dataclasses.replace(resources.evolution, scheduler=scheduler)
    finally:
        await scheduler.stop()


async def _count(evolution: EvolutionContext, query: str, *params: object) -> int:
    async with evolution.pool.connection() as conn:
        row = await (await conn.execute(query, params)).fetchone()
    assert row is not None
    return int(next(iter(row.values())))


async def test_deploy_execute_disable_and_roll_back(evolution: EvolutionContext) -> None:
    name = f"monitor {uuid.uuid4().hex[:6]}"
    deployed = await deploy_playbook(evolution, "demo-retail", {**VALID_PLAYBOOK, "name": name})
    assert deployed.status == "active" and deployed.version == 1 and deployed.schedule == "0 9 * * MON"
    assert evolution.scheduler is not None
    next_run = evolution.scheduler.next_run(playbook_job_id(deployed.playbook_id))
    assert next_run is not None and next_run.weekday() == 0 and next_run.hour == 9  # Mondays 09:00 UTC
    assert deployed.next_run_at == next_run
    again = await deploy_playbook(evolution, "demo-retail", {**VALID_PLAYBOOK, "name": name})
    assert again.version == 2  # same name: a new version

    # Executing runs the tool step against the tenant's data; Store 5 has staff under 4 %, so the
    # condition holds and the notification goes to the outbox.
    instant = datetime(2026, 12, 7, 9, tzinfo=UTC)
    run = await execute_playbook(evolution, deployed.playbook_id, instant)
    assert run.status == "success" and run.triggered is True
    tool_step, notify_step = run.results
    assert tool_step.status == "success" and tool_step.result["staff_summary"]["store_id"] == 5
    assert notify_step.status == "success"
    message_id = notify_step.result["message_id"]
    assert await _count(evolution, "SELECT count(*) FROM outbox WHERE message_id = %s", message_id) == 1
    outbox_before = await _count(evolution, "SELECT count(*) FROM outbox")
    twice = await execute_playbook(evolution, deployed.playbook_id, instant)
    assert twice.status == "already_ran"
    assert await _count(evolution, "SELECT count(*) FROM outbox") == outbox_before  # nothing sent twice

    # A condition that does not hold: tools run, notifications are skipped.
    quiet_spec = {**VALID_PLAYBOOK, "name": f"{name} quiet"}
    quiet_spec["trigger"] = {"event": {"metric": "attach_rate", "operator": ">", "threshold": 0.99}}
    quiet = await deploy_playbook(evolution, "demo-retail", quiet_spec)
    assert quiet.schedule is None and evolution.scheduler.next_run(playbook_job_id(quiet.playbook_id)) is None
    skipped = await execute_playbook(evolution, quiet.playbook_id, instant)
    assert skipped.status == "skipped" and skipped.triggered is False
    assert skipped.results[1].status == "skipped"

    # Another tenant can neither read nor change it.
    assert await get_playbook(evolution, "demo-retail-2", deployed.playbook_id) is None
    with pytest.raises(NotFoundError):
        await change_status(evolution, "demo-retail-2", deployed.playbook_id, "disable")

    disabled = await change_status(
        evolution, "demo-retail", deployed.playbook_id, "disable", "pause for audit"
    )
    assert disabled.status == "disabled"
    assert evolution.scheduler.next_run(playbook_job_id(deployed.playbook_id)) is None
    assert (await execute_playbook(evolution, deployed.playbook_id, datetime.now(UTC))).status == "inactive"
    with pytest.raises(ConflictError):
        await change_status(evolution, "demo-retail", deployed.playbook_id, "disable")
    rolled = await change_status(evolution, "demo-retail", deployed.playbook_id, "rollback", "attach fell")
    assert rolled.status == "rolled_back"
    with pytest.raises(ConflictError):
        await change_status(evolution, "demo-retail", deployed.playbook_id, "rollback")
    rollback_messages = await _count(
        evolution,
        "SELECT count(*) FROM outbox WHERE channel = 'playbooks' AND body->>'playbook_id' = %s AND body ? 'rollback'",
        str(deployed.playbook_id),
    )
    assert rollback_messages == 1
    history = await playbook_history(evolution, deployed.playbook_id)
    assert [event["action"] for event in history["events"]] == ["deployed", "disabled", "rolled_back"]
    assert [run["status"] for run in history["runs"]] == ["success"]


async def test_an_invalid_playbook_is_refused_and_nothing_is_stored(evolution: EvolutionContext) -> None:
    before = await _count(evolution, "SELECT count(*) FROM playbooks")
    broken = {**VALID_PLAYBOOK, "steps": [{"order": 1, "action": "tool", "tool": "drop_tables"}], "owner": ""}
    with pytest.raises(PlaybookRefused) as refused:
        await deploy_playbook(evolution, "demo-retail", broken)
    assert len(refused.value.reasons) == 1 and "owner" in refused.value.reasons[0]  # shape first
    with pytest.raises(PlaybookRefused, match="drop_tables"):
        await deploy_playbook(evolution, "demo-retail", {**broken, "owner": "me"})
    assert await _count(evolution, "SELECT count(*) FROM playbooks") == before


async def test_agent_tools_act_for_their_tenant(evolution: EvolutionContext) -> None:
    tools = build_evolution_tools(evolution, "demo-retail")
    config = {"configurable": {"thread_id": "t"}}
    result = await tools["deploy_playbook"].ainvoke(
        {"playbook": {**VALID_PLAYBOOK, "name": "from a tool"}}, config
    )
    playbook_id = result["deployed_playbook"]["playbook_id"]
    found = await get_playbook(evolution, "demo-retail", playbook_id)
    assert found is not None and found.status == "active"
    with pytest.raises(ToolInputError, match="unknown tool"):
        bad = {**VALID_PLAYBOOK, "steps": [{"order": 1, "action": "tool", "tool": "nope"}]}
        await tools["deploy_playbook"].ainvoke({"playbook": bad}, config)
    with pytest.raises(ToolInputError, match="no solution to track"):
        await tools["schedule_outcome_tracking"].ainvoke({"expected_outcome": {}}, config)
    found_patterns = await tools["search_village_knowledge"].ainvoke({"problem": "attach rate"})
    assert isinstance(found_patterns["patterns"], list)


async def test_the_outbox_hands_messages_to_a_pluggable_notifier(evolution: EvolutionContext) -> None:
    from master_agent.evolution import outbox

    class Flaky:
        def __init__(self) -> None:
            self.seen: list[str] = []

        async def deliver(self, message: outbox.OutboxMessage) -> None:
            self.seen.append(message.subject)
            if message.subject == "boom":
                raise ConnectionError("smtp down")

    async with evolution.pool.connection() as conn, conn.transaction():
        await conn.execute("UPDATE outbox SET status = 'delivered' WHERE status = 'pending'")
        for subject in ("hello", "boom"):
            await outbox.enqueue(conn, "demo-retail", "test", subject, {"n": 1})
    notifier = Flaky()
    assert await outbox.deliver_pending(evolution.pool, notifier) == (1, 1)
    assert sorted(notifier.seen) == ["boom", "hello"]
    assert await outbox.deliver_pending(evolution.pool, notifier) == (0, 0)  # nothing pending is left
    failed = await _count(
        evolution, "SELECT count(*) FROM outbox WHERE subject = 'boom' AND status = 'failed'"
    )
    assert failed >= 1


class Collecting:
    """A notifier a deployment would plug in with MASTER_AGENT_NOTIFIER (here: collects subjects)."""

    delivered: ClassVar[list[str]] = []

    async def deliver(self, message: object) -> None:
        self.delivered.append(str(getattr(message, "subject", "")))


def test_the_notifier_is_named_by_a_setting() -> None:
    from master_agent.errors import ConfigError
    from master_agent.evolution.outbox import RecordingNotifier, load_notifier
    from master_agent.settings import Settings

    assert isinstance(load_notifier(None), RecordingNotifier)
    settings = Settings.from_env({"MASTER_AGENT_NOTIFIER": "tests.test_playbooks:Collecting"})
    assert isinstance(load_notifier(settings.notifier), Collecting)
    with pytest.raises(ConfigError, match="MASTER_AGENT_NOTIFIER"):
        load_notifier("tests.test_playbooks:Missing")
    with pytest.raises(ConfigError, match="deliver"):
        load_notifier("tests.test_playbooks:VALID_PLAYBOOK")
    with pytest.raises(ConfigError, match="MASTER_AGENT_NOTIFIER"):
        Settings.from_env({"MASTER_AGENT_NOTIFIER": "not a reference"})
