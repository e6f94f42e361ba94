"""What the service refuses at its edge, before any handler or the database sees it.

- Request heads over ``MASTER_AGENT_MAX_HEADER_BYTES``: 431, the connection closed (uvicorn's
  httptools parser keeps no limit of its own).
- Request bodies over ``MASTER_AGENT_MAX_BODY_BYTES``, declared or chunked: 413.
- JSON bodies that are not UTF-8 (UTF-16 or UTF-32, with or without a byte order mark, or a
  ``charset`` other than UTF-8 declared): 422.
- JSON that is not strict JSON (``NaN``, ``Infinity``), nested deeper than ``MAX_JSON_DEPTH``,
  holding a lone surrogate, which no JSON column can store, an integer beyond 64 bits or a number
  beyond a double (``1e400``): 422 naming the place.
- Metadata documents deeper than ``MAX_METADATA_DEPTH`` or larger than ``MAX_METADATA_BYTES``: 422.
"""

from __future__ import annotations

import email.message
import functools
import json
import math
import re
from collections.abc import Callable, Coroutine, Sequence
from typing import Annotated, Any

from fastapi import HTTPException, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import AfterValidator, BaseModel, ConfigDict
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from master_agent.service.client_gone import stops, until_client_leaves
from master_agent.settings import Settings
from master_agent.storage.documents import MAX_JSON_DEPTH

MAX_METADATA_DEPTH = 16
MAX_METADATA_BYTES = 65_536
#: How long a connection whose head was refused may go on sending before it is closed.
REFUSED_HEAD_GRACE_S = 10.0
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonInputError(ValueError):
    """A JSON document the service does not accept; ``str()`` names where."""


#: Integers a JSON body may hold: a signed 64-bit integer's (Postgres bigint, every SDK's int64).
MIN_JSON_INT = -(2**63)
MAX_JSON_INT = 2**63 - 1
#: Digits of the longest integer within the bound: a longer one is never converted (``int()`` of
#: thousands of digits is slow, and past 4300 Python refuses it with a ValueError).
_MAX_INT_DIGITS = len(str(MAX_JSON_INT))
#: Charsets a body may declare: UTF-8, or ASCII, a subset of it.
_UTF8_CHARSETS = frozenset({"utf-8", "utf8", "us-ascii", "ascii"})


class _OutOfRange(str):
    """A number as the request wrote it, beyond the bounds: kept until its place is known."""

    __slots__ = ()


def _parse_int(digits: str) -> int | _OutOfRange:
    if len(digits.lstrip("-")) > _MAX_INT_DIGITS:
        return _OutOfRange(digits)
    value = int(digits)
    return value if MIN_JSON_INT <= value <= MAX_JSON_INT else _OutOfRange(digits)


def _parse_float(text: str) -> float | _OutOfRange:
    value = float(text)
    return value if math.isfinite(value) else _OutOfRange(text)


def _shown(number: str) -> str:
    return number if len(number) <= 24 else f"{number[:20]}... ({len(number)} characters)"


def check_json_value(value: Any, *, max_depth: int = MAX_JSON_DEPTH, where: str = "body") -> None:
    """Refuse nesting beyond ``max_depth``, lone surrogates, non-finite numbers and integers beyond
    64 bits (iteratively, so a hostile depth cannot exhaust the stack)."""
    pending: list[tuple[Any, str, int]] = [(value, where, 1)]
    while pending:
        item, path, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                raise JsonInputError(f"{path}: nested deeper than {max_depth} levels")
            if isinstance(item, dict):
                for key, child in item.items():
                    if _SURROGATE.search(key):
                        raise JsonInputError(f"{path}: a key holds a lone surrogate (not valid Unicode)")
                    pending.append((child, f"{path}.{key}", depth + 1))
            else:
                pending.extend((child, f"{path}[{index}]", depth + 1) for index, child in enumerate(item))
        elif isinstance(item, _OutOfRange):
            if any(mark in item for mark in ".eE"):
                raise JsonInputError(
                    f"{path}: {_shown(item)} is beyond the range of a double (about 1.8e308)"
                )
            raise JsonInputError(f"{path}: {_shown(item)} is beyond a 64-bit integer (-2**63 to 2**63-1)")
        elif isinstance(item, str):
            if _SURROGATE.search(item):
                raise JsonInputError(f"{path}: a lone surrogate is not valid Unicode")
        elif isinstance(item, float) and not math.isfinite(item):
            raise JsonInputError(f"{path}: NaN and Infinity are not JSON numbers")
        elif isinstance(item, int) and not MIN_JSON_INT <= item <= MAX_JSON_INT:
            raise JsonInputError(
                f"{path}: {_shown(str(item))} is beyond a 64-bit integer (-2**63 to 2**63-1)"
            )


def _refuse_constant(name: str) -> Any:
    raise JsonInputError(f"body: {name} is not a JSON number")


def parse_json_body(body: bytes) -> Any:
    """Strict JSON: UTF-8 text of what the standard allows, within the depth and number bounds."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise JsonInputError(f"body: must be UTF-8 JSON (byte {error.start} is not UTF-8)") from None
    # UTF-16 and UTF-32 of ASCII text decode as UTF-8 with NULs between; a raw NUL is never JSON.
    if "\x00" in text:
        raise JsonInputError("body: must be UTF-8 JSON (it holds NUL bytes, as UTF-16 or UTF-32 does)")
    try:
        value = json.loads(
            text.removeprefix("\ufeff"),  # RFC 8259 lets a parser ignore a UTF-8 byte order mark
            parse_constant=_refuse_constant,
            parse_int=_parse_int,
            parse_float=_parse_float,
        )
    except RecursionError:
        raise JsonInputError(f"body: nested deeper than {MAX_JSON_DEPTH} levels") from None
    check_json_value(value)
    return value


def check_json_charset(content_type: str | None) -> None:
    """Refuse a body declared in another charset than UTF-8 (it would be read as UTF-8 all the same)."""
    if not content_type:
        return
    message = email.message.Message()
    message["content-type"] = content_type
    charset = message.get_content_charset()
    if charset is not None and charset not in _UTF8_CHARSETS:
        raise JsonInputError(f"body: must be UTF-8 JSON (the request declares charset={charset})")


def _check_metadata(value: dict[str, Any]) -> dict[str, Any]:
    check_json_value(value, max_depth=MAX_METADATA_DEPTH, where="metadata")
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        raise ValueError(f"{size} bytes as JSON; at most {MAX_METADATA_BYTES}")
    return value


Metadata = Annotated[dict[str, Any], AfterValidator(_check_metadata)]


class LangGraphBody(BaseModel):
    """A request body of the LangGraph-compatible API. langgraph-api checks bodies against the schemas of
    its OpenAPI document, none of which forbids other fields: a field it does not know is ignored (an SDK
    newer than the server keeps working), so here too. Every field known is still checked."""

    model_config = ConfigDict(extra="ignore")


"""A metadata document (threads, runs, assistants) as a request sends it: bounded in depth and size."""


class _StrictJsonRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                check_json_charset(self.headers.get("content-type"))
                self._json = parse_json_body(await self.body())
            except JsonInputError as error:
                raise HTTPException(422, detail=str(error)) from None
        return self._json


class StrictJsonRoute(APIRoute):
    """Every route of the service parses its JSON body with :func:`parse_json_body`; a read marked
    :func:`~master_agent.service.client_gone.stops_when_client_leaves` stops when its client leaves."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(_StrictJsonRequest(request.scope, request.receive))

        if not stops(self.endpoint):
            return strict

        async def stopping(request: Request) -> Response:
            strict_request = _StrictJsonRequest(request.scope, request.receive)
            return await until_client_leaves(strict_request, functools.partial(handler, strict_request))

        return stopping


class BodySizeLimit:
    """413 for a request body over ``limit`` bytes, declared or streamed, before any handler reads it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await JSONResponse({"detail": self._message()}, status_code=413)(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    # FastAPI re-raises an HTTPException met while reading a body (anything else
                    # becomes a 400), so the handlers below answer it.
                    raise HTTPException(413, detail=self._message())
            return message

        await self.app(scope, counted, send)

    def _message(self) -> str:
        return f"body: request body larger than {self.limit} bytes (MASTER_AGENT_MAX_BODY_BYTES)"


#: Paths answered while the database is down: liveness says the process lives, whatever the database.
ANSWERED_WITHOUT_DATABASE = frozenset({"/ok"})
UNAVAILABLE_RETRY_AFTER_S = 1


def _unavailable(detail: str, status: str, database: str) -> JSONResponse:
    return JSONResponse(
        {"detail": detail, "status": status, "database": database},
        status_code=503,
        headers={"Retry-After": str(UNAVAILABLE_RETRY_AFTER_S)},
    )


def database_unavailable() -> JSONResponse:
    return _unavailable("the database is unreachable; retry shortly", "unavailable", "unreachable")


def service_busy() -> JSONResponse:
    """Every pool connection stayed in use for the pool's whole timeout while the database answers:
    the service is saturated, not the database gone."""
    return _unavailable(
        "the service is busy: every database connection is in use; retry shortly", "busy", "ok"
    )


class DatabaseGate:
    """503 at once while the database is known to be unreachable, instead of every request waiting
    for a pool connection (its whole timeout) and failing then."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in ANSWERED_WITHOUT_DATABASE:
            service = getattr(scope["app"].state, "service", None)
            if service is not None and not service.resources.database.health.up:
                await database_unavailable()(scope, receive, send)
                return
        await self.app(scope, receive, send)


_HEAD_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\nconnection: close\r\n"
)


class HeadLimitedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a bound on the request line and headers: a head still
    incomplete after ``max_head_bytes`` gets a 431 and is neither buffered nor parsed further."""

    def __init__(self, *args: Any, max_head_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_head_bytes = max_head_bytes
        self._head_bytes = 0
        self._in_head = True
        self._refused = False

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        self._in_head = True

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # the rest of a refused head: read and dropped
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > self.max_head_bytes and not self.transport.is_closing():
            self._refuse()

    def _refuse(self) -> None:
        self._refused = True
        detail = (
            f"headers: request head larger than {self.max_head_bytes} bytes (MASTER_AGENT_MAX_HEADER_BYTES)"
        )
        body = json.dumps({"detail": detail}).encode()
        self.transport.write(_HEAD_TOO_LARGE + b"content-length: %d\r\n\r\n" % len(body) + body)
        # Closing with the client's bytes unread would reset the connection and lose the answer: stop
        # sending, drop what still arrives, close when the client does (or after a grace period).
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(REFUSED_HEAD_GRACE_S, self.transport.close)


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """What every uvicorn serving the app is given: the head-limited protocol (a picklable factory,
    for worker processes)."""
    return {"http": functools.partial(HeadLimitedProtocol, max_head_bytes=settings.max_header_bytes)}


def order_by(column: str, sort_order: str | None) -> str:
    """A search's ORDER BY term: ``column`` (a known column, never client text), newest first by default."""
    return f"{column} {'ASC' if (sort_order or 'desc').lower() == 'asc' else 'DESC'}"


def page(
    response: Response, found: Sequence[BaseModel], offset: int, total: int, select: Sequence[str] | None
) -> list[dict[str, Any]]:
    """A search's page as langgraph-api answers it: ``X-Pagination-Total`` (and ``X-Pagination-Next``
    while more are left) on ``response``; each item cut to ``select``'s fields when given."""
    response.headers["X-Pagination-Total"] = str(total)
    if offset + len(found) < total:
        response.headers["X-Pagination-Next"] = str(offset + len(found))
    include: set[str] | None = set(select) if select else None
    return [item.model_dump(mode="json", include=include) for item in found]
