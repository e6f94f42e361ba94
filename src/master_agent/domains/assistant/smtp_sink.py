"""The embedded SMTP server of the assistant pack: aiosmtpd on loopback, asking for a login, keeping every
message it accepts as ``<n>.eml`` beside ``<n>.json`` (the envelope: sender, every recipient, when), so a
test or a user can see exactly what was sent and to whom.

Run as ``python -m master_agent.domains.assistant.smtp_sink --port P --dir D --users F``: ``F`` is a JSON
file of user -> password (not the command line, which ``ps`` shows), read at each login.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import signal
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword, Session

# Login without TLS is deliberate on loopback (see main); the warning would fill the log at every connection.
warnings.filterwarnings("ignore", message="Requiring AUTH while not requiring TLS")


class KeepingHandler:
    """Accepts every message of a logged-in client and writes it to ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)

    async def handle_DATA(self, server: Any, session: Session, envelope: Envelope) -> str:
        name = f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{secrets.token_hex(4)}"
        content = envelope.original_content or b""
        (self.directory / f"{name}.eml").write_bytes(content)
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "received_at": datetime.now(UTC).isoformat(),
            "login": session.auth_data.decode() if isinstance(session.auth_data, bytes) else None,
        }
        # The envelope last: a reader that sees it sees the whole message.
        (self.directory / f"{name}.json").write_text(json.dumps(record))
        return "250 Message accepted for delivery"


class PasswordCheck:
    """Logins from a JSON file of user -> password, read at each login (users are added while it runs)."""

    def __init__(self, users: Path) -> None:
        self.users = users

    def __call__(
        self, server: Any, session: Session, envelope: Envelope, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        passwords: dict[str, str] = json.loads(self.users.read_text()) if self.users.exists() else {}
        expected = passwords.get(auth_data.login.decode(errors="replace"))
        ok = expected is not None and secrets.compare_digest(auth_data.password, expected.encode())
        # handled=False: aiosmtpd answers the refusal itself (535).
        return AuthResult(success=ok, handled=False, auth_data=auth_data.login if ok else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--users", type=Path, required=True, help="JSON file: user -> password")
    args = parser.parse_args()
    controller = Controller(
        KeepingHandler(args.dir),
        hostname=args.host,
        port=args.port,
        authenticator=PasswordCheck(args.users),
        # Loopback only, and the login is what the tests check; TLS would add nothing here.
        auth_require_tls=False,
        auth_required=True,
    )
    controller.start()
    stop = asyncio.Event()

    async def wait() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()

    try:
        asyncio.run(wait())
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
