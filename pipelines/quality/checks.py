"""Run the suites: the one function `tracereplay check`, and the Dagster asset checks call.

DuckDB counts and samples the rows that break each expectation (probes.py) while Great
Expectations is imported in a background thread; GX judges the counts (gx_suites.py); the
result says, per expectation, whether it held, how many
rows break it and which ones (the first few).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from pipelines.quality.catalog import EXPECTATIONS, TABLES, Expectation, Severity
from pipelines.quality.gx_suites import start_import, validate, wait_for_import
from pipelines.quality.probes import SAMPLE_ROWS, Probe, probe, select_runs


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


def run_checks(
    con: duckdb.DuckDBPyConnection,
    run_ids: list[str] | None = None,
    tables: Iterable[str] | None = None,
    sample_rows: int = SAMPLE_ROWS,
) -> CheckReport:
    """Check the given runs (None: every run in the warehouse) against the suites of `tables`
    (None: all). `con` may be read-only; only a temporary table is written."""
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
    probes: list[Probe] = [probe(con, item, sample_rows) for item in items if item.table in TABLES]
    wait_for_import()
    probes += [probe(con, item, sample_rows) for item in items if item.table not in TABLES]
    verdicts = validate(probes)
    results = tuple(
        CheckResult(
            expectation=p.expectation,
            passed=bool(verdicts[p.expectation.key]["success"]),
            failing=p.failing,
            columns=p.columns,
            examples=p.examples,
        )
        for p in probes
    )
    return CheckReport(results, n_runs, time.perf_counter() - started)
