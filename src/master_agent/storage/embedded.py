"""An embedded PostgreSQL 16 + pgvector through the ``pgserver`` package.

``pgserver.get_server`` starts a server in the data directory, or attaches to the one already running there
(it keeps a per-directory process handle), so several processes sharing a data dir share one server.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import warnings
from pathlib import Path
from typing import Any

from master_agent.errors import StorageError

logger = logging.getLogger(__name__)

# platformdirs (used by pgserver) warns whenever XDG_RUNTIME_DIR is unset (containers, CI): harmless.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")


#: Who may connect to the embedded server, and how. The app's own superuser keeps pgserver's trust over
#: the socket (a directory only this machine reaches); every other role (the tenant reader roles) must
#: give its password, over the socket and over TCP alike, checked with SCRAM.
PG_HBA = """# Written by master-agent (storage/embedded.py).
local   all   postgres                  trust
local   all   all                       scram-sha-256
host    all   all        127.0.0.1/32   scram-sha-256
host    all   all        ::1/128        scram-sha-256
"""


def require_passwords(server: Any) -> None:
    """Make the embedded server ask every role but the app's for a password (see ``PG_HBA``)."""
    hba = Path(server.pgdata) / "pg_hba.conf"
    if hba.read_text() != PG_HBA:
        hba.write_text(PG_HBA)
        server.psql("SELECT pg_reload_conf();")


def _start(pgdata: Path) -> str:
    from pgserver import get_server  # type: ignore[attr-defined]

    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        server = get_server(pgdata, cleanup_mode=None)
    except Exception as error:  # pgserver raises bare exceptions carrying the postgres log
        raise StorageError(f"could not start embedded PostgreSQL in {pgdata}: {error}") from error
    require_passwords(server)
    uri: str = server.get_uri()
    logger.info("embedded PostgreSQL at %s", uri)
    return uri


async def embedded_server_uri(data_dir: Path) -> str:
    """Start (or reuse) the embedded server under ``data_dir/pg`` and return its URI."""
    return await asyncio.to_thread(_start, (data_dir / "pg").resolve())


def stop_embedded_server(data_dir: Path, *, within_s: float = 30.0) -> bool:
    """Stop the embedded server under ``data_dir/pg``, whoever started it (a fast shutdown: sessions
    are ended, what was committed is kept). pgserver stops a server only when the last process holding
    a handle lets go, and the service's processes keep theirs open on purpose (``cleanup_mode=None``),
    so a caller that started the service for a while (a benchmark, an evaluation) stops it here.
    False when no server was running there."""
    import psutil  # type: ignore[import-untyped]

    pid_file = (data_dir / "pg" / "postmaster.pid").resolve()
    try:
        pid = int(pid_file.read_text().split()[0])
        postmaster = psutil.Process(pid)
    except (FileNotFoundError, IndexError, ValueError, psutil.NoSuchProcess):
        return False
    postmaster.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
    try:
        postmaster.wait(within_s)
    except psutil.TimeoutExpired:
        postmaster.kill()
    return True
