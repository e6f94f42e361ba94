"""Prometheus metrics of one service process."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest

#: Run latency buckets in seconds: offline solves take under a second, model-driven ones minutes.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


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
        self.active_streams = Gauge("master_agent_active_streams", "Open SSE streams", registry=self.registry)
        self.active_runs = Gauge(
            "master_agent_active_runs", "Runs executing in this process", registry=self.registry
        )
        self.pool = Gauge(
            "master_agent_pool_connections", "Connection pool", ["state"], registry=self.registry
        )

    def observe_run(self, status: str, seconds: float) -> None:
        self.run_latency.labels(status=status).observe(seconds)

    def render(self, run_counts: dict[str, int], pool_stats: dict[str, Any], active_runs: int) -> bytes:
        for status in ("pending", "running", "success", "error", "interrupted"):
            self.runs.labels(status=status).set(run_counts.get(status, 0))
        self.pool.labels(state="size").set(pool_stats.get("pool_size", 0))
        self.pool.labels(state="available").set(pool_stats.get("pool_available", 0))
        self.pool.labels(state="waiting").set(pool_stats.get("requests_waiting", 0))
        self.active_runs.set(active_runs)
        return generate_latest(self.registry)
