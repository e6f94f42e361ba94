"""The assistant pack's embedded servers, as the embedded PostgreSQL is the database's: with no provider
configured for a tenant, its email, calendar and contacts live on real local servers under the data
directory, started on first use and shared by every process using that directory:

- Radicale for CalDAV (``/<user>/calendar/``) and CardDAV (``/<user>/contacts/``),
- pymap (maildir backend) for IMAP,
- aiosmtpd (``smtp_sink``) for SMTP, keeping what it accepts as files with its envelope.

The servers are separate processes on loopback, found again through ``servers.json``; a server that no
longer answers is started again (on a new port) by the next process that needs it. Accounts and their
generated passwords are in ``accounts.json`` (mode 0600); the demo data is written once, through the
protocols themselves (``demo_data``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, SecretStr

from master_agent.domains.assistant.providers import Endpoint

ServerName = Literal["dav", "imap", "smtp"]
SERVERS: tuple[ServerName, ...] = ("dav", "imap", "smtp")
USER = "me"
START_TIMEOUT_S = 20.0


class RunningServer(BaseModel):
    pid: int
    port: int


class ServerTable(BaseModel):
    servers: dict[ServerName, RunningServer] = {}


class Accounts(BaseModel):
    user: str
    address: str
    password: SecretStr


class LocalEndpoints(BaseModel):
    """The four endpoints of the local servers, for one user."""

    address: str
    caldav: Endpoint
    carddav: Endpoint
    imap: Endpoint
    smtp: Endpoint
    sent_dir: Path
    """Where the SMTP server keeps what it accepted."""


class LocalServerError(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LocalServers:
    """The servers of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.root = (data_dir / "assistant").resolve()
        self.table_path = self.root / "servers.json"
        self.accounts_path = self.root / "accounts.json"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / "servers.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _table(self) -> ServerTable:
        if not self.table_path.exists():
            return ServerTable()
        return ServerTable.model_validate_json(self.table_path.read_text())

    def accounts(self) -> Accounts:
        if self.accounts_path.exists():
            return Accounts.model_validate_json(self.accounts_path.read_text())
        accounts = Accounts(
            user=USER, address=f"{USER}@assistant.localhost", password=SecretStr(secrets.token_urlsafe(18))
        )
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.accounts_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(json.dumps({**accounts.model_dump(), "password": accounts.password.get_secret_value()}))
        return accounts

    def ensure_running(self) -> tuple[LocalEndpoints, bool]:
        """Start whichever server does not answer; the endpoints, and whether the servers are new (then
        they hold no data yet and the caller seeds them)."""
        with self._locked():
            accounts = self.accounts()
            table = self._table()
            fresh = not self.seeded()
            for name in SERVERS:
                running = table.servers.get(name)
                if running is not None and _alive(running.pid) and _answers(running.port):
                    continue
                table.servers[name] = self._start(name, accounts)
            self.table_path.write_text(table.model_dump_json())
            return self._endpoints(table, accounts), fresh

    def seeded(self) -> bool:
        return (self.root / "seeded").exists()

    def mark_seeded(self) -> None:
        (self.root / "seeded").write_text(str(time.time()))

    def endpoints(self) -> LocalEndpoints:
        """The endpoints as last started (whether or not the servers still answer)."""
        table = self._table()
        if set(table.servers) != set(SERVERS):
            raise LocalServerError(f"the local servers of {self.root} were never started")
        return self._endpoints(table, self.accounts())

    def _endpoints(self, table: ServerTable, accounts: Accounts) -> LocalEndpoints:
        def endpoint(url: str) -> Endpoint:
            return Endpoint(url=url, username=accounts.user, password=accounts.password)

        dav = table.servers["dav"].port
        return LocalEndpoints(
            address=accounts.address,
            caldav=endpoint(f"http://127.0.0.1:{dav}/{accounts.user}/calendar/"),
            carddav=endpoint(f"http://127.0.0.1:{dav}/{accounts.user}/contacts/"),
            imap=endpoint(f"imap://127.0.0.1:{table.servers['imap'].port}"),
            smtp=endpoint(f"smtp://127.0.0.1:{table.servers['smtp'].port}"),
            sent_dir=self.root / "smtp" / "accepted",
        )

    def stop(self, names: tuple[ServerName, ...] = SERVERS) -> None:
        """Stop the named servers (all by default) and wait for them to go."""
        with self._locked():
            table = self._table()
            for name in names:
                running = table.servers.get(name)
                if running is None or not _alive(running.pid):
                    continue
                with contextlib.suppress(ProcessLookupError):
                    os.kill(running.pid, signal.SIGTERM)
                deadline = time.monotonic() + 10
                while _alive(running.pid) and time.monotonic() < deadline:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(running.pid, os.WNOHANG)
                    time.sleep(0.05)
                if _alive(running.pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(running.pid, signal.SIGKILL)

    def _start(self, name: ServerName, accounts: Accounts) -> RunningServer:
        port = _free_port()
        directory = self.root / name
        directory.mkdir(parents=True, exist_ok=True)
        password = accounts.password.get_secret_value()
        env = dict(os.environ)
        if name == "dav":
            users = directory / "users"
            users.write_text(f"{accounts.user}:{password}\n")
            users.chmod(0o600)
            command = [
                sys.executable, "-m", "radicale",
                "--server-hosts", f"127.0.0.1:{port}",
                "--storage-filesystem-folder", str(directory / "collections"),
                "--auth-type", "htpasswd",
                "--auth-htpasswd-filename", str(users),
                "--auth-htpasswd-encryption", "plain",
                "--rights-type", "owner_only",
                "--web-type", "none",
                "--logging-level", "warning",
            ]  # fmt: skip
        elif name == "imap":
            self._imap_accounts(directory, accounts)
            command = [
                sys.executable, "-c", "import sys; from pymap.main import main; sys.exit(main())",
                "--host", "127.0.0.1", "--port", str(port), "--no-tls",
                "maildir", str(directory),
            ]  # fmt: skip
        else:
            env["MASTER_AGENT_SMTP_SINK_PASSWORD"] = password
            command = [
                sys.executable, "-m", "master_agent.domains.assistant.smtp_sink",
                "--port", str(port), "--dir", str(directory / "accepted"), "--user", accounts.user,
            ]  # fmt: skip
        log = (directory / "server.log").open("ab")
        # A session of its own: the server outlives the process that started it, as the embedded
        # PostgreSQL does, and other processes of the same data directory use it.
        process = subprocess.Popen(
            command, env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(port):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                tail = (directory / "server.log").read_text(errors="replace")[-2000:]
                raise LocalServerError(f"the local {name} server did not start on port {port}:\n{tail}")
            time.sleep(0.05)
        return RunningServer(pid=process.pid, port=port)

    @staticmethod
    def _imap_accounts(directory: Path, accounts: Accounts) -> None:
        """pymap's maildir backend reads its users from passwd/shadow-like files beside the mail."""
        from passlib.hash import pbkdf2_sha256

        (directory / accounts.user / "cur").mkdir(parents=True, exist_ok=True)
        for sub in ("new", "tmp"):
            (directory / accounts.user / sub).mkdir(exist_ok=True)
        (directory / "pymap-etc-passwd").write_text(f"{accounts.user}:::::{accounts.user}:\n")
        shadow = directory / "pymap-etc-shadow"
        shadow.write_text(
            f"{accounts.user}:{pbkdf2_sha256.hash(accounts.password.get_secret_value())}:::::::\n"
        )
        shadow.chmod(0o600)
