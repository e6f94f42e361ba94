"""Reads stop when their client has gone.

Starlette and FastAPI never cancel a handler whose client disconnected: a plain (non-streaming) response
is computed to the end and its sending then silently dropped. A read that holds a pool connection (a
thread's history, its state) would keep it for nothing, and clients that time out and retry under load
then starve the pool for everyone. A handler marked :func:`stops_when_client_leaves` runs until its
response is ready or its client is gone, whichever comes first; gone, it is cancelled: psycopg cancels
the statement on the server, and ``pool.connection()`` gives the connection back as the cancellation
unwinds.

Only the handler is covered, never the sending of its response: a streamed response (SSE, a joined
run) begins once the handler has returned and handles its client's leaving itself, as before. Writes
are never marked: one cancelled half-way could leave half of what it meant to do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import Request, Response
from starlette.requests import ClientDisconnect
from starlette.types import Receive

#: The attribute :func:`stops_when_client_leaves` sets on an endpoint.
MARK = "_stops_when_client_leaves"
#: What a handler stopped for its client's leaving answers (nginx's "client closed request"); the
#: server drops it, there being no one to send it to, but a middleware or a log may read it.
CLIENT_CLOSED_REQUEST = 499

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


def stops_when_client_leaves(endpoint: Endpoint) -> Endpoint:
    """Mark a read-only endpoint: cancelled when its client disconnects before its response is ready."""
    setattr(endpoint, MARK, True)
    return endpoint


def stops(endpoint: Callable[..., Any]) -> bool:
    return bool(getattr(endpoint, MARK, False))


async def _client_gone(receive: Receive) -> None:
    # Called once the body is read: what comes next is the client's leaving (or the response's end).
    while (await receive())["type"] != "http.disconnect":
        pass


async def until_client_leaves(request: Request, handle: Callable[[], Awaitable[Response]]) -> Response:
    """``handle()``'s response, or, if the client leaves first, ``handle()`` cancelled and awaited (so
    whatever it held is released) and a 499 answered to no one."""
    # Read now, so that watching ``receive`` for the disconnect takes nothing the handler needs; a
    # marked read's body is small (and bounded by BodySizeLimit), and the handler finds it cached.
    try:
        await request.body()
    except ClientDisconnect:
        return Response(status_code=CLIENT_CLOSED_REQUEST)  # gone before its body had arrived
    work = asyncio.ensure_future(handle())
    watch = asyncio.ensure_future(_client_gone(request.receive))
    try:
        await asyncio.wait((work, watch), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not work.done():
            work.cancel()
        # The cancelled work unwinds (its statement cancelled, its connection returned) before this
        # returns; cancelling this task meanwhile still propagates.
        await asyncio.wait((work, watch))
    if work.cancelled():
        return Response(status_code=CLIENT_CLOSED_REQUEST)
    return work.result()
