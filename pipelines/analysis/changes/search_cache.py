"""Each series' change-point search kept on disk, keyed by exactly what it depends on, so a scan
of a warehouse where one configuration gained a night searches that configuration's series only.

The search of one series (detect_change_points, the gate's p of a series without a point, the
withdrawn points of the nightly re-scans) is a pure function of the series' values in order, the
search's parameters and the code that searches. The key is a sha256 over all of them: the values
as little-endian float64 bytes (with their count), the parameters, SEARCH_CACHE_VERSION, the
source of every module of pipelines/analysis/changes/ and of comparison/compare.py (the effect
and its interval), the numpy / scipy / ruptures / statsmodels versions, and every TRACEREPLAY_*
environment variable that is not a location or a resource limit (a switch read at run time
changes the key). Any change to any of these is a new key, computed afresh; an entry is never
updated in place. Run ids and dates are not part of the search (they are mapped onto its
indexes afterwards), so they are not in the key.

Entries are JSON files (floats written with repr, which reads back to the same double; NaN and
infinities as JSON's extensions) under `cache_base()/change_search/<kind>/`, written whole by
rename; a file that cannot be read back is searched again and rewritten, a folder that cannot
be written is skipped. `TRACEREPLAY_CHANGE_CACHE=0` turns the cache off (every series searched).
Each new night adds one file (a few hundred bytes) per series it lengthens; entries unused for 60
days are deleted (pipelines.paths.keep_file); the folder is safe to delete at any time.
The Benjamini-Hochberg step across series is never cached: it runs over the whole family on
every scan (pipelines.analysis.changes.history.find_changes).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TypeVar

import numpy as np

from pipelines.paths import cache_base, keep_file, read_cache_file

SEARCH_CACHE_VERSION = 1
"""Raised by hand when an entry's layout changes."""
CACHE_SWITCH_ENV = "TRACEREPLAY_CHANGE_CACHE"
"""'0' (or 'off', 'no', 'false'): search every series, read and write nothing."""
_NOT_SWITCHES = frozenset(
    {
        CACHE_SWITCH_ENV,
        "TRACEREPLAY_CACHE_DIR",
        "TRACEREPLAY_HTA_PYTHON",
        "TRACEREPLAY_LAKE",
        "TRACEREPLAY_MAX_MEMORY",
        "TRACEREPLAY_RAW_DIR",
        "TRACEREPLAY_REAL_TRACES",
        "TRACEREPLAY_SPILL_DIR",
        "TRACEREPLAY_UPDATE_SNAPSHOT",
        "TRACEREPLAY_WAIT",
        "TRACEREPLAY_WAREHOUSE",
    }
)
"""TRACEREPLAY_* variables that say where things are or how much memory to use: no result
depends on them. Every other one enters the key."""
_LIBRARIES = ("numpy", "scipy", "ruptures", "statsmodels")

T = TypeVar("T")


def cache_enabled() -> bool:
    """False when TRACEREPLAY_CHANGE_CACHE says off."""
    return os.environ.get(CACHE_SWITCH_ENV, "1").strip().lower() not in {"0", "off", "no", "false"}


@functools.cache
def search_code_signature() -> str:
    """sha256 over the sources the search runs and the numerical libraries' versions."""
    digest = hashlib.sha256()
    analysis = Path(__file__).resolve().parents[1]
    sources = [*sorted((analysis / "changes").glob("*.py")), analysis / "comparison" / "compare.py"]
    for path in sources:
        digest.update(str(path.relative_to(analysis)).encode())
        digest.update(path.read_bytes())
    for name in _LIBRARIES:
        digest.update(f"{name}={metadata.version(name)}".encode())
    return digest.hexdigest()


def _switches() -> list[tuple[str, str]]:
    return sorted(
        (k, v)
        for k, v in os.environ.items()
        if k.startswith("TRACEREPLAY_") and k not in _NOT_SWITCHES
    )


def search_key(kind: str, values: np.ndarray, params: dict[str, object]) -> str:
    """The key of one search: `kind` (what is searched), the values in order, the parameters,
    the code (module docstring)."""
    head = [SEARCH_CACHE_VERSION, kind, params, search_code_signature(), _switches()]
    digest = hashlib.sha256(json.dumps(head, sort_keys=True).encode())
    exact = np.ascontiguousarray(values, dtype="<f8")
    digest.update(str(exact.shape).encode())
    digest.update(exact.tobytes())
    return digest.hexdigest()


def cache_dir(kind: str) -> Path:
    return cache_base() / "change_search" / kind


def cached_search(
    kind: str,
    values: np.ndarray,
    params: dict[str, object],
    search: Callable[[], T],
    encode: Callable[[T], object],
    decode: Callable[[object], T],
) -> T:
    """`search()` of one series, from the cache when its key is there (decoded), else computed
    and kept (encoded as JSON). With the cache off: `search()` only."""
    if not cache_enabled():
        return search()
    path = cache_dir(kind) / f"{search_key(kind, values, params)}.json"
    try:
        return decode(json.loads(read_cache_file(path)))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass  # absent or unreadable: search again
    found = search()
    text = json.dumps(encode(found)).encode()
    keep_file(path, lambda out: out.write(text))
    return found
