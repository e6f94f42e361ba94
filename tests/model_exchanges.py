"""Recorded chat-completion exchanges (tests/recordings/model_faults.json), replayed two ways: under the
real openai client through an ``httpx2.MockTransport``, or by a real HTTP server on loopback for the
CLI and the service (which make their own clients)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
from langchain_core.language_models import BaseChatModel

from master_agent.models import make_chat_model
from master_agent.settings import Settings

RECORDED: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "recordings" / "model_faults.json").read_text()
)["responses"]


def load_recordings(name: str) -> dict[str, dict[str, Any]]:
    """The responses of ``tests/recordings/<name>.json``."""
    responses: dict[str, dict[str, Any]] = json.loads(
        (Path(__file__).parent / "recordings" / f"{name}.json").read_text()
    )["responses"]
    return responses


#: A step of a script: a recorded response's name, or an exception the transport raises.
Step = str | Exception


class Script:
    """Answers the n-th chat-completion request with the n-th step (the last one repeats)."""

    def __init__(
        self,
        steps: Sequence[Step],
        refuse: Callable[[dict[str, Any]], Step | None] | None = None,
        recorded: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.recorded = RECORDED if recorded is None else recorded
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        self.refuse = refuse
        """Checks each request as a stricter server would: the name of the recorded refusal (or the
        exception of a server that dies on it), or None."""

    def next_response(self, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]] | Exception:
        self.requests.append(body)
        refusal = self.refuse(body) if self.refuse else None
        step = refusal or self.steps[min(len(self.requests), len(self.steps)) - 1]
        if isinstance(step, Exception):
            return step
        recorded = self.recorded[step]
        return recorded["status"], recorded["headers"], recorded["body"]

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        answer = self.next_response(json.loads(request.content))
        if isinstance(answer, Exception):
            raise answer
        status, headers, body = answer
        return httpx2.Response(status, json=body, headers=headers)

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))

    def chat_model(self, settings: Settings) -> BaseChatModel:
        """The service's OpenAI model (the real client, no retries) answered by this script."""
        return make_chat_model(
            settings.with_overrides(
                model="openai:gpt-4o-mini",
                openai_api_key="sk-test",
                openai_base_url="https://api.example.test/v1",
                openai_max_retries=0,
            ),
            http_async_client=self.client(),
        )


def refuses_non_string_content(body: dict[str, Any]) -> str | None:
    """llama-cpp-python's server: every message's content must be a string."""
    if any(not isinstance(message.get("content"), str) for message in body["messages"]):
        return "llama_cpp_null_content"
    return None


class LoopbackModelServer:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 answering from a Script."""

    def __init__(self, script: Script) -> None:
        self.script = script
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                answer = owner.script.next_response(body)
                if isinstance(answer, Exception):
                    self.close_connection = True
                    return
                status, headers, payload = answer
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in {**headers, "content-type": "application/json"}.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> LoopbackModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
