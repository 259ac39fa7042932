"""The GX side of the checks: the suite files are GX suites of built-in expectation types, at
least half of all checks are such, large tables are validated a few runs at a time with the same
verdicts, and nothing but `check` imports GX."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipelines.quality.check_catalog import EXPECTATIONS, Kind
from pipelines.quality.check_queries import batches_by_run, select_runs
from pipelines.quality.checks import run_checks
from pipelines.quality.suite_files import SuiteFileError, suite_files
from pipelines.store import open_store

from .test_expectations import _clean


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def test_at_least_half_of_the_checks_are_gx_built_in_types() -> None:
    import great_expectations.expectations as gxe

    built_in = {_snake(n) for n in dir(gxe) if n.startswith("Expect")}
    gx_checks = [e for e in EXPECTATIONS if e.kind is Kind.GX]
    assert len(gx_checks) * 2 >= len(EXPECTATIONS), (len(gx_checks), len(EXPECTATIONS))
    for item in gx_checks:
        assert item.gx_types and set(item.gx_types) <= built_in, item.key
    # the column-level kinds the issue names are all in use
    used = {t for e in gx_checks for t in e.gx_types}
    assert {
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_between",
        "expect_column_values_to_be_unique",
        "expect_column_values_to_be_in_set",
        "expect_compound_columns_to_be_unique",
        "expect_table_row_count_to_equal",
        "expect_column_values_to_match_regex",
    } <= used


def test_suite_files_load_as_gx_suites() -> None:
    import great_expectations as gx

    for suite in suite_files():
        loaded = gx.ExpectationSuite(**suite.data)
        assert len(loaded.expectations) == len(suite.data["expectations"]), suite.name
        assert suite.batch_sql.is_file()


def test_a_suite_file_naming_an_undeclared_check_is_refused(tmp_path: Path) -> None:
    source = next(s for s in suite_files() if s.name == "ranks")
    data = json.loads(json.dumps(source.data))
    data["expectations"][0]["meta"]["check"] = "no_such_check"
    (tmp_path / "ranks.json").write_text(json.dumps(data))
    with pytest.raises(SuiteFileError, match="names no declared check"):
        suite_files.__wrapped__(tmp_path)


@pytest.fixture
def two_runs(tmp_path) -> duckdb.DuckDBPyConnection:
    con = open_store(tmp_path / "warehouse.duckdb").open()
    _clean(con)
    for table in ("runs", "ranks", "slices", "kernels", "comm_ops", "step_breakdown", "chunks"):
        con.execute(f"insert into {table} select * replace ('r2' as run_id) from {table}")
    yield con
    con.close()


def test_batches_pack_whole_runs(two_runs) -> None:
    select_runs(two_runs, None)
    assert batches_by_run(two_runs, "slices", 10) == [["r1", "r2"]]
    assert batches_by_run(two_runs, "slices", 2) == [["r1"], ["r2"]]
    assert batches_by_run(two_runs, "slices", 1) == [["r1"], ["r2"]]  # a run is never split
    two_runs.execute("delete from slices")
    assert batches_by_run(two_runs, "slices", 1) == [None]


def test_batched_validation_gives_the_same_verdicts(two_runs) -> None:
    """A duplicate in run r2 and a negative duration in r1: found whether the slices are one
    frame or one frame per run (batch_rows=1), with the same counts and the batches' examples."""
    two_runs.execute("update slices set dur_ns = -5 where run_id = 'r1' and rank = 1")
    two_runs.execute("insert into slices select * from slices where run_id = 'r2' and rank = 0")
    whole = run_checks(two_runs, tables=["slices"], use_cache=False)
    batched = run_checks(two_runs, tables=["slices"], batch_rows=1, use_cache=False)
    assert len(batched.gx_results) > len(whole.gx_results)  # slices validated run by run
    for one, other in zip(whole.results, batched.results, strict=True):
        assert (one.expectation.key, one.passed, one.failing) == (
            other.expectation.key,
            other.passed,
            other.failing,
        )
    by_key = {r.expectation.name: r for r in batched.results}
    assert by_key["non_negative_durations"].example_dicts()[0]["run_id"] == "r1"
    assert by_key["no_duplicated_events"].failing == 2
    assert {row["run_id"] for row in by_key["no_duplicated_events"].example_dicts()} == {"r2"}


def test_only_check_imports_great_expectations() -> None:
    """The catalogue, the ingest-time sanity checks and the Dagster asset-check definitions read
    the suites without importing GX (its import costs 8-10 s)."""
    probe = (
        "import sys; import pipelines.quality.check_catalog, pipelines.quality.sanity;"
        " import pipelines.defs.quality.checks;"
        " print('great_expectations' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False"]


def test_every_query_file_is_a_check_or_a_batch() -> None:
    """No orphaned query: sql/quality/<table>/<name>.sql are the custom checks, sql/quality/gx/
    the suites' batches."""
    from pipelines.paths import SQL_DIR

    root = SQL_DIR / "quality"
    custom = {f"{p.parent.name}.{p.stem}" for p in root.glob("*/*.sql") if p.parent.name != "gx"}
    assert custom == {e.key for e in EXPECTATIONS if e.kind is Kind.SQL}
    assert set((root / "gx").glob("*.sql")) == {s.batch_sql for s in suite_files()}
