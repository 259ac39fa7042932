"""`tracereplay regressions --json` over a nightly history in the torch_npu text layout.

The history is made of one real export (set B1: msinsight level1, two ranks, no chunk markers),
copied once per night with the profiler's collection time moved a day on and every duration of
step_trace_time.csv scaled by a run-level factor (0.3 % lognormal noise, +8 % from night 6): what
a nightly job profiling the same training step would leave. The runs have no chunks, so the
history is judged on the step breakdown (total, compute, exposed communication)."""

from __future__ import annotations

import csv
import json
import shutil
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from pipelines.cli import main
from pipelines.ingest.readers.step_trace import COLUMN_HEADERS

B1 = "msinsight/test/data/pytorch/text/level1"
NIGHTS, STEP_AT, STEP = 12, 6, 0.08
DAY_NS = 86_400 * 1_000_000_000
# every duration column of step_trace_time.csv but Preparing (the time before the step)
DURATION_COLUMNS = [h for c, h in COLUMN_HEADERS.items() if c != "preparing_ns"]


def _write_night(source: Path, dest: Path, night: int, factor: float) -> None:
    shutil.copytree(source, dest)
    for info_path in dest.glob("rank*_ascend_pt/profiler_info_*.json"):
        info = json.loads(info_path.read_text())
        info["end_info"]["collectionTimeEnd"] += night * DAY_NS
        info_path.write_text(json.dumps(info, indent=4))
    for trace_path in dest.glob("rank*_ascend_pt/ASCEND_PROFILER_OUTPUT/step_trace_time.csv"):
        with trace_path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            for column in DURATION_COLUMNS:
                row[column] = repr(float(row[column]) * factor)
        with trace_path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


@pytest.fixture(scope="module")
def real_history(real_dir: Path, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("real_history")
    rng = np.random.default_rng(8)
    nights = []
    for night in range(NIGHTS):
        factor = float(np.exp(rng.normal(0, 0.003))) * (1 + STEP if night >= STEP_AT else 1)
        nights.append(root / f"night_{night:02d}")
        _write_night(real_dir / B1, nights[-1], night, factor)
    warehouse = root / "warehouse.duckdb"
    assert main(["ingest", *map(str, nights), "--warehouse", str(warehouse)]) == 0
    return warehouse


def test_a_step_in_real_layout_runs_is_found_on_the_breakdown(real_history: Path, capsys) -> None:
    capsys.readouterr()
    rc = main(["regressions", "--warehouse", str(real_history), "--json"])
    rows = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert {r["metric"] for r in rows} <= {"total_ns", "compute_ns", "exposed_comm_ns"}
    assert "total_ns" in {r["metric"] for r in rows}
    for row in rows:
        assert row["status"] == "confirmed" and row["direction"] == "regression"
        # the run id carries the moved collection time (B1 collected 2025-01-09): night STEP_AT
        stamp = (date(2025, 1, 9) + timedelta(days=STEP_AT)).strftime("%Y%m%d")
        assert row["run_after"].startswith(f"ascend-pt-rank-{stamp}-"), row["run_after"]
        assert row["n_before"] == STEP_AT and row["n_after"] == NIGHTS - STEP_AT
        # the interval is of the realised factors' ratio, within 1 pp of the injected step
        assert abs(row["magnitude"] - STEP) < 0.01, row
        assert row["magnitude_lo"] < row["magnitude"] < row["magnitude_hi"], row


def test_the_nights_before_the_step_alone_raise_nothing(real_history: Path, capsys) -> None:
    capsys.readouterr()
    rc = main(["regressions", "--warehouse", str(real_history), "--json", "--metric", "n_steps"])
    assert rc == 0 and json.loads(capsys.readouterr().out) == []  # a constant series


def test_runs_without_facts_are_labelled_untagged_with_a_hint(real_history: Path, capsys) -> None:
    """The copied export carries no model fact: the table says '(untagged)', never 'None', and a
    note says how to give the runs their facts (they may be several workloads)."""
    capsys.readouterr()
    assert main(["regressions", "--warehouse", str(real_history)]) == 1
    out = capsys.readouterr().out
    assert "None" not in out
    assert "(untagged)" in out.splitlines()[1]
    assert f"note: {NIGHTS} run(s) have no model fact" in out
    assert "--tag model=NAME" in out
    assert max(len(line) for line in out.splitlines()) <= 120
