"""An embedded PostgreSQL 16 + pgvector through the ``pgserver`` package.

``pgserver.get_server`` starts a server in the data directory, or attaches to the one already running there
(it keeps a per-directory process handle), so several processes sharing a data dir share one server.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from pathlib import Path

from master_agent.errors import StorageError

logger = logging.getLogger(__name__)

# platformdirs (used by pgserver) warns whenever XDG_RUNTIME_DIR is unset (containers, CI): harmless.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")


def _start(pgdata: Path) -> str:
    from pgserver import get_server  # type: ignore[attr-defined]

    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        server = get_server(pgdata, cleanup_mode=None)
    except Exception as error:  # pgserver raises bare exceptions carrying the postgres log
        raise StorageError(f"could not start embedded PostgreSQL in {pgdata}: {error}") from error
    uri: str = server.get_uri()
    logger.info("embedded PostgreSQL at %s", uri)
    return uri


async def embedded_server_uri(data_dir: Path) -> str:
    """Start (or reuse) the embedded server under ``data_dir/pg`` and return its URI."""
    return await asyncio.to_thread(_start, (data_dir / "pg").resolve())
