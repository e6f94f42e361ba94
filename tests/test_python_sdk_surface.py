"""Every public method of the Python ``langgraph-sdk`` client (assistants aside: the agent builder's)
is driven against the real service by some test of this suite. When an SDK upgrade brings a method,
this fails until a test drives it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from langgraph_sdk._async.cron import CronClient
from langgraph_sdk._async.runs import RunsClient
from langgraph_sdk._async.store import StoreClient
from langgraph_sdk._async.threads import ThreadsClient

SUB_CLIENTS = {"threads": ThreadsClient, "runs": RunsClient, "store": StoreClient, "crons": CronClient}
TESTS = Path(__file__).resolve().parent


def _public_methods(cls: type) -> list[str]:
    return sorted(name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_"))


def test_every_sdk_method_is_driven_by_a_test() -> None:
    sources = "\n".join(
        path.read_text() for path in TESTS.glob("test_*.py") if path.name != Path(__file__).name
    )
    undriven = []
    for attribute, cls in SUB_CLIENTS.items():
        methods = _public_methods(cls)
        assert methods, cls
        for method in methods:
            # ``client.threads.copy(`` or a sub-client held in a variable (``store = client.store``).
            if not re.search(rf"\b{attribute}\.{method}\(", sources):
                undriven.append(f"{attribute}.{method}")
    assert undriven == []
