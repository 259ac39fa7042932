"""The ingest memory budget (`--max-memory`, $TRACEREPLAY_MAX_MEMORY) and the spill folders that
keep a trace larger than the budget on disk until its run is written (docs/bench_ingest.md).

A size is bytes, or a number with a unit: KB/MB/GB (10^3 steps) or KiB/MiB/GiB (2^10 steps),
case-insensitive ("2GiB", "1500MB", "2147483648"). Default: 2 GiB.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

ENV_MAX_MEMORY = "TRACEREPLAY_MAX_MEMORY"
ENV_SPILL_DIR = "TRACEREPLAY_SPILL_DIR"
DEFAULT_MAX_MEMORY = 2 << 30
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_spills: list[Path] = []


def parse_size(text: str | int) -> int:
    """Bytes of a size such as '2GiB' or '1500MB'; ValueError for anything else."""
    if isinstance(text, int):
        return text
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(f"not a size: {text!r} (say e.g. 2GiB, 1500MB or a number of bytes)")
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"a memory budget must be positive: {text!r}")
    return size


_held = 0
"""Bytes the run being assembled already holds in memory (the frames of the ranks read so far):
the budget is per run, not per file, so each further read gets what is left."""
HELD_FLOOR_SHARE = 8  # whatever is held, a read still gets at least budget / this


def max_memory(value: str | int | None = None) -> int:
    """The budget in bytes: `value`, else what is left of $TRACEREPLAY_MAX_MEMORY (else 2 GiB)
    after the bytes this run already holds (`hold`), never below an eighth of it."""
    if value is not None:
        return parse_size(value)
    env = os.environ.get(ENV_MAX_MEMORY)
    budget = parse_size(env) if env else DEFAULT_MAX_MEMORY
    return max(budget // HELD_FLOOR_SHARE, budget - _held)


def hold(size: int) -> None:
    """Count `size` bytes as held by the run being assembled (its frames read so far)."""
    global _held
    _held += max(0, int(size))


def hold_at_least(size: int) -> None:
    """Count at least `size` bytes as held (the process's growth since the run's reads began,
    `resident_bytes`): what the frames' own sizes miss (string buffers a filtered frame still
    points into, allocator pages) is counted too."""
    global _held
    _held = max(_held, int(size))


def resident_bytes() -> int | None:
    """This process's resident memory now (Linux /proc/self/statm), None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def release_held() -> None:
    """A new run starts: the previous run's frames are written and gone."""
    global _held
    _held = 0


def duckdb_limit_mib(budget: int | None = None) -> int:
    """DuckDB's memory limit within an ingest budget (`budget`, else max_memory()): a quarter of
    it, in MiB, at least 64; the streamed trace scan and the warehouse append of its slices
    both run under it."""
    return max(64, (max_memory() if budget is None else budget) // (4 << 20))


def new_spill_dir() -> Path:
    """A fresh folder for one trace's on-disk slices (under $TRACEREPLAY_SPILL_DIR or the system
    temp folder), removed by `release_spills` or at interpreter exit."""
    base = os.environ.get(ENV_SPILL_DIR) or None
    if base:
        Path(base).mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="tracereplay-spill-", dir=base))
    _spills.append(folder)
    return folder


def release_spills() -> int:
    """Remove every spill folder made so far in this process (after their run is written) and
    stop counting the run's frames as held; returns how many folders were removed."""
    release_held()
    count = 0
    while _spills:
        shutil.rmtree(_spills.pop(), ignore_errors=True)
        count += 1
    return count


atexit.register(release_spills)
