"""Each run's GX verdicts kept on disk, keyed by exactly what they depend on, so `check` over a
warehouse that gained one run validates that run's rows only (issue 37: `check` at 1,000 runs).

A suite whose verdict on a run depends on that run's rows alone (`splits_by_run`: a
`batch_by_run` suite whose every expectation is judged row by row, or is a uniqueness whose key
holds run_id, and none has `mostly`) is validated as before, by GX on pandas batches, but with
GX's COMPLETE result format, so every unexpected row comes back with its run_id and the
verdict splits into one per run: which expectations the run breaks, with how many rows and
its first examples. That per-run verdict is a pure function of

* the run's rows of the suite's batch query (what GX is handed), fingerprinted in DuckDB:
  their count, the sum (as a 128-bit integer) and the XOR of DuckDB's 64-bit `hash` of each
  whole row, run_id included (order-free: the batch's own `order by` is dropped for it);
* the suite file (GX's suite dict) and the batch query's text;
* the number of examples kept (`sample_rows`);
* the code: every module of pipelines/quality/ and the great_expectations, pandas, numpy and
  duckdb versions (`check_code_signature`).

The key is a sha256 over all of them; any change is a new key, validated afresh. A planted row,
a changed value or a removed row changes the run's fingerprint (a multiset of 64-bit row
hashes with the same count, sum and XOR is, for rows that differ, a 2^-64-scale coincidence,
the same risk as the duplicate rules' event_hash: docs/quality.md). Checks across runs (the
SQL checks, the per-path and per-rank aggregates, the marts) are never cached: they see every
checked run each time.

Entries are JSON files under `cache_base()/check_runs/<suite>/`, written whole by rename
(pipelines.paths.keep_file); an unreadable entry is validated again. A run whose examples hold a
value JSON cannot carry back unchanged (not str, int, float, bool or None) is not kept.
`TRACEREPLAY_CHECK_CACHE=0` turns the cache off: every suite is validated whole, as before.
Nothing is evicted; the folder is safe to delete at any time.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import duckdb

from pipelines.paths import cache_base, keep_file, read_cache_file
from pipelines.quality.check_queries import row_hashes_by_run
from pipelines.quality.suite_files import SuiteFile

CHECK_CACHE_VERSION = 1
"""Raised by hand when an entry's layout changes."""
CHECK_CACHE_ENV = "TRACEREPLAY_CHECK_CACHE"
"""'0' (or 'off', 'no', 'false'): validate every run of every suite, read and write nothing."""
_LIBRARIES = ("great_expectations", "pandas", "numpy", "duckdb")

ROW_TYPES = frozenset(
    {
        "expect_column_values_to_be_between",
        "expect_column_values_to_be_in_set",
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_match_regex",
        "expect_column_pair_values_a_to_be_greater_than_b",
        "expect_column_pair_values_to_be_equal",
    }
)
"""GX types judged row by row: a row breaks them or not whatever the other rows hold."""


def cache_enabled() -> bool:
    """False when TRACEREPLAY_CHECK_CACHE says off."""
    return os.environ.get(CHECK_CACHE_ENV, "1").strip().lower() not in {"0", "off", "no", "false"}


def _judged_within_a_run(expectation: dict) -> bool:
    kind, kwargs = expectation.get("type"), expectation.get("kwargs", {})
    if kwargs.get("mostly", 1) != 1:
        return False  # a fraction over the whole batch, not per run
    if kind in ROW_TYPES:
        return True
    if kind == "expect_column_values_to_be_unique":
        return kwargs.get("column") == "run_id"
    if kind == "expect_compound_columns_to_be_unique":
        return "run_id" in kwargs.get("column_list", ())
    return False


def splits_by_run(suite: SuiteFile) -> bool:
    """True when the suite's verdict on a run depends on that run's rows alone (module doc)."""
    return (
        suite.batch_by_run is not None
        and "run_id" in suite.index_columns
        and all(_judged_within_a_run(e) for e in suite.data["expectations"])
    )


@functools.cache
def check_code_signature() -> str:
    """sha256 over pipelines/quality/'s modules and the versions of the libraries that judge."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted(here.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    for name in _LIBRARIES:
        digest.update(f"{name}={metadata.version(name)}".encode())
    return digest.hexdigest()


_FINAL_ORDER = re.compile(r"\border\s+by\s+[\w\s,.]*$", re.IGNORECASE)


def _unordered(sql: str) -> str:
    """The batch query without its final top-level `order by` (sorting millions of rows costs
    more than hashing them; the fingerprint does not depend on order). Left as it is when that
    clause is not plain column names (a `limit` or an expression)."""
    text = re.sub(r"--[^\n]*", "", sql).strip().rstrip(";")
    match = _FINAL_ORDER.search(text)
    if match is None or re.search(r"\b(limit|offset)\b", match.group(0), re.IGNORECASE):
        return sql
    return text[: match.start()]


def run_fingerprints(con: duckdb.DuckDBPyConnection, suite: SuiteFile) -> dict[str, str]:
    """Per checked run with rows in the suite's batch: count, sum and XOR of its row hashes."""
    rows = row_hashes_by_run(con, _unordered(suite.batch_query()))
    return {run: f"{n}:{total}:{xor}" for run, n, total, xor in rows}


@dataclass(frozen=True)
class Broken:
    """One expectation a run (or batch) breaks: its position in GX's results (the suite's
    expectations grouped by column, a fixed order for a suite), its check, the rows breaking
    it, the first examples."""

    position: int
    check: str
    failing: int
    examples: tuple[dict[str, object], ...]


def suite_signature(suite: SuiteFile, sample_rows: int) -> str:
    """What every entry of one suite depends on besides the run's rows."""
    head = [CHECK_CACHE_VERSION, suite.data, suite.batch_query(), sample_rows]
    text = json.dumps([*head, check_code_signature()], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def entry_path(suite: SuiteFile, signature: str, fingerprint: str) -> Path:
    key = hashlib.sha256(f"{signature}\n{fingerprint}".encode()).hexdigest()
    return cache_base() / "check_runs" / suite.name / f"{key}.json"


def load(path: Path) -> tuple[Broken, ...] | None:
    """The kept verdict of one run (None: absent or unreadable)."""
    try:
        data = json.loads(read_cache_file(path))
        return tuple(
            Broken(int(p), str(c), int(n), tuple(dict(e) for e in examples))
            for p, c, n, examples in data
        )
    except (OSError, ValueError, TypeError):
        return None


def _carried(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str | int | bool)


def keep(path: Path, broken: tuple[Broken, ...]) -> None:
    """Write one run's verdict, unless an example holds a value JSON would not give back."""
    if not all(_carried(v) for b in broken for e in b.examples for v in e.values()):
        return
    text = json.dumps([[b.position, b.check, b.failing, list(b.examples)] for b in broken]).encode()
    keep_file(path, lambda out: out.write(text))
