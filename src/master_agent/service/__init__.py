"""The HTTP service: FastAPI app, API-key auth, routes, metrics."""

from master_agent.service.app import create_app

__all__ = ["create_app"]
