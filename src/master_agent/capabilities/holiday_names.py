"""Every holiday name the ``holidays`` package knows for a year, kept on disk between processes.

Reading them (``terms._holidays_in_every_language``: ~7,000 calendars, every country, subdivision and
language) costs ~2 CPU-s, and every process that reads a goal with a proper name in it paid that again:
each ``serve`` and CLI start, each test worker. The list depends only on the ``holidays`` package, the
year and the code that reads it, so it is written once to the user's cache directory
(``$XDG_CACHE_HOME/master-agent``, else ``~/.cache/master-agent``) under a name made of all three, and read
back as JSON (~0.2 CPU-s). A cache that cannot be read or written is recomputed; it is never trusted past
a change of the package or of the code.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import os
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

_LOG = logging.getLogger(__name__)

Holiday = tuple[str, str, str | None, datetime]
"""(name, country, subdivision, day at midnight UTC)."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "master-agent"


def package_version() -> str:
    return version("holidays")


def _cache_file(compute: Callable[[int], tuple[Holiday, ...]], year: int) -> Path:
    code = hashlib.sha256(inspect.getsource(compute).encode()).hexdigest()[:16]
    return cache_dir() / f"holiday-names-{year}-holidays{package_version()}-{code}.json"


def cached_holidays(compute: Callable[[int], tuple[Holiday, ...]], year: int) -> tuple[Holiday, ...]:
    """``compute(year)``, from the disk cache when it holds it; written there when it did not."""
    try:
        path = _cache_file(compute, year)
    except (OSError, TypeError, PackageNotFoundError):  # no source to hash (a frozen build): never cached
        return compute(year)
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        return tuple(
            (name, country, subdiv, datetime.fromisoformat(day).replace(tzinfo=UTC))
            for name, country, subdiv, day in rows
        )
    except (OSError, ValueError, TypeError):
        pass
    found = compute(year)
    rows = [[name, country, subdiv, day.date().isoformat()] for name, country, subdiv, day in found]
    written: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole under another name, then renamed: a process reading at the same time finds no
        # file or the whole file, never half of one.
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=path.parent, prefix=".holiday-names-", delete=False
        ) as out:
            written = out.name
            json.dump(rows, out, ensure_ascii=False)
        os.replace(written, path)
        written = None
    except OSError as error:
        # A read-only home: the next process computes them again, said once here so the cost is seen.
        _LOG.warning("holiday names not cached at %s: %s", path, error)
    finally:
        if written is not None:
            with contextlib.suppress(OSError):
                os.unlink(written)
    return found
