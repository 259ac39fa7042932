"""slices.no_overlapping_copies: a device task stored twice on its stream (a writer that repeated
its events a few µs later) fails it; the HCCL sub-tasks of one task, which really overlap on the
communication stream of a real Level1 export, do not (issue 36 deliver 3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main
from pipelines.quality.check_catalog import expectation
from pipelines.quality.check_queries import probe, select_runs

KEY = "slices.no_overlapping_copies"
LEVEL1 = Path("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")
SUBTASK = '{"Task Id": 807, "Subtask Id": %d}'


def _failing(con: duckdb.DuckDBPyConnection) -> int:
    select_runs(con, None)
    return probe(con, expectation(KEY)).failing


def _slices(rows: list[tuple]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(
        "create table slices (run_id varchar, rank integer, lane varchar, thread varchar,"
        " name varchar, start_ns bigint, dur_ns bigint, args varchar)"
    )
    con.execute("create table runs (run_id varchar)")
    con.execute("insert into runs values ('r1')")
    con.executemany("insert into slices values ('r1', 0, ?, ?, ?, ?, ?, ?)", rows)
    return con


def test_the_same_task_again_inside_itself_fails() -> None:
    task = ("compute", "Stream 2", "MatMul", 1_000_000, 20_000, SUBTASK % 0)
    again = (*task[:3], 1_005_000, *task[4:])  # 5 µs later, the same args
    assert _failing(_slices([task])) == 0
    assert _failing(_slices([task, again])) == 1


def test_sub_tasks_of_one_task_and_other_streams_pass() -> None:
    first = ("comm", "Stream 4", "SDMA", 1_000_000, 137_323, SUBTASK % 0)
    rows = [
        first,
        ("comm", "Stream 4", "SDMA", 1_000_280, 137_323, SUBTASK % 1),  # another sub-task
        ("comm", "Stream 5", "SDMA", 1_000_280, 137_323, SUBTASK % 0),  # another stream
        ("host", "Thread 1", "SDMA", 1_000_280, 137_323, SUBTASK % 0),  # not a device lane
        ("comm", "Stream 4", "SDMA", 1_137_323, 137_323, SUBTASK % 0),  # after it ended
    ]
    assert _failing(_slices(rows)) == 0


def _copies_later(events: list, shift_us: float) -> list:
    """Every complete event of the Ascend Hardware process again, `shift_us` later."""
    hardware = {
        e["pid"]
        for e in events
        if e.get("ph") == "M" and (e.get("args") or {}).get("name") == "Ascend Hardware"
    }
    again = [
        dict(e, ts=f"{float(e['ts']) + shift_us:.3f}")
        for e in events
        if e.get("ph") == "X" and e.get("pid") in hardware
    ]
    return [*events, *again]


def test_real_export_passes_and_its_tasks_repeated_fail(real_dir: Path, tmp_path, capsys):
    """The real Level1 rank: its communication stream holds same-name, same-length sub-tasks
    that overlap (the rule is not vacuous there), and it passes; every hardware task repeated
    5 µs later is named at ingest and fails `check`."""
    source = real_dir / LEVEL1
    if not source.is_dir():
        pytest.skip(f"{source} not found")
    clean = tmp_path / "clean"
    shutil.copytree(source, clean / source.name)
    warehouse = str(tmp_path / "clean.duckdb")
    assert main(["ingest", str(clean), "--warehouse", warehouse, "--no-progress"]) == 0
    assert KEY not in capsys.readouterr().err
    with duckdb.connect(warehouse, read_only=True) as con:
        (overlapping,) = con.execute(
            "select count(*) from slices a join slices b using (run_id, rank, lane, thread,"
            " name, dur_ns) where a.lane in ('compute', 'comm') and b.start_ns > a.start_ns"
            " and b.start_ns < a.start_ns + a.dur_ns"
        ).fetchone()
        assert overlapping > 0  # sub-tasks of one HCCL task, told apart by their args
        assert _failing(con) == 0

    broken = tmp_path / "broken"
    shutil.copytree(source, broken / source.name)
    path = next(broken.rglob("trace_view.json"))
    path.chmod(0o644)
    path.write_text(json.dumps(_copies_later(json.loads(path.read_text()), 5.0)))
    warehouse = str(tmp_path / "broken.duckdb")
    assert main(["ingest", str(broken), "--warehouse", warehouse, "--no-progress"]) == 0
    assert f"warning: {KEY}:" in capsys.readouterr().err
    assert main(["check", "--warehouse", warehouse, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    failed = {(r["table"], r["expectation"]) for r in report["results"] if not r["passed"]}
    assert ("slices", "no_overlapping_copies") in failed
