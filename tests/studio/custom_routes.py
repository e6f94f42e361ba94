"""A custom app as a LangGraph deployment's langgraph.json names it (``http.app``): its own routes and
its own lifespan, served beside the API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    app.state.greeting = "hello from the custom app"
    yield


app = FastAPI(lifespan=_lifespan)


@app.get("/custom/hello")
async def hello() -> dict[str, str]:
    return {"greeting": app.state.greeting}
