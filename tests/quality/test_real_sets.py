"""`tracereplay check` on the real profiler sets (../shared/traces/real, read in place): every
error-severity expectation holds, and the outcome is pinned: exactly three warnings, each a fact
of the source files (docs/quality.md §Duplicates and its ranks checks, docs/step_breakdown.md,
docs/ingest_rules.md). The one kernel row msprof-analyze's compute_advice export writes 4 times is
counted once at ingest (`duplicate_row`), so no duplicate kernel reaches the warehouse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.cli import main


@pytest.fixture(scope="module")
def real_warehouse(real_dir: Path, tmp_path_factory) -> Path:
    """The real sets in one warehouse. Ingest exits 2 (quarantine): msprof-analyze's advisor
    cluster_analysis_output holds cluster summaries and no rank data, so it is quarantined
    no_device_events (docs/ingest_rules.md) rather than stored as a run of 0 device events; the
    compute_advice kernel_details.csv's 3 repeated copies of one row are dropped (duplicate_row)
    and named in an invalid_rows row."""
    import contextlib
    import io

    target = tmp_path_factory.mktemp("real") / "warehouse.duckdb"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["ingest", str(real_dir), "--warehouse", str(target), "--json"])
    report = json.loads(out.getvalue())
    quarantined = [(Path(q["path"]).name, q["reason"]) for q in report["quarantined"]]
    assert quarantined == [
        ("kernel_details.csv", "invalid_rows"),
        ("cluster_analysis_output", "no_device_events"),
    ]
    repeated = next(q for q in report["quarantined"] if q["reason"] == "invalid_rows")
    assert "compute_advice" in repeated["path"]
    assert repeated["detail"].startswith("3 entries set aside")
    assert "line 11: duplicate_row (a copy of line 10)" in repeated["detail"]
    assert code == 2
    return target


@pytest.fixture(scope="module")
def real_check(real_warehouse: Path) -> tuple[int, dict]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["check", "--warehouse", str(real_warehouse), "--json"])
    return code, json.loads(out.getvalue())


def test_real_sets_pass_every_error_expectation(real_check) -> None:
    code, report = real_check
    assert code == 0
    assert report["ok"] is True
    assert report["runs_checked"] == 10
    errors = [r for r in report["results"] if r["severity"] == "error" and not r["passed"]]
    assert errors == []


def test_real_sets_warn_on_exactly_the_source_facts(real_check) -> None:
    _, report = real_check
    failing = {f"{r['table']}.{r['expectation']}": r for r in report["results"] if not r["passed"]}
    assert sorted(failing) == [
        "quarantine.nothing_quarantined",
        "ranks.device_work_on_every_rank",
        "step_breakdown.derived_rows_complete",
    ]
    # partial runs, named: set A's ranks 1 and 3 kept summaries only (SOURCES.md), and 14 of the
    # 16 ranks of the cluster set (D + E) are known from cluster_step_trace_time.csv alone
    partial = failing["ranks.device_work_on_every_rank"]
    assert partial["failing"] == 16
    # the advisor's cluster_analysis_output (no_device_events) and compute_advice's
    # kernel_details.csv, whose repeated row was counted once (invalid_rows: duplicate_row)
    quarantined = failing["quarantine.nothing_quarantined"]
    assert quarantined["failing"] == 2
    assert quarantined["severity"] == "warning"
    # the two derived rows of the 16-rank set judged incomplete at ingest
    incomplete = failing["step_breakdown.derived_rows_complete"]
    assert incomplete["failing"] == 2
    # (its id: reader, the test_rank_N folders' stem, profiler_info's time; docs/run_identity.md)
    stems = {r["run_id"].rsplit("-", 1)[0] for r in incomplete["examples"]}
    assert stems == {"ascend-pt-test-rank-20230919-0922"}
