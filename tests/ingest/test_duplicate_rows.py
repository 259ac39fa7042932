"""A device row written twice is one row (issue 36, round three): a kernel_details.csv line, a
TASK row of the SQLite export or a Kineto kernel event that repeats an earlier one exactly is
counted once, dropped as `duplicate_row` and named by its position (docs/ingest_rules.md). Each
count is checked against one computed from the raw file by other means (Python's csv module,
SQLite's `select distinct`, json)."""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.ingest.readers import ascend_db, kineto
from pipelines.ingest.readers.kernel_details import read_kernel_details
from pipelines.store import FileStore

COMPUTE_ADVICE = "msprof-analyze/test/ut/advisor/compute_advice/data/kernel_details.csv"
LEVEL1_TEXT = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
LEVEL1_DB = "msinsight/test/data/pytorch/db/level1/rank0_ascend_pt"
KINETO = "kineto/HolisticTraceAnalysis/tests/data/trace_filter/sampled_rank-0.json.gz"


def _distinct_rows(path: Path) -> tuple[int, int]:
    """(data rows, distinct data rows) of a CSV, by Python's csv module."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = [tuple(row) for row in list(csv.reader(handle))[1:] if row]
    return len(rows), len(set(rows))


def test_real_export_repeating_one_row_counts_it_once(real_dir: Path) -> None:
    """msprof-analyze's compute_advice kernel_details.csv holds one MatMulV3 line 4 times."""
    path = real_dir / COMPUTE_ADVICE
    rows, distinct = _distinct_rows(path)
    assert (rows, distinct) == (29, 26)
    read = read_kernel_details(path)
    assert read.kernels.height == distinct
    assert read.dropped == {"duplicate_row": rows - distinct}
    assert read.set_aside[0] == "line 11: duplicate_row (a copy of line 10)"
    matmul = read.kernels.filter(read.kernels["name"] == "aclnnMatmul_MatMulV3Common_MatMulV5")
    assert matmul.height == 1


def test_rows_differing_in_an_unread_column_are_both_kept(tmp_path: Path, real_dir: Path) -> None:
    """All columns decide, not only the ones read: a copy whose Task ID differs is kept."""
    source = (real_dir / LEVEL1_TEXT / "ASCEND_PROFILER_OUTPUT/kernel_details.csv").read_text()
    lines = source.splitlines(keepends=True)
    copy = lines[5]
    cells = copy.split(",")
    other_task = ",".join([*cells[:2], cells[2] + "9", *cells[3:]])  # Task ID: not read
    path = tmp_path / "kernel_details.csv"
    path.write_text("".join([*lines[:6], copy, copy, other_task, *lines[6:]]))
    rows, distinct = _distinct_rows(path)
    assert (rows, distinct) == (194, 192)
    read = read_kernel_details(path)
    assert read.kernels.height == distinct
    assert read.dropped == {"duplicate_row": 2}
    assert read.set_aside[:2] == [
        "line 7: duplicate_row (a copy of line 6)",
        "line 8: duplicate_row (a copy of line 6)",
    ]


def test_a_bad_row_written_twice_is_dropped_for_its_value(tmp_path: Path) -> None:
    header = "Name,Start Time(us),Duration(us)\n"
    path = tmp_path / "kernel_details.csv"
    path.write_text(header + "a,1.0,abc\na,1.0,abc\nb,2.0,1.0\n")
    read = read_kernel_details(path)
    assert read.kernels.height == 1
    assert read.dropped == {"unparsable_duration": 2}


def test_sqlite_task_written_twice_counts_once(tmp_path: Path, real_dir: Path) -> None:
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real_dir / LEVEL1_DB, rank)
    clean = ascend_db.read_rank(rank)
    db = next(rank.rglob("ascend_pytorch_profiler_*.db"))
    with sqlite3.connect(db) as con:
        task = con.execute("select globalTaskId from COMPUTE_TASK_INFO limit 1 offset 5").fetchone()
        con.execute("insert into TASK select * from TASK where globalTaskId = ?", task)
        every, distinct = (
            con.execute(
                f"select count(*) from {table} t join COMPUTE_TASK_INFO c using (globalTaskId)"
            ).fetchone()[0]
            for table in ("TASK", "(select distinct * from TASK)")
        )
    assert every == distinct + 1
    read = ascend_db.read_rank(rank)
    assert read.dropped == {"duplicate_row": 1}
    assert read.tables["kernels"].filter(~read.tables["kernels"]["is_comm"]).height == distinct
    assert read.tables["kernels"].equals(clean.tables["kernels"])
    assert read.tables["slices"].equals(clean.tables["slices"])
    (item,) = read.quarantined
    assert item.reason == "invalid_rows"
    assert f"TASK globalTaskId {task[0]}: duplicate_row" in item.detail


def test_kineto_kernel_event_written_twice_counts_once(tmp_path: Path, real_dir: Path) -> None:
    doc = json.loads(gzip.decompress((real_dir / KINETO).read_bytes()))
    events = doc["traceEvents"]
    kernels = [i for i, e in enumerate(events) if e.get("ph") == "X" and e.get("cat") == "kernel"]
    events.insert(kernels[3] + 1, dict(events[kernels[3]]))
    path = tmp_path / "rank-0.pt.trace.json"
    path.write_text(json.dumps(doc))
    raw = [json.dumps(e, sort_keys=True) for e in events if e.get("cat") == "kernel"]
    assert len(raw) == len(set(raw)) + 1
    clean = kineto.read_trace(real_dir / KINETO)
    read = kineto.read_trace(path)
    assert read.dropped == {"duplicate_row": 1}
    assert read.tables["kernels"].height == clean.tables["kernels"].height
    assert read.tables["kernels"].filter(read.tables["kernels"]["name"].is_not_null()).height
    (item,) = read.quarantined
    assert f"traceEvents[{kernels[3] + 1}]: duplicate_row" in item.detail


@pytest.mark.parametrize("copies", [1, 3])
def test_ingest_reports_the_copies_and_sums_count_the_kernel_once(
    tmp_path: Path, real_dir: Path, copies: int
) -> None:
    """End to end: the run's kernels equal the clean export's, `dropped_rows` says
    duplicate_row, and the quarantine names the file."""
    clean_run = tmp_path / "clean" / "rank0_ascend_pt"
    shutil.copytree(real_dir / LEVEL1_TEXT, clean_run)
    twice_run = tmp_path / "twice" / "rank0_ascend_pt"
    shutil.copytree(real_dir / LEVEL1_TEXT, twice_run)
    details = twice_run / "ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    lines = details.read_text().splitlines(keepends=True)
    details.write_text("".join([*lines[:20], *[lines[19]] * copies, *lines[20:]]))

    def kernels(folder: Path, store: Path) -> tuple[object, list, float]:
        report = ingest_paths([folder], FileStore(store), progress=False)
        (run,) = report.runs
        con = FileStore(store).open()
        try:
            total = con.sql("select count(*), sum(dur_ns) from kernels").fetchone()
        finally:
            con.close()
        return run, report.quarantined, total

    _, _, clean_total = kernels(clean_run.parent, tmp_path / "clean.duckdb")
    run, quarantined, total = kernels(twice_run.parent, tmp_path / "twice.duckdb")
    assert total == clean_total
    assert run.dropped_rows == {"duplicate_row": copies}
    (item,) = quarantined
    assert item.reason == "invalid_rows" and item.path.endswith("kernel_details.csv")
    assert "line 21: duplicate_row (a copy of line 20)" in item.detail
