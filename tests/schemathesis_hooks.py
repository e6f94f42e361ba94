"""Schemathesis hooks for test_schemathesis (loaded by ``st`` through ``SCHEMATHESIS_HOOKS``, in its own
virtualenv).

A generated ``after_seconds`` can be hours: the run then waits that long by design, and a ``/runs/wait``
or ``join`` on it (or on a run queued behind it) keeps its connection alive with keep-alive bytes until
then, so the fuzzing never ends. Delays are capped at a second; every other field stays as generated.
"""

from typing import Any

import schemathesis

MAX_AFTER_SECONDS = 1


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    # /runs/batch takes a list of run requests.
    for request in case.body if isinstance(case.body, list) else [case.body]:
        if isinstance(request, dict):
            delay = request.get("after_seconds")
            if isinstance(delay, int | float) and not isinstance(delay, bool) and delay > MAX_AFTER_SECONDS:
                request["after_seconds"] = MAX_AFTER_SECONDS
