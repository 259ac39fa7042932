"""Round four of the hostile-input campaign (issue 36): the classes it found failing, each as a
case that failed before its fix.

* a `.json.gz` with bytes after its gzip stream (zero padding, stray bytes) was quarantined
  (`invalid_json` / `not_gzip`) though its JSON is whole: it loads every row;
* a gzip stream that inflates a thousandfold is inflated one bounded block at a time;
* a kernel_details.csv name cell with bytes that are not UTF-8 lost every kernel of the rank;
* an object-form trace_view.json with one entry that is no object lost the whole file;
* a Kineto event whose `ts` is text (`"abc"`) lost the whole file (`invalid_json`);
* a trace event, a Kineto event or an SQLite row dropped for one value was counted but not
  named: its file now has one quarantine row with the row's position and reason;
* an SQLite COMMUNICATION_OP start that is text failed the rank (`read_error`).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import zlib
from pathlib import Path

import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.ingest.readers import gz
from pipelines.ingest.readers.cluster import read_cluster_step_trace_rows
from pipelines.ingest.readers.communication import read_communication_rows
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.sim.writers_kineto import write_kineto_trace
from pipelines.store import FileStore


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("round4")
    result = simulate([32768], "cpp", chunk_size=16384, pp=2)
    write_kineto_trace(result, root / "kineto" / "run")
    write_ascend_pt(result, root / "ascend" / "run")
    return {"kineto": root / "kineto" / "run", "ascend": root / "ascend" / "run"}


def _ingest(folder: Path, store: Path):
    report = ingest_paths([folder], FileStore(store), progress=False)
    (run,) = report.runs
    return run, report.quarantined


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def _gzip_in_place(path: Path, tail: bytes) -> Path:
    packed = path.with_name(path.name + ".gz")
    packed.write_bytes(gzip.compress(path.read_bytes()) + tail)
    path.unlink()
    return packed


TAILS = {"zero padding": b"\0" * 4096, "stray bytes": b"garbage\n", "one newline": b"\n"}


@pytest.mark.parametrize("tail", sorted(TAILS))
@pytest.mark.parametrize("kind", ["ascend", "kineto"])
def test_gzip_followed_by_other_bytes_loads_whole(
    clean: dict[str, Path], tmp_path: Path, kind: str, tail: str
) -> None:
    base, _ = _ingest(clean[kind], tmp_path / "clean.duckdb")
    folder = _copy(clean[kind], tmp_path / "padded")
    pattern = "trace_view.json" if kind == "ascend" else "*.pt.trace.json"
    for path in sorted(folder.rglob(pattern)):
        _gzip_in_place(path, TAILS[tail])
    run, quarantined = _ingest(folder, tmp_path / "padded.duckdb")
    assert quarantined == []
    assert run.rows == base.rows and run.dropped == {}


def test_cut_gzip_is_still_quarantined(clean: dict[str, Path], tmp_path: Path) -> None:
    folder = _copy(clean["ascend"], tmp_path / "cut")
    packed = _gzip_in_place(sorted(folder.rglob("trace_view.json"))[0], b"")
    packed.write_bytes(packed.read_bytes()[:-40])  # the stream's end and trailer gone
    report = ingest_paths([folder], FileStore(tmp_path / "w.duckdb"), progress=False)
    assert [q.reason for q in report.quarantined] == ["not_gzip"]


def test_gzip_scan_finds_the_end_and_inflates_in_bounded_blocks(tmp_path: Path) -> None:
    data = b"[" + b" " * (64 << 20) + b"]"  # 64 MiB that deflate to about 64 KB
    path = tmp_path / "t.json.gz"
    stream = gzip.compress(data)
    path.write_bytes(stream + b"\0" * 100)
    largest = 0

    def block(chunk: bytes) -> None:
        nonlocal largest
        largest = max(largest, len(chunk))

    found = gz.scan(path, block)
    assert (found.inflated, found.data_end, found.trailing) == (len(data), len(stream), 100)
    assert largest <= 1 << 20  # never the whole inflated stream at once
    assert gzip.decompress(gz.without_trailing(path, found.data_end).read_bytes()) == data
    two = tmp_path / "two.json.gz"  # two members, as `cat a.gz b.gz` makes: both read
    two.write_bytes(gzip.compress(b"[1,") + gzip.compress(b"2]"))
    assert gz.scan(two).inflated == 5 and gz.scan(two).trailing == 0
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(stream[:-8])
    with pytest.raises((EOFError, zlib.error)):
        gz.scan(broken)


def test_non_utf8_name_cell_keeps_every_kernel(clean: dict[str, Path], tmp_path: Path) -> None:
    base, _ = _ingest(clean["ascend"], tmp_path / "clean.duckdb")
    folder = _copy(clean["ascend"], tmp_path / "latin1")
    path = sorted(folder.rglob("kernel_details.csv"))[0]
    lines = path.read_bytes().split(b"\n")
    cells = lines[1].split(b",")
    cells[4] += b"\xe9\xff"  # a name written in another code page
    lines[1] = b",".join(cells)
    path.write_bytes(b"\n".join(lines))
    run, quarantined = _ingest(folder, tmp_path / "latin1.duckdb")
    assert quarantined == [] and run.rows["kernels"] == base.rows["kernels"]


def test_object_form_entry_that_is_no_object_costs_itself(
    clean: dict[str, Path], tmp_path: Path
) -> None:
    base, _ = _ingest(clean["ascend"], tmp_path / "clean.duckdb")
    folder = _copy(clean["ascend"], tmp_path / "object")
    path = sorted(folder.rglob("trace_view.json"))[0]
    events = json.loads(path.read_text())
    index = next(i for i, e in enumerate(events) if e.get("ph") == "X")
    events[index] = "not an event"
    path.write_text(json.dumps({"traceEvents": events}))
    run, quarantined = _ingest(folder, tmp_path / "object.duckdb")
    assert run.rows["slices"] == base.rows["slices"] - 1
    (row,) = quarantined
    assert row.reason == "invalid_event" and f"traceEvents[{index}]: not an object" in row.detail


def _kineto_kernel(events: list) -> int:
    return next(i for i, e in enumerate(events) if e.get("cat") == "kernel")


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [("ts", "abc", "unparsable_timestamp"), ("dur", "x", "unparsable_duration")],
)
def test_kineto_text_time_costs_its_event_and_is_named(
    clean: dict[str, Path], tmp_path: Path, field: str, value: str, code: str
) -> None:
    base, _ = _ingest(clean["kineto"], tmp_path / "clean.duckdb")
    folder = _copy(clean["kineto"], tmp_path / "text")
    path = sorted(folder.glob("*rank0*.pt.trace.json"))[0]
    doc = json.loads(path.read_text())
    index = _kineto_kernel(doc["traceEvents"])
    doc["traceEvents"][index][field] = value
    path.write_text(json.dumps(doc))
    run, quarantined = _ingest(folder, tmp_path / "text.duckdb")
    assert run.rows["kernels"] == base.rows["kernels"] - 1 and run.dropped == {code: 1}
    (row,) = quarantined
    assert row.reason == "invalid_rows" and f"traceEvents[{index}]: {code}" in row.detail


def test_trace_view_dropped_event_is_named(clean: dict[str, Path], tmp_path: Path) -> None:
    base, _ = _ingest(clean["ascend"], tmp_path / "clean.duckdb")
    folder = _copy(clean["ascend"], tmp_path / "ts")
    path = sorted(folder.rglob("trace_view.json"))[0]
    events = json.loads(path.read_text())
    event = next(e for e in events if e.get("ph") == "X" and e.get("dur"))
    event["ts"] = "soon"
    path.write_text(json.dumps(events))
    run, quarantined = _ingest(folder, tmp_path / "ts.duckdb")
    assert run.dropped == {"unparsable_timestamp": 1}
    assert run.rows["slices"] == base.rows["slices"] - 1
    (row,) = quarantined
    assert row.reason == "invalid_rows" and Path(row.path).name == "trace_view.json"
    assert f"event {event['name']!r}" in row.detail and "ts soon" in row.detail


DB_LEVEL1 = Path("msinsight/test/data/pytorch/db/level1")  # a real torch_npu SQLite export


@pytest.mark.real
def test_sqlite_comm_op_with_text_start_costs_the_op(real_dir: Path, tmp_path: Path) -> None:
    clean_run, _ = _ingest(real_dir / DB_LEVEL1, tmp_path / "clean.duckdb")
    folder = tmp_path / "db"
    shutil.copytree(real_dir / DB_LEVEL1, folder)
    con = sqlite3.connect(
        folder / "rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"
    )
    op_id = con.execute("select opId from COMMUNICATION_OP order by startNs limit 1").fetchone()[0]
    con.execute("update COMMUNICATION_OP set startNs = 'x' where opId = ?", [op_id])
    con.commit()
    con.close()
    run, quarantined = _ingest(folder, tmp_path / "bad.duckdb")
    assert run.ranks == clean_run.ranks == 2
    # the op takes its start from its sub-tasks (issue 36; tests/ingest/
    # test_malformed_round5_rows.py has the op whose sub-tasks cannot give it back)
    assert run.rows == clean_run.rows
    (row,) = quarantined
    assert row.reason == "repaired_rows"
    assert f"COMMUNICATION_OP opId {op_id}: unparsable_timestamp" in row.detail


@pytest.mark.parametrize(
    ("cell", "named"),
    [("abc", "line 2: Computing is 'abc'"), ("-5", "line 2: Computing is a negative time (-5)")],
)
def test_step_trace_bad_cell_costs_its_row(
    clean: dict[str, Path], tmp_path: Path, cell: str, named: str
) -> None:
    """step_trace_time.csv quarantined the whole file for one text cell (and stored a negative
    duration as it came); now the row is named and the file's other rows load (a file whose
    every row is bad is still unparsable_rows)."""
    folder = _copy(clean["ascend"], tmp_path / "steps")
    path = sorted(folder.rglob("step_trace_time.csv"))[0]
    header, row = path.read_text().splitlines()[:2]
    cells = row.split(",")
    bad = ",".join([cells[0], cell, *cells[2:]])
    good = ",".join(["2", *cells[1:]])
    path.write_text(f"{header}\n{bad}\n{good}\n")
    report = ingest_paths([folder], FileStore(tmp_path / "w.duckdb"), progress=False)
    (row_q,) = report.quarantined
    assert row_q.reason == "invalid_rows" and named in row_q.detail
    con = FileStore(tmp_path / "w.duckdb").open(read_only=True)
    try:
        steps = con.execute(
            "select step from step_breakdown where origin = 'profiler' and rank = 0"
        ).fetchall()
    finally:
        con.close()
    assert steps == [(2,)]


@pytest.mark.parametrize("form", ["array", "object"])
def test_trace_view_name_that_is_an_object_costs_its_event(
    clean: dict[str, Path], tmp_path: Path, form: str
) -> None:
    """A complete event whose name is a JSON object was kept under the object's text (DuckDB
    reads it into the VARCHAR column) or its Python repr (msgspec): now it is set aside."""
    base, _ = _ingest(clean["ascend"], tmp_path / "clean.duckdb")
    folder = _copy(clean["ascend"], tmp_path / form)
    path = sorted(folder.rglob("trace_view.json"))[0]
    events = json.loads(path.read_text())
    next(e for e in events if e.get("ph") == "X" and e.get("dur"))["name"] = {"x": 1}
    path.write_text(json.dumps(events if form == "array" else {"traceEvents": events}))
    run, quarantined = _ingest(folder, tmp_path / f"{form}.duckdb")
    assert run.rows["slices"] == base.rows["slices"] - 1
    (row,) = quarantined
    assert row.reason in ("invalid_rows", "invalid_event") and "1 entry set aside" in row.detail


CLUSTER_SET = Path("msinsight/server/src/test/test_data/cluster_analysis_output")


@pytest.mark.real
@pytest.mark.parametrize(("column", "value"), [("Computing", "abc"), ("Index", "x")])
def test_cluster_step_trace_bad_cell_costs_its_row(
    real_dir: Path, tmp_path: Path, column: str, value: str
) -> None:
    """cluster_step_trace_time.csv: a time cell that is no number was kept as NULL without a
    word, and a rank row whose Index is no rank lost the whole file; now the row is set aside
    and named, the other rows load."""
    source = real_dir / CLUSTER_SET / "cluster_step_trace_time.csv"
    clean_table, clean_lines = read_cluster_step_trace_rows(source)
    lines = source.read_text(encoding="utf-8-sig").splitlines()
    header = lines[0].split(",")
    cells = lines[3].split(",")
    cells[header.index(column)] = value
    lines[3] = ",".join(cells)
    path = tmp_path / "cluster_step_trace_time.csv"
    path.write_text("\n".join(lines) + "\n")
    table, set_aside = read_cluster_step_trace_rows(path)
    assert clean_lines == [] and table.height == clean_table.height - 1
    assert set_aside == [f"line 4: {column} is no number"]


@pytest.mark.real
@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda op: op["Communication Time Info"].update({"Elapse Time(ms)": "abc"}), "'abc'"),
        (lambda op: op["Communication Time Info"].update({"Wait Time(ms)": -1}), "-1"),
        (lambda op: op.update({"Communication Time Info": [1, 2]}), "list, not an object"),
    ],
    ids=["elapse text", "wait negative", "info a list"],
)
def test_communication_bad_time_costs_its_op(real_dir: Path, tmp_path: Path, change, why) -> None:
    """communication.json: a time that is no finite number >= 0 was read as a missing time
    without a word ('abc', -1), or failed the file with AttributeError (info a list)."""
    source = real_dir / "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
    folder = _copy(source, tmp_path / "rank0_ascend_pt")
    path = folder / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    clean_table, clean_lines = read_communication_rows(path)
    doc = json.loads(path.read_text())
    ops = next(iter(doc.values()))["collective"]
    key = next(iter(ops))
    change(ops[key])
    path.write_text(json.dumps(doc))
    table, set_aside = read_communication_rows(path)
    assert clean_lines == [] and table.height == clean_table.height - 1 and len(set_aside) == 1
    assert key in set_aside[0] and why in set_aside[0]


def test_broken_link_to_a_trace_is_named(clean: dict[str, Path], tmp_path: Path) -> None:
    """A `*.pt.trace.json` link whose target is gone was skipped without a word; it is
    quarantined `not_a_file` (a broken link) and the run's other traces load."""
    base, _ = _ingest(clean["kineto"], tmp_path / "clean.duckdb")
    folder = _copy(clean["kineto"], tmp_path / "linked")
    (folder / "gone.pt.trace.json").symlink_to(tmp_path / "nowhere.json")
    run, quarantined = _ingest(folder, tmp_path / "linked.duckdb")
    assert run.rows == base.rows
    (row,) = quarantined
    assert row.reason == "not_a_file" and "a broken link" in row.detail
