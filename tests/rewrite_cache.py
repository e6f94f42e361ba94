"""Writes pytest's cache of rewritten test modules once, before ``make test`` starts its workers.

pytest compiles each test module with its asserts rewritten, and caches the result in ``__pycache__``
(``*.cpython-311-pytest-*.pyc``, keyed by the source's hash) unless ``PYTHONDONTWRITEBYTECODE`` is set, as
it is in many containers (this machine's, and so its CI): then every worker rewrote every module again,
~5 of the ~13 CPU-seconds each worker spends collecting the suite. pytest reads the cache even where it
may not write it, so the modules are rewritten here once, in parallel, with pytest's own rewriter.

    python -m tests.rewrite_cache [DIR]
"""

from __future__ import annotations

import importlib.util
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from _pytest.assertion.rewrite import PYC_TAIL, _rewrite_test, _write_pyc, get_cache_dir

ROOT = Path(__file__).resolve().parent


class _Quiet:
    """The assertion state ``_write_pyc`` reports a failed write to: a cache not written is rewritten
    again by the workers, as before."""

    def trace(self, *message: Any) -> None:
        pass


def _rewritten(path: Path) -> bool:
    """Whether ``path``'s rewritten module was written (False when a cache is already there)."""
    cache = get_cache_dir(path)
    pyc = cache / (path.name[:-3] + PYC_TAIL)
    try:
        if pyc.read_bytes()[8:16] == importlib.util.source_hash(path.read_bytes())[:8]:
            return False  # written for this source already (pytest's header: magic, flags, hash)
    except OSError:
        pass
    cache.mkdir(exist_ok=True)
    # No config: the rewriter's one setting, ``enable_assertion_pass_hook``, is off in this project.
    source_hash, code = _rewrite_test(path, None)  # type: ignore[arg-type]
    return _write_pyc(_Quiet(), code, source_hash, pyc)  # type: ignore[arg-type]


def test_modules(root: Path) -> list[Path]:
    """The modules pytest rewrites: test files (``test_*.py``, ``*_test.py``) and ``conftest.py``."""
    return sorted(
        path
        for pattern in ("test_*.py", "*_test.py", "conftest.py")
        for path in root.rglob(pattern)
        if "node_modules" not in path.parts
    )


def main(root: Path) -> int:
    paths = test_modules(root)
    with ProcessPoolExecutor() as pool:
        written = sum(pool.map(_rewritten, paths, chunksize=8))
    print(f"rewrote {written} of {len(paths)} test modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))
