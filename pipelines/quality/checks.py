"""Run the suites: the one function `tracereplay check`, and the Dagster asset checks call.

DuckDB counts and samples the rows that break each custom SQL and schema check (check_queries.py)
while Great Expectations is imported in a background thread; then GX validates every suite file
on the batches DuckDB hands over and judges the custom counts (gx_suites.py). The result says,
per check, whether it held, how many rows break it and which ones (the first few), and keeps
GX's validation results for the Data Docs report (data_docs.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import duckdb

from pipelines.quality.check_catalog import EXPECTATIONS, TABLES, Expectation, Kind, Severity
from pipelines.quality.check_queries import SAMPLE_ROWS, Probe, probe, select_runs
from pipelines.quality.gx_suites import BATCH_ROWS, start_import, validate, wait_for_import
from pipelines.quality.run_cache import cache_enabled
from pipelines.quality.suite_files import suite_files


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one expectation."""

    expectation: Expectation
    passed: bool
    failing: int
    columns: tuple[str, ...]
    examples: tuple[tuple[object, ...], ...]

    @property
    def blocks(self) -> bool:
        """True when this failure must fail the check run and block downstream work."""
        return not self.passed and self.expectation.severity is Severity.ERROR

    def example_dicts(self) -> list[dict[str, object]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.examples]


@dataclass(frozen=True)
class CheckReport:
    """Every verdict of one check run, over `runs_checked` runs, and how long it took."""

    results: tuple[CheckResult, ...]
    runs_checked: int
    duration_s: float
    gx_results: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    """GX's ExpectationSuiteValidationResult of every suite and batch (data_docs.py)."""

    @property
    def errors(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.blocks)

    @property
    def warnings(self) -> tuple[CheckResult, ...]:
        return tuple(
            r for r in self.results if not r.passed and r.expectation.severity is Severity.WARNING
        )

    @property
    def ok(self) -> bool:
        return not self.errors


def _columns(examples: list[dict[str, object]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(k for row in examples for k in row))


def run_checks(
    con: duckdb.DuckDBPyConnection,
    run_ids: list[str] | None = None,
    tables: Iterable[str] | None = None,
    sample_rows: int = SAMPLE_ROWS,
    batch_rows: int = BATCH_ROWS,
    use_cache: bool | None = None,
) -> CheckReport:
    """Check the given runs (None: every run in the warehouse) against the suites of `tables`
    (None: all). `con` may be read-only; only temporary tables are written. `use_cache` (None:
    unless TRACEREPLAY_CHECK_CACHE=0) reads and keeps each run's verdicts of the suites judged
    run by run (run_cache.py), so only runs whose rows changed are validated again; without it
    every suite is validated whole and `gx_results` holds GX's result of every batch."""
    started = time.perf_counter()
    wanted = set(tables) if tables is not None else None
    items = [e for e in EXPECTATIONS if wanted is None or e.table in wanted]
    # DuckDB draws a progress bar on stdout for queries over 2 s; it would corrupt --json
    con.execute("set enable_progress_bar = false")
    n_runs = select_runs(con, run_ids)
    # GX loads in a background thread while DuckDB probes the canonical tables; the marts wait
    # for it, since their views may call Python functions (student_t_quantile imports scipy)
    # and two threads importing the same modules can meet half-initialised ones
    start_import()
    custom = [e for e in items if e.kind is not Kind.GX]
    probes: list[Probe] = [probe(con, item, sample_rows) for item in custom if item.table in TABLES]
    wait_for_import()
    probes += [probe(con, item, sample_rows) for item in custom if item.table not in TABLES]
    suites = [s for s in suite_files() if wanted is None or s.table in wanted]
    if use_cache is None:
        use_cache = cache_enabled()
    verdicts, validator = validate(
        con, suites, probes, set(items), sample_rows, batch_rows, use_cache
    )
    results = []
    for item in items:
        verdict = verdicts[item.key]
        columns = _columns(verdict.examples)
        results.append(
            CheckResult(
                expectation=item,
                passed=verdict.passed,
                failing=verdict.failing,
                columns=columns,
                examples=tuple(
                    tuple(row.get(c) for c in columns) for row in verdict.examples[:sample_rows]
                ),
            )
        )
    return CheckReport(
        tuple(results), n_runs, time.perf_counter() - started, tuple(validator.results)
    )
