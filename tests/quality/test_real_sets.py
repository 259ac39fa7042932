"""`tracereplay check` on the real profiler sets (../shared/traces/real, read in place): every
error-severity expectation holds, and the outcome is pinned: exactly four warnings, each a fact
of the source files (docs/quality.md §Duplicates and its ranks checks, docs/step_breakdown.md,
docs/ingest_rules.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.cli import main


@pytest.fixture(scope="module")
def real_warehouse(real_dir: Path, tmp_path_factory) -> Path:
    """The real sets in one warehouse. Ingest exits 2 (quarantine): msprof-analyze's advisor
    cluster_analysis_output holds cluster summaries and no rank data, so it is quarantined
    no_device_events (docs/ingest_rules.md) rather than stored as a run of 0 device events."""
    import contextlib
    import io

    target = tmp_path_factory.mktemp("real") / "warehouse.duckdb"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["ingest", str(real_dir), "--warehouse", str(target), "--json"])
    report = json.loads(out.getvalue())
    quarantined = [(Path(q["path"]).name, q["reason"]) for q in report["quarantined"]]
    assert quarantined == [("cluster_analysis_output", "no_device_events")]
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
        "kernels.no_duplicated_events",
        "quarantine.nothing_quarantined",
        "ranks.device_work_on_every_rank",
        "step_breakdown.derived_rows_complete",
    ]
    # partial runs, named: set A's ranks 1 and 3 kept summaries only (SOURCES.md), and 14 of the
    # 16 ranks of the cluster set (D + E) are known from cluster_step_trace_time.csv alone
    partial = failing["ranks.device_work_on_every_rank"]
    assert partial["failing"] == 16
    # the advisor's cluster_analysis_output: summaries without rank data (no_device_events)
    quarantined = failing["quarantine.nothing_quarantined"]
    assert quarantined["failing"] == 1
    assert quarantined["severity"] == "warning"
    # msprof-analyze compute_advice/data/kernel_details.csv repeats one MatMulV3 row 4 times
    repeated = failing["kernels.no_duplicated_events"]
    assert repeated["failing"] == 4  # GX counts each of the 4 copies
    assert len(repeated["examples"]) == 4
    for row in repeated["examples"]:
        assert row["run_id"].startswith("compute-advice-data-")
        assert (row["name"], row["step"], row["start_ns"]) == (
            "aclnnMatmul_MatMulV3Common_MatMulV5",
            "19",
            "1736413974248200543",
        )
    # the two derived rows of the 16-rank set judged incomplete at ingest
    incomplete = failing["step_breakdown.derived_rows_complete"]
    assert incomplete["failing"] == 2
    assert {r["run_id"].split("-")[0] for r in incomplete["examples"]} == {"test"}
