"""Every model client's timeout comes from one setting (``OPENAI_TIMEOUT_S``): the chat client's
requests, the silence allowed between streamed chunks (langchain-openai's own 120 s otherwise), and
the embeddings client. A recorded stream that stalls after its first chunk, served by a real server
on loopback, ends in a clear error under the configured timeout."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from master_agent.models import make_chat_model
from master_agent.models.chat import describe_model_failure
from master_agent.models.embeddings import OpenAIEmbedder
from master_agent.settings import Settings
from tests.model_exchanges import load_recordings

STALLED = load_recordings("stalled_stream")["stalled_stream"]
TIMEOUT_S = 0.5


class StallingServer:
    """An OpenAI-compatible server on 127.0.0.1 that sends the recorded stream's first event, then
    nothing until the test ends."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                owner.requests.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
                self.send_response(STALLED["status"])
                for name, value in STALLED["headers"].items():
                    self.send_header(name, value)
                self.end_headers()
                for event in STALLED["events"]:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                owner.release.wait(timeout=60)  # stalls: never the final chunk, never [DONE]

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> StallingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def local_settings(settings: Settings, url: str) -> Settings:
    return settings.with_overrides(
        model="openai:gemma-3-270m", openai_base_url=url, openai_timeout_s=TIMEOUT_S, openai_max_retries=0
    )


def test_every_model_client_takes_its_timeout_from_the_one_setting(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # langchain-openai's own knob for streams: the setting must win over it.
    monkeypatch.setenv("LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S", "120")
    chosen = local_settings(settings, "http://127.0.0.1:9/v1")
    model: Any = make_chat_model(chosen)
    assert model.request_timeout == TIMEOUT_S
    assert model.stream_chunk_timeout == TIMEOUT_S
    assert model.root_async_client.timeout == TIMEOUT_S  # the openai client's per-request timeout
    assert model.root_client.timeout == TIMEOUT_S
    embedder = OpenAIEmbedder("text-embedding-3-small", chosen)
    assert embedder._client.request_timeout == TIMEOUT_S
    # Unset, both follow the documented default for the endpoint.
    default: Any = make_chat_model(chosen.with_overrides(openai_timeout_s=None))
    assert default.request_timeout == default.stream_chunk_timeout == 300.0


async def test_a_stalled_stream_fails_with_a_clear_error_under_the_setting(settings: Settings) -> None:
    with StallingServer() as server:
        model = make_chat_model(local_settings(settings, server.url))
        pieces: list[str] = []

        async def read_stream() -> None:
            async for chunk in model.astream([HumanMessage(content="What is the attach rate of Store 5?")]):
                pieces.append(str(chunk.content))

        task = asyncio.ensure_future(read_stream())
        # The guard only keeps a regression from hanging the suite for langchain-openai's 120 s.
        done, _ = await asyncio.wait({task}, timeout=30)
        if not done:
            task.cancel()
            pytest.fail(f"a stream silent for 30 s was still read with OPENAI_TIMEOUT_S={TIMEOUT_S}")
        error = task.exception()
    assert error is not None, "the stream ended without an error"
    # langchain-openai's stream guard fired with the configured limit, not its own 120 s.
    assert isinstance(error, TimeoutError) and f"{TIMEOUT_S}s" in str(error)
    assert server.requests[0]["stream"] is True
    assert pieces == ["", "The attach rate of Store 5"] or pieces == ["The attach rate of Store 5"]
    message = describe_model_failure(error)
    assert "did not answer in time" in message and "OPENAI_TIMEOUT_S" in message
