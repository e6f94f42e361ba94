"""Who is signed in to the console: a server-side session (``service.console_sessions``) whose opaque id
is kept in an HttpOnly, SameSite=Strict cookie and looked up on every request (signed out, expired or
its key revoked: refused), and the anti-forgery token every form and state-changing call of the console
must send back."""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from starlette.datastructures import FormData

from master_agent.service.console_sessions import csrf_token_for_session, session_tenant
from master_agent.service.deps import AUTH_DISABLED_TENANT, CONSOLE_COOKIE, ServiceDep, auth_disabled_here

#: The path the console's cookies are sent to (never to the JSON API at the root).
CONSOLE_PATH = "/console"
#: Sign-in form token (double submit): a page of another site cannot sign a browser in as its tenant.
SIGN_IN_COOKIE = "ma_console_sign_in"
#: The anti-forgery token's session when authentication is disabled (loopback development): per process.
_NO_AUTH_SESSION = "no-auth:" + secrets.token_urlsafe(16)


class SignInRequired(Exception):
    """The page needs a signed-in key; answered with a redirect to the sign-in page."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.next_path = next_path


@dataclass(frozen=True)
class ConsoleSession:
    tenant_id: str
    csrf_token: str
    signed_in: bool
    """False when authentication is disabled and the loopback tenant is used without a key."""


async def console_session(request: Request, service: ServiceDep) -> ConsoleSession:
    session_id = request.cookies.get(CONSOLE_COOKIE, "")
    if session_id:
        idle_s = service.resources.settings.console_idle_s
        tenant = await session_tenant(service.resources.database.pool, session_id, idle_s)
        if tenant is not None:
            return ConsoleSession(tenant, csrf_token_for_session(session_id), signed_in=True)
    if auth_disabled_here(request, service):
        return ConsoleSession(AUTH_DISABLED_TENANT, csrf_token_for_session(_NO_AUTH_SESSION), signed_in=False)
    path = request.url.path
    raise SignInRequired(path + (f"?{request.url.query}" if request.url.query else ""))


SessionDep = Annotated[ConsoleSession, Depends(console_session)]


async def checked_form(request: Request, session: ConsoleSession) -> FormData:
    """The posted form, once its ``csrf_token`` is this session's."""
    form = await request.form()
    sent = str(form.get("csrf_token") or "")
    if not hmac.compare_digest(sent.encode(), session.csrf_token.encode()):
        raise HTTPException(403, detail="csrf_token: missing or not this session's token; reload the page")
    return form


def safe_next(path: str | None) -> str:
    """Where to go after signing in: a console path only (never another site)."""
    if path and path.startswith(CONSOLE_PATH + "/") and not path.startswith("//") and "\\" not in path:
        return path
    return CONSOLE_PATH + "/chat"
