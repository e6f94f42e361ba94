"""Memory a serving process holds without using it."""

from __future__ import annotations

import ctypes


def return_free_memory() -> None:
    """Give the pages malloc holds free back to the system (glibc's ``malloc_trim``; elsewhere nothing).
    Loading and warming up allocate far more than they keep (word-piece activations, files read whole,
    intermediate lists), and glibc keeps what was freed inside its heaps: resident in every process, and
    in a parent, copied into each worker it forks."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)
