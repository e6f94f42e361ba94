"""Workers forked from a preloaded parent, so they share what every one of them would load alike.

uvicorn starts each worker with ``spawn``: a fresh interpreter that imports the app and reads WordNet and
the other tables of the warm-up again, so two workers held two private copies (about 200 MiB each; issue
46). With ``serve --workers N`` the parent now imports the app's modules and reads those read-only tables
once, moves them out of the garbage collector's sight (``gc.freeze``, else its first full collection in a
worker would write to every page of them) and forks the workers: the pages stay shared until a worker
writes to them. What a worker opens itself (the database pool, the Duckling runtime, the routing warm-up
and its caches) is still opened after the fork, in the worker, as before: nothing with a thread, a socket
or an event loop is created before it.
"""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from master_agent.service.memory import return_free_memory


def preload_shared(also: Sequence[Callable[[], object]] = ()) -> None:
    """Import the app's modules and read, in this (the parent) process, the read-only tables every
    worker's warm-up reads alike: WordNet's index and word classes, the trained intent head, the month
    names of other languages and every country's holidays of this year and the last (the year a date
    in a message falls in), and what the loaders in ``also`` read (the packs' own: the CLI names them);
    then freeze them."""
    import master_agent.service.app  # noqa: F401  (its modules: the import is the loading)
    from master_agent.capabilities import terms
    from master_agent.capabilities.tools import lexicon
    from master_agent.routing.intent_head import load_head

    lexicon.warm()
    lexicon.noun_first("store")
    load_head()
    for load in also:
        load()
    terms.load_month_names()
    year = datetime.now(UTC).year
    for held in (year, year - 1):
        terms.load_world_holidays(held)
    gc.collect()
    return_free_memory()
    gc.freeze()


def fork_workers() -> None:
    """Make uvicorn start its workers with ``fork`` rather than ``spawn`` (``uvicorn._subprocess`` takes
    the context from this module global when it creates each worker, restarts included)."""
    import uvicorn._subprocess

    uvicorn._subprocess.spawn = multiprocessing.get_context("fork")  # type: ignore[assignment]
