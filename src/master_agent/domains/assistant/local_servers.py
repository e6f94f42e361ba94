"""The assistant pack's embedded servers, as the embedded PostgreSQL is the database's: with no provider
configured for a tenant, its email, calendar and contacts live on real local servers under the data
directory, started on first use and shared by every process using that directory:

- Radicale for CalDAV (``/<user>/calendar/``) and CardDAV (``/<user>/contacts/``),
- pymap (maildir backend) for IMAP,
- aiosmtpd (``smtp_sink``) for SMTP, keeping what it accepts as files with its envelope.

The servers are separate processes on loopback, found again through ``servers.json``; a server that no
longer answers is started again (on a new port) by the next process that needs it. Accounts and their
generated passwords are in ``accounts.json`` (mode 0600): one account per user (a tenant), made on
first use and given to every server, whose own access rules keep users apart. The demo data is written
once per user, through the protocols themselves (``demo_data``).
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

from pydantic import BaseModel, Field, SecretStr

from master_agent.domains.assistant.providers import Endpoint

ServerName = Literal["dav", "imap", "smtp"]
SERVERS: tuple[ServerName, ...] = ("dav", "imap", "smtp")
USER_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,62}$"
START_TIMEOUT_S = 20.0
#: ``python -c`` running the file its first argument names as ``__main__``, with the arguments after it.
_RUN_FILE = "import runpy, sys; runpy.run_path(sys.argv.pop(1), run_name='__main__')"


class RunningServer(BaseModel):
    pid: int
    port: int


class ServerTable(BaseModel):
    servers: dict[ServerName, RunningServer] = {}


class Account(BaseModel):
    """One user of the local servers (a tenant: each tenant is a user of its own, so the servers'
    own access rules keep tenants apart)."""

    user: str = Field(pattern=USER_PATTERN)
    address: str
    password: SecretStr


class AccountTable(BaseModel):
    accounts: dict[str, Account] = {}


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


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` itself listens on ``port``: a port chosen free may be taken by another
    process before the server binds it, and then something else answers there."""
    import psutil  # type: ignore[import-untyped]

    try:
        return any(
            conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port
            for conn in psutil.Process(pid).net_connections(kind="inet")
        )
    except psutil.Error:
        return False


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner reads (it holds passwords)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)


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

    def _accounts(self) -> AccountTable:
        if not self.accounts_path.exists():
            return AccountTable()
        return AccountTable.model_validate_json(self.accounts_path.read_text())

    def _ensure_account(self, user: str) -> Account:
        """``user``'s account, created on first use with a generated password and given to every server
        (Radicale and pymap read their user files at each login; the SMTP server reads its own)."""
        table = self._accounts()
        if user in table.accounts:
            return table.accounts[user]
        account = Account(
            user=user, address=f"{user}@assistant.localhost", password=SecretStr(secrets.token_urlsafe(18))
        )
        table.accounts[user] = account
        plain = {name: a.password.get_secret_value() for name, a in table.accounts.items()}
        self.root.mkdir(parents=True, exist_ok=True)
        _write_private(
            self.accounts_path,
            json.dumps(
                {"accounts": {n: {**a.model_dump(), "password": plain[n]} for n, a in table.accounts.items()}}
            ),
        )
        for name in SERVERS:
            (self.root / name).mkdir(parents=True, exist_ok=True)
        _write_private(self.root / "dav" / "users", "".join(f"{n}:{p}\n" for n, p in plain.items()))
        _write_private(self.root / "smtp" / "users.json", json.dumps(plain))
        self._imap_accounts(self.root / "imap", table)
        return account

    def ensure_running(self, user: str) -> tuple[LocalEndpoints, bool]:
        """Start whichever server does not answer; ``user``'s endpoints (the account made on first use),
        and whether that user's data is new (then the caller seeds it)."""
        with self._locked():
            account = self._ensure_account(user)
            table = self._table()
            missing = [
                name
                for name in SERVERS
                if (running := table.servers.get(name)) is None
                or not (_alive(running.pid) and _answers(running.port))
            ]
            # Started together (each is seconds of its own imports), then waited for one by one.
            started = {name: self._spawn(name) for name in missing}
            try:
                for name, (process, port) in list(started.items()):
                    try:
                        self._wait_answering(name, process, port)
                    except LocalServerError:
                        # Its port was taken between its choice and the bind: once more, on a new one.
                        process, port = started[name] = self._spawn(name)
                        self._wait_answering(name, process, port)
                    table.servers[name] = RunningServer(pid=process.pid, port=port)
                    # At once: a later server failing to start must not hide this one from ``stop``.
                    self.table_path.write_text(table.model_dump_json())
            except LocalServerError:
                for process, _ in started.values():
                    if not any(r.pid == process.pid for r in table.servers.values()):
                        process.kill()
                raise
            return self._endpoints(table, account), not self.seeded(user)

    def seeded(self, user: str) -> bool:
        return (self.root / f"seeded-{user}").exists()

    def mark_seeded(self, user: str) -> None:
        (self.root / f"seeded-{user}").write_text(str(time.time()))

    def _endpoints(self, table: ServerTable, account: Account) -> LocalEndpoints:
        def endpoint(url: str) -> Endpoint:
            return Endpoint(url=url, username=account.user, password=account.password)

        dav = table.servers["dav"].port
        return LocalEndpoints(
            address=account.address,
            caldav=endpoint(f"http://127.0.0.1:{dav}/{account.user}/calendar/"),
            carddav=endpoint(f"http://127.0.0.1:{dav}/{account.user}/contacts/"),
            imap=endpoint(f"imap://127.0.0.1:{table.servers['imap'].port}"),
            smtp=endpoint(f"smtp://127.0.0.1:{table.servers['smtp'].port}"),
            sent_dir=self.root / "smtp" / "accepted",
        )

    def stop(self, names: tuple[ServerName, ...] = SERVERS) -> None:
        """Stop the named servers (all by default) and wait for them to go."""
        with self._locked():
            table = self._table()
            pids = [
                running.pid
                for name in names
                if (running := table.servers.get(name)) is not None and _alive(running.pid)
            ]
            # All told at once, then waited for together.
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while (alive := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
                for pid in alive:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, os.WNOHANG)
                time.sleep(0.05)
            for pid in pids:
                if _alive(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)

    def _spawn(self, name: ServerName) -> tuple[subprocess.Popen[bytes], int]:
        """Server ``name`` started on a free port (not waited for)."""
        port = _free_port()
        directory = self.root / name
        if name == "dav":
            command = [
                sys.executable, "-m", "radicale",
                "--server-hosts", f"127.0.0.1:{port}",
                "--storage-filesystem-folder", str(directory / "collections"),
                "--auth-type", "htpasswd",
                "--auth-htpasswd-filename", str(directory / "users"),
                "--auth-htpasswd-encryption", "plain",
                "--rights-type", "owner_only",
                "--web-type", "none",
                "--logging-level", "warning",
            ]  # fmt: skip
        elif name == "imap":
            command = [
                sys.executable, "-c", "import sys; from pymap.main import main; sys.exit(main())",
                "--host", "127.0.0.1", "--port", str(port), "--no-tls",
                "maildir", str(directory),
            ]  # fmt: skip
        else:
            # Its file run as ``__main__``, not ``-m`` its module: ``-m`` imports the packages above it
            # (``master_agent.domains`` imports every pack, and the engine with them: seconds a start, to
            # run a server that needs aiosmtpd only). ``run_path`` puts no directory of ours on the path.
            command = [
                sys.executable, "-c", _RUN_FILE, str(Path(__file__).with_name("smtp_sink.py")),
                "--port", str(port), "--dir", str(directory / "accepted"), "--users", str(directory / "users.json"),
            ]  # fmt: skip
        log = (directory / "server.log").open("ab")
        # A session of its own: the server outlives the process that started it, as the embedded
        # PostgreSQL does, and other processes of the same data directory use it.
        process = subprocess.Popen(
            command, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True
        )
        return process, port

    def _wait_answering(self, name: ServerName, process: subprocess.Popen[bytes], port: int) -> None:
        """Wait until server ``name`` answers on ``port``; killed, and LocalServerError with its log's
        end, if it exits or does not answer in ``START_TIMEOUT_S``."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (_answers(port) and _listens(process.pid, port)):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                tail = (self.root / name / "server.log").read_text(errors="replace")[-2000:]
                raise LocalServerError(f"the local {name} server did not start on port {port}:\n{tail}")
            time.sleep(0.05)

    @staticmethod
    def _imap_accounts(directory: Path, table: AccountTable) -> None:
        """pymap's maildir backend reads its users from passwd/shadow-like files beside the mail."""
        from passlib.hash import pbkdf2_sha256

        passwd, shadow = [], []
        for name, account in table.accounts.items():
            for sub in ("cur", "new", "tmp"):
                (directory / name / sub).mkdir(parents=True, exist_ok=True)
            passwd.append(f"{name}:::::{name}:\n")
            shadow.append(f"{name}:{pbkdf2_sha256.hash(account.password.get_secret_value())}:::::::\n")
        (directory / "pymap-etc-passwd").write_text("".join(passwd))
        _write_private(directory / "pymap-etc-shadow", "".join(shadow))
