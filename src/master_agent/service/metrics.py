"""Prometheus metrics of one service process."""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Receive, Scope, Send

from master_agent.runtime.run_stages import ClaimTrigger, RunStage, request_received
from master_agent.workflows.metrics import WorkflowSummary

#: Run latency buckets in seconds: offline solves take under a second, model-driven ones minutes.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
#: Buckets of a run's stages and of pool waits: a claim or a pool checkout takes well under a
#: millisecond when nothing waits, a starved run seconds.
STAGE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class ServiceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.runs = Gauge(
            "master_agent_runs", "Runs in the database by status", ["status"], registry=self.registry
        )
        self.run_latency = Histogram(
            "master_agent_run_latency_seconds",
            "Wall time of runs executed by this process",
            ["status"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.run_stages = Histogram(
            "master_agent_run_stage_seconds",
            "Time of each stage of runs handled by this process (runtime/run_stages.py defines them)",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=self.registry,
        )
        self.pool_wait = Histogram(
            "master_agent_pool_wait_seconds",
            "Time to get a connection from the shared pool",
            buckets=STAGE_BUCKETS,
            registry=self.registry,
        )
        self.claims = Counter(
            "master_agent_run_claims",
            "Runs claimed from the queue, by what woke the claim (a notification, or the fallback poll)",
            ["trigger"],
            registry=self.registry,
        )
        self.active_streams = Gauge("master_agent_active_streams", "Open SSE streams", registry=self.registry)
        self.active_runs = Gauge(
            "master_agent_active_runs", "Runs executing in this process", registry=self.registry
        )
        self.pool = Gauge(
            "master_agent_pool_connections", "Connection pool", ["state"], registry=self.registry
        )
        workflow = ["tenant", "workflow"]
        self.conversations = Gauge(
            "master_agent_workflow_conversations",
            "Stage-driven conversations started",
            workflow,
            registry=self.registry,
        )
        self.completed = Gauge(
            "master_agent_workflow_conversations_completed",
            "Stage-driven conversations that reached a final stage",
            workflow,
            registry=self.registry,
        )
        self.completion = Gauge(
            "master_agent_workflow_completion_ratio", "Completed / started", workflow, registry=self.registry
        )
        self.turns = Gauge(
            "master_agent_workflow_turns", "Customer messages", workflow, registry=self.registry
        )
        self.stage_seconds = Gauge(
            "master_agent_workflow_stage_seconds",
            "Time spent in a stage, over its ended visits",
            [*workflow, "stage"],
            registry=self.registry,
        )
        self.stage_visits = Gauge(
            "master_agent_workflow_stage_visits",
            "Ended visits of a stage",
            [*workflow, "stage"],
            registry=self.registry,
        )
        self.worker_tasks = Gauge(
            "master_agent_workflow_worker_tasks",
            "Tasks assigned to a worker, by their response status",
            [*workflow, "worker", "status"],
            registry=self.registry,
        )

    def observe_run(self, status: str, seconds: float) -> None:
        self.run_latency.labels(status=status).observe(seconds)

    def observe_stage(self, stage: RunStage, seconds: float) -> None:
        self.run_stages.labels(stage=stage).observe(seconds)

    def observe_pool_wait(self, seconds: float) -> None:
        self.pool_wait.observe(seconds)

    def count_claim(self, trigger: ClaimTrigger) -> None:
        self.claims.labels(trigger=trigger).inc()

    def render(
        self,
        run_counts: dict[str, int],
        pool_stats: dict[str, Any],
        active_runs: int,
        workflows: list[WorkflowSummary],
    ) -> bytes:
        for status in ("pending", "running", "success", "error", "interrupted"):
            self.runs.labels(status=status).set(run_counts.get(status, 0))
        self.pool.labels(state="size").set(pool_stats.get("pool_size", 0))
        self.pool.labels(state="available").set(pool_stats.get("pool_available", 0))
        self.pool.labels(state="waiting").set(pool_stats.get("requests_waiting", 0))
        self.active_runs.set(active_runs)
        for summary in workflows:
            key = {"tenant": summary.tenant_id, "workflow": summary.workflow}
            self.conversations.labels(**key).set(summary.conversations)
            self.completed.labels(**key).set(summary.completed)
            self.completion.labels(**key).set(summary.completion_rate)
            self.turns.labels(**key).set(summary.turns)
            for stage in summary.stages:
                self.stage_seconds.labels(**key, stage=stage.stage).set(stage.total_seconds)
                self.stage_visits.labels(**key, stage=stage.stage).set(stage.visits)
            for worker in summary.workers:
                for status, count in (
                    ("COMPLETED", worker.completed),
                    ("NEEDS_INPUT", worker.needs_input),
                    ("FAILED", worker.failed),
                ):
                    self.worker_tasks.labels(**key, worker=worker.worker, status=status).set(count)
        return generate_latest(self.registry)


class RequestClock:
    """Notes when each HTTP request arrived, so a run's ``accept`` stage counts from there."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = request_received.set(time.perf_counter())
        try:
            await self.app(scope, receive, send)
        finally:
            request_received.reset(token)
