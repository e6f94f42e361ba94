"""``serve --workers N``: the workers are forked from a parent that already holds the app's modules and
WordNet's index, so they share those pages instead of loading private copies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WORKER = """
import gc, sys
import uvicorn, uvicorn._subprocess as subprocess_
from master_agent.service.preload import fork_workers, preload_shared

preload_shared()
fork_workers()
out = sys.argv[1]

def target(sockets):
    from master_agent.capabilities import terms
    from master_agent.capabilities.tools import lexicon
    loaded = min(lexicon.wordnet.cache_info().currsize, lexicon._word_classes.cache_info().currsize,
                 terms._world_holidays.cache_info().currsize,
                 terms._holidays_by_first_words.cache_info().currsize)
    with open(out, "w") as file:
        file.write(f"{loaded} {'master_agent.service.app' in sys.modules} {gc.get_freeze_count() > 0}")

worker = subprocess_.get_subprocess(uvicorn.Config(app=None), target, [])
worker.start()
worker.join()
sys.exit(worker.exitcode)
"""


def test_a_worker_starts_with_the_parents_modules_and_wordnet(tmp_path: Path) -> None:
    """A worker uvicorn starts has the app imported and WordNet and the holidays (by their English names
    and in every language) read before its first line runs (its target is a function of the parent's
    ``__main__``, which a spawned interpreter could not even find)."""
    out = tmp_path / "worker.txt"
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(out)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "1 True True"
