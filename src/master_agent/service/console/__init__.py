"""The web console (``/console``): goals, live runs, playbooks, outcomes and what was learned, in a
browser. Server-rendered pages over the same tenant-scoped data as the API; the JSON API the pages'
scripts use is mounted again under ``/console/api`` and authenticated by the console's cookie."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from master_agent.service.console.pages import HERE
from master_agent.service.console.pages import router as pages_router
from master_agent.service.console.session import CONSOLE_PATH, SignInRequired
from master_agent.service.console.systems import router as systems_router
from master_agent.service.deps import CONSOLE_API_PREFIX


def mount_console(app: FastAPI, api_routers: Sequence[APIRouter]) -> None:
    app.include_router(pages_router)
    app.include_router(systems_router)
    for router in api_routers:
        app.include_router(router, prefix=CONSOLE_API_PREFIX, include_in_schema=False)
    app.mount(f"{CONSOLE_PATH}/static", StaticFiles(directory=HERE / "static"), name="console-static")

    @app.exception_handler(SignInRequired)
    async def sign_in_first(_request: Request, error: SignInRequired) -> RedirectResponse:
        return RedirectResponse(f"{CONSOLE_PATH}/sign-in?next={quote(error.next_path)}", status_code=303)
