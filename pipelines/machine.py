"""What this machine lends the process: the CPUs it may run on."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """CPUs this process may run on (its affinity where the OS says it; children inherit it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
