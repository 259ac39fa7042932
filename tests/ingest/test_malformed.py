"""The bad-input corpus: every malformed input is quarantined with its reason code, the valid
run given in the same call still loads, and the CLI exits 2."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.ingest.load import ingest_paths
from tests.ingest.malformed.corpus import (
    CASES,
    DROPPED_CASES,
    _bad_event,
    _in_rank,
    _trace_with,
    good_run,
    pattern_named_runs,
)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_quarantined_and_the_good_run_still_loads(
    tmp_path: Path, warehouse, case: str
) -> None:
    build, reason = CASES[case]
    good = good_run(tmp_path / "inputs")
    given, bad_file = build(tmp_path / "inputs")
    report = ingest_paths([given, good], warehouse, progress=False)
    found = {(Path(q.path), q.reason) for q in report.quarantined}
    assert (bad_file.resolve(), reason) in found, report.quarantined
    assert not report.ok
    good_runs = [r for r in report.runs if Path(r.origin) == good.resolve()]
    assert len(good_runs) == 1 and good_runs[0].rows["kernels"] == 3
    stored = warehouse.execute(
        "select reason from quarantine where path = ?", [str(bad_file.resolve())]
    ).fetchall()
    assert (reason,) in stored


def test_not_found_path(tmp_path: Path, warehouse) -> None:
    report = ingest_paths([tmp_path / "nowhere"], warehouse, progress=False)
    assert [q.reason for q in report.quarantined] == ["not_found"]


def test_unparsable_rank_still_loads_the_rank_data(tmp_path: Path, warehouse) -> None:
    build, _ = CASES["profiler_info_unparsable_rank"]
    given, _info = build(tmp_path)
    report = ingest_paths([given], warehouse, progress=False)
    assert [r.rows["kernels"] for r in report.runs] == [3]  # a lone rank: rank 0


def test_cli_exit_code_and_stderr_lines(tmp_path: Path, capsys) -> None:
    build, reason = CASES["kernel_csv_excel_mangled"]
    good = good_run(tmp_path / "inputs")
    given, bad_file = build(tmp_path / "inputs")
    code = main(
        ["ingest", str(good), str(given), "--json", "--warehouse", str(tmp_path / "w.duckdb")]
    )
    captured = capsys.readouterr()
    assert code == 2
    assert f"quarantined {bad_file.resolve()}: {reason}: " in captured.err
    payload = json.loads(captured.out)
    assert [r["kernels"] for r in payload["runs"]] == [3]
    assert payload["quarantined"][0]["reason"] == reason


def test_cli_bad_tag_is_a_bad_argument(tmp_path: Path, capsys) -> None:
    good = good_run(tmp_path)
    code = main(["ingest", str(good), "--tag", "novalue", "--warehouse", str(tmp_path / "w.db")])
    assert code == 2
    assert "key=value" in capsys.readouterr().err


def _own_events_only(con, runs: dict[Path, int]) -> None:
    """Every folder of `runs` is one run holding exactly its own kernels and slices."""
    stored = con.execute("select run_id, origin from runs").fetchall()
    by_origin = {Path(origin): run_id for run_id, origin in stored}
    assert len(stored) == len(runs) and set(by_origin) == {p.resolve() for p in runs}
    for folder, n in runs.items():
        run_id = by_origin[folder.resolve()]
        i = n - 1
        for table, extra in (("kernels", 0), ("slices", 1)):
            names = con.execute(
                f"select name from {table} where run_id = ? and lane is distinct from 'overlap'"
                if table == "slices"
                else f"select name from {table} where run_id = ?",
                [run_id],
            ).fetchall()
            own = sorted(f"k{i}_{j}" for j in range(n))
            got = sorted(name for (name,) in names if not name.startswith("ProfilerStep#"))
            assert got == own and len(names) == n + extra, (folder.name, table, names)


def test_paths_are_never_patterns_library(tmp_path: Path, warehouse) -> None:
    runs = pattern_named_runs(tmp_path / "inputs")
    good = good_run(tmp_path / "inputs")
    report = ingest_paths([*runs, good], warehouse, progress=False)
    assert report.quarantined == [], report.quarantined
    assert len(report.runs) == len(runs) + 1
    warehouse.execute("delete from runs where origin = ?", [str(good.resolve())])
    _own_events_only(warehouse, runs)


def test_paths_are_never_patterns_cli(tmp_path: Path, capsys) -> None:
    from pipelines.store import open_store

    runs = pattern_named_runs(tmp_path / "inputs")
    target = tmp_path / "w.duckdb"
    code = main(["ingest", *map(str, runs), "--json", "--no-chunks", "--warehouse", str(target)])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["quarantined"] == []
    assert sorted(r["kernels"] for r in payload["runs"]) == sorted(runs.values())
    con = open_store(target).open()
    try:
        _own_events_only(con, runs)
    finally:
        con.close()


@pytest.mark.parametrize("case", sorted(DROPPED_CASES))
def test_bad_value_drops_its_row_not_its_file(tmp_path: Path, warehouse, case: str) -> None:
    build, table, kept, dropped = DROPPED_CASES[case]
    good = good_run(tmp_path / "inputs")
    given, bad_file = build(tmp_path / "inputs")
    report = ingest_paths([given, good], warehouse, progress=False)
    (run,) = [r for r in report.runs if Path(r.origin) != good.resolve()]
    # the dropped rows are named in one quarantine row of their file (issue 36 deliver 3)
    named = report.quarantined
    total = sum(dropped.values())
    if total:
        (row,) = named
        assert row.reason == "invalid_rows" and Path(row.path).name == bad_file.name
        assert row.detail.startswith(f"{total} entr"), row.detail
        assert all(code in row.detail for code in dropped), row.detail
    else:
        assert named == [], named
    assert run.dropped == dropped and run.as_json()["dropped_rows"] == dropped
    stored = warehouse.execute("select dropped_rows from runs where run_id = ?", [run.run_id])
    assert stored.fetchone()[0] == (json.dumps(dropped, sort_keys=True) if dropped else None)
    rows = warehouse.execute(
        f"select count(*) from {table} where run_id = ? and name not like 'ProfilerStep#%'"
        + (" and lane <> 'overlap'" if table == "slices" else ""),
        [run.run_id],
    ).fetchone()[0]
    assert rows == kept
    assert [r.rows["kernels"] for r in report.runs if Path(r.origin) == good.resolve()] == [3]


def test_cli_run_line_counts_dropped_rows(tmp_path: Path, capsys) -> None:
    build = DROPPED_CASES["trace_negative_and_missing_dur"][0]
    given, _ = build(tmp_path / "inputs")
    good = good_run(tmp_path / "inputs")
    target = str(tmp_path / "w.duckdb")
    # a dropped row is named in a quarantine row of its file: exit 2 (an input was quarantined)
    assert main(["ingest", str(given), str(good), "--no-chunks", "--warehouse", target]) == 2
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert sum("dropped=2" in line for line in lines) == 1
    assert "invalid_rows: 2 entries set aside" in captured.err
    assert "dur -5): negative_duration" in captured.err
    # the same folder again: its stored run is unchanged (not read again), its counts reported
    assert main(["ingest", str(given), "--json", "--warehouse", target]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["runs"][0]["dropped_rows"] == {"missing_duration": 1, "negative_duration": 1}


def test_float_typed_ts_is_kept_exactly(tmp_path: Path, warehouse) -> None:
    build = _in_rank(
        "trace_view.json", _trace_with(_bad_event('"ts": 1700000000000000.123, "dur": 1.5'))
    )
    given, _ = build(tmp_path)
    (run,) = ingest_paths([given], warehouse, progress=False).runs
    row = warehouse.execute(
        "select start_ns, dur_ns from slices where run_id = ? and name = 'bad'", [run.run_id]
    ).fetchone()
    assert row == (1_700_000_000_000_000_123, 1_500) and run.dropped == {}


def test_bom_and_gzip_trace_view_load(tmp_path: Path, warehouse) -> None:
    events = _trace_with(_bad_event('"ts": "3.000", "dur": 2'))
    bom = _in_rank("trace_view.json", b"\xef\xbb\xbf" + events)(tmp_path / "bom")[0]
    gz = _in_rank("trace_view.json.gz", gzip.compress(events))(tmp_path / "gz")[0]
    wrapped = b'\xef\xbb\xbf{"traceEvents": ' + events + b"}"
    both = _in_rank("trace_view.json.gz", gzip.compress(wrapped))(tmp_path / "gz_object")[0]
    good = good_run(tmp_path / "good")
    report = ingest_paths([bom, gz, both, good], warehouse, progress=False)
    assert report.quarantined == [], report.quarantined
    slices = {Path(r.origin).parent.name: r.rows["slices"] for r in report.runs}
    assert slices == {"bom": 3, "gz": 3, "gz_object": 3, "good": 0}


def test_fifo_given_on_the_command_line_is_quarantined(tmp_path: Path, warehouse) -> None:
    fifo = tmp_path / "trace_view.json"
    os.mkfifo(fifo)
    good = good_run(tmp_path / "inputs")
    report = ingest_paths([fifo, good], warehouse, progress=False)
    assert [(q.path, q.reason) for q in report.quarantined] == [(str(fifo), "not_a_file")]
    assert [r.rows["kernels"] for r in report.runs] == [3]


def test_quote_in_sqlite_table_name_reads(tmp_path: Path, warehouse, real_dir: Path) -> None:
    source = real_dir / "msinsight/test/data/pytorch/db/level1/rank1_ascend_pt"
    folder = tmp_path / "db_job" / "rank1_ascend_pt"
    shutil.copytree(source, folder)
    db = folder / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_1.db"
    with sqlite3.connect(db) as con:
        con.execute('create table "we""ird\'name" (x integer)')
    good = good_run(tmp_path / "inputs")
    report = ingest_paths([folder.parent, good], warehouse, progress=False)
    assert report.quarantined == [], report.quarantined
    assert sorted(r.rows["kernels"] for r in report.runs) == [3, 191]


def test_control_characters_in_paths_are_escaped_on_stderr(tmp_path: Path, capsys) -> None:
    build, reason = CASES["empty_trace_view"]
    given, bad_file = build(tmp_path / "in\nputs\x1b[31m")
    good = good_run(tmp_path / "good")
    code = main(["ingest", str(given), str(good), "--warehouse", str(tmp_path / "w.duckdb")])
    err = capsys.readouterr().err
    assert code == 2
    line = f"quarantined {bad_file.resolve()!s}: {reason}: ".replace("\n", "\\n")
    assert line.replace("\x1b", "\\x1b") in err
    assert "\x1b" not in err and all(row.startswith("quarantined ") for row in err.splitlines())
