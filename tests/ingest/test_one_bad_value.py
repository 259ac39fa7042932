"""One bad value costs its own entry, not the file (issue: hostile input, round three): a Kineto
event whose name is null or a number, whose pid is a float, a null entry; a trace_view.json entry
that is not an object or repeats a key; a kernel_details.csv cell that is NaN or inf, and one LF
line break in a CRLF file. Each file still loads, one row fewer where a row was bad, and the
quarantine names the file, the position and why (docs/ingest_rules.md)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from pipelines.ingest.load import ingest_paths
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.sim.writers_kineto import write_kineto_trace
from pipelines.store import FileStore


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("clean")
    result = simulate([32768], "cpp", chunk_size=16384, pp=2)
    write_kineto_trace(result, root / "kineto")
    write_ascend_pt(result, root / "ascend")
    return {"kineto": root / "kineto", "ascend": root / "ascend"}


def _ingest(folder: Path, store_path: Path):
    report = ingest_paths([folder], FileStore(store_path), progress=False)
    (run,) = report.runs
    return run, report.quarantined


def _variant(source: Path, target: Path, pattern: str, change: Callable[[bytes], bytes]) -> Path:
    shutil.copytree(source, target)
    path = sorted(target.rglob(pattern))[0]
    path.write_bytes(change(path.read_bytes()))
    return target


def _kineto(change: Callable[[list], None]) -> Callable[[bytes], bytes]:
    def apply(data: bytes) -> bytes:
        doc = json.loads(data)
        change(doc["traceEvents"])
        return json.dumps(doc).encode()

    return apply


def _first_kernel(events: list) -> dict:
    return next(e for e in events if isinstance(e, dict) and e.get("cat") == "kernel")


KINETO = {
    "name null": (
        _kineto(lambda e: _first_kernel(e).update(name=None)),
        "got `null` - at `$.name`",
    ),
    "name a number": (
        _kineto(lambda e: _first_kernel(e).update(name=7)),
        "got `int` - at `$.name`",
    ),
    "pid a float": (
        _kineto(lambda e: _first_kernel(e).update(pid=1.5)),
        "got `float` - at `$.pid`",
    ),
    "null entry": (_kineto(lambda e: e.insert(5, None)), "traceEvents[5]: Expected `object`"),
}


@pytest.mark.parametrize("case", sorted(KINETO))
def test_kineto_bad_event_costs_itself(runs, tmp_path: Path, case: str) -> None:
    change, why = KINETO[case]
    clean, _ = _ingest(runs["kineto"], tmp_path / "clean.duckdb")
    folder = _variant(runs["kineto"], tmp_path / "bad", "*.pt.trace.json", change)
    run, quarantined = _ingest(folder, tmp_path / "bad.duckdb")
    assert run.ranks == clean.ranks
    assert clean.rows["kernels"] - run.rows["kernels"] <= 1  # the bad event at most
    # its slice, and the overlap-lane slices derived from it when it was communication
    assert clean.rows["slices"] - run.rows["slices"] <= 3
    assert run.dropped_rows == {"invalid_event": 1}
    (item,) = quarantined
    assert item.reason == "invalid_event" and why in item.detail and "traceEvents[" in item.detail


def _trace_view(change: Callable[[list], list | str]) -> Callable[[bytes], bytes]:
    def apply(data: bytes) -> bytes:
        out = change(json.loads(data))
        return (out if isinstance(out, str) else json.dumps(out)).encode()

    return apply


def _repeat_key(events: list) -> str:
    text = json.dumps(events)
    at = text.index('"ph"', text.index('"ph": "X"') - 200)  # inside a complete event
    return text[:at] + '"ph": "X", ' + text[at:]


TRACE_VIEW = {
    "a number as an entry": (_trace_view(lambda e: [*e[:3], 42, *e[3:]]), "not an object"),
    "a key given twice": (_trace_view(_repeat_key), "duplicate key 'ph'"),
}


@pytest.mark.parametrize("case", sorted(TRACE_VIEW))
def test_trace_view_bad_entry_costs_itself(runs, tmp_path: Path, case: str) -> None:
    change, why = TRACE_VIEW[case]
    clean, _ = _ingest(runs["ascend"], tmp_path / "clean.duckdb")
    folder = _variant(runs["ascend"], tmp_path / "bad", "trace_view.json", change)
    run, quarantined = _ingest(folder, tmp_path / "bad.duckdb")
    assert clean.rows["slices"] - run.rows["slices"] <= 1
    assert run.rows["kernels"] == clean.rows["kernels"]
    (item,) = quarantined
    assert item.path.endswith("trace_view.json") and item.reason == "invalid_event"
    assert why in item.detail and "traceEvents[" in item.detail


def _csv_cell(header: str, value: str, line: int) -> Callable[[bytes], bytes]:
    def apply(data: bytes) -> bytes:
        lines = data.decode().splitlines(keepends=True)
        column = [h.strip() for h in lines[0].split(",")].index(header)
        cells = lines[line - 1].split(",")
        cells[column] = value
        lines[line - 1] = ",".join(cells)
        return "".join(lines).encode()

    return apply


def _one_lf_in_crlf(data: bytes) -> bytes:
    text = data.decode().replace("\r\n", "\n").replace("\n", "\r\n")
    second = text.index("\r\n", text.index("\r\n") + 2)
    return (text[:second] + "\n" + text[second + 2 :]).encode()


KERNEL_DETAILS = {
    "NaN duration": (_csv_cell("Duration(us)", "NaN", 3), "line 3: non_finite_duration", 1),
    "inf start": (_csv_cell("Start Time(us)", "inf", 4), "line 4: unparsable_timestamp", 1),
    "one LF in a CRLF file": (_one_lf_in_crlf, None, 0),
}


@pytest.mark.parametrize("case", sorted(KERNEL_DETAILS))
def test_kernel_details_bad_cell_costs_its_row(runs, tmp_path: Path, case: str) -> None:
    change, why, lost = KERNEL_DETAILS[case]
    clean, _ = _ingest(runs["ascend"], tmp_path / "clean.duckdb")
    folder = _variant(runs["ascend"], tmp_path / "bad", "kernel_details.csv", change)
    run, quarantined = _ingest(folder, tmp_path / "bad.duckdb")
    assert clean.rows["kernels"] - run.rows["kernels"] == lost
    if why is None:
        assert quarantined == []
        return
    (item,) = quarantined
    assert item.path.endswith("kernel_details.csv") and item.reason == "invalid_rows"
    assert why in item.detail


DB_LEVEL1 = Path("msinsight/test/data/pytorch/db/level1")  # a real torch_npu SQLite export


def _db_variant(real_dir: Path, tmp_path: Path, statement: str, rank: int = 0) -> Path:
    folder = tmp_path / "db"
    shutil.copytree(real_dir / DB_LEVEL1, folder)
    db = folder / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    con = sqlite3.connect(db / f"ascend_pytorch_profiler_{rank}.db")
    con.execute(statement)
    con.commit()
    con.close()
    return folder


SQLITE = {
    "task start 'abc'": (
        "update TASK set startNs = 'abc' where rowid = (select rowid from TASK limit 1 offset 5)",
        {"unparsable_timestamp": 1},
    ),
    "task start 1e300": (
        "update TASK set startNs = 1e300 where rowid = (select rowid from TASK limit 1 offset 5)",
        {"timestamp_out_of_range": 1},
    ),
    "host call start 'abc'": (
        "update PYTORCH_API set startNs = 'abc'"
        " where rowid = (select rowid from PYTORCH_API limit 1 offset 3)",
        {"unparsable_timestamp": 1},
    ),
    "rank id 2^40": ("update RANK_DEVICE_MAP set rankId = 1099511627776", {}),
}


# one case in the default run; the other three (a real database copied and ingested each, ~2 s)
# in CI's slow pass
FAST_SQLITE = "task start 'abc'"


@pytest.mark.real
@pytest.mark.parametrize(
    "case",
    [c if c == FAST_SQLITE else pytest.param(c, marks=pytest.mark.slow) for c in sorted(SQLITE)],
)
def test_sqlite_bad_value_costs_its_row(real_dir: Path, tmp_path: Path, case: str) -> None:
    statement, dropped = SQLITE[case]
    rank = 1 if "host call" in case else 0  # rank 1's export holds PYTORCH_API
    clean, _ = _ingest(real_dir / DB_LEVEL1, tmp_path / "clean.duckdb")
    run, quarantined = _ingest(
        _db_variant(real_dir, tmp_path, statement, rank), tmp_path / "bad.duckdb"
    )
    assert run.ranks == clean.ranks == 2
    # the dropped row is named (task id or call) in one quarantine row of its database
    assert [q.reason for q in quarantined] == (["invalid_rows"] if dropped else [])
    assert all(code in quarantined[0].detail for code in dropped)
    assert run.dropped_rows == dropped
    assert clean.rows["kernels"] - run.rows["kernels"] <= 1
    # the bad row, and the overlap slices derived from it when it was communication
    assert 0 <= clean.rows["slices"] - run.rows["slices"] <= 3
