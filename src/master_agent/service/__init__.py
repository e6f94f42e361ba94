"""The HTTP service: FastAPI app (``service.app.create_app``), API-key auth, routes, metrics."""
