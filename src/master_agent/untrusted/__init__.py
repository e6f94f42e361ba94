"""Tenant text read where a crash, a stall or a memory blow-up costs one call, never the service.

``isolated`` runs parsers in warm worker processes with time and memory limits; ``sql_grammar`` is
the SQL guard's grammar check and ``pdf`` the PDF text reader that run there (this package's
``__init__`` imports neither, so a worker starts light); ``sql_text`` is the pydantic type of SQL text. One pool per kind of
work and per process, made on first use.
"""

from __future__ import annotations

import os
import threading

from master_agent.untrusted.isolated import IsolatedFailure, IsolatedPool, IsolatedRefusal

__all__ = [
    "IsolatedFailure",
    "IsolatedPool",
    "IsolatedRefusal",
    "close_pools",
    "pdf_pool",
    "sql_pool",
]

#: Workers per process for SQL checks (each check takes milliseconds) and their memory.
SQL_WORKERS = 2
SQL_WORKER_MEMORY_BYTES = 1024 * 1024 * 1024
#: Workers per process reading PDFs: at most this many uploads are read at once, the rest wait.
PDF_WORKERS = 2
PDF_WORKER_MEMORY_BYTES = 1024 * 1024 * 1024

_lock = threading.Lock()
_pools: dict[str, IsolatedPool] = {}
_owner = os.getpid()


def _pool(name: str, size: int, memory_bytes: int) -> IsolatedPool:
    global _owner
    with _lock:
        if _owner != os.getpid():  # a forked child must not share its parent's workers
            _pools.clear()
            _owner = os.getpid()
        pool = _pools.get(name)
        if pool is None:
            pool = _pools[name] = IsolatedPool(name, size=size, memory_bytes=memory_bytes)
        return pool


def sql_pool() -> IsolatedPool:
    """This process's workers for the SQL guard."""
    return _pool("SQL", SQL_WORKERS, SQL_WORKER_MEMORY_BYTES)


def pdf_pool() -> IsolatedPool:
    """This process's workers for PDF text."""
    return _pool("PDF", PDF_WORKERS, PDF_WORKER_MEMORY_BYTES)


def close_pools() -> None:
    """Stop every idle worker of this process (at shutdown)."""
    with _lock:
        pools = list(_pools.values())
    for pool in pools:
        pool.close()
