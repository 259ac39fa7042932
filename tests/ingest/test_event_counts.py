"""`ingest`'s `events=` per run is the number of events read from the run's inputs, counted here
straight from the raw files (json / gzip / sqlite3): the overlap lanes a reader derives for an
input without its own (Kineto, the SQLite export) are stored as slices too, and were counted as
events (HTA's simple_add: events=991 for 838 complete events, 154 of them derived rows)."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from pipelines.cli import main

KINETO = "kineto/HolisticTraceAnalysis/tests/data"
DB = "msinsight/test/data/pytorch/db/level1"
TEXT = "msinsight/test/data/pytorch/text/level1"


def _kineto_events(path: Path) -> int:
    """Complete events of a Kineto trace but the profiler's own whole-capture span (cat
    `Trace`, 'PyTorch Profiler (0)'), which no lane holds."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return sum(1 for e in events if e.get("ph") == "X" and e.get("cat") != "Trace")


def _db_events(rank_dir: Path) -> int:
    """Rows of the SQLite export's timed tables: device tasks, HCCL ops, CANN and PyTorch calls."""
    (db,) = (rank_dir / "ASCEND_PROFILER_OUTPUT").glob("ascend_pytorch_profiler_*.db")
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        tables = ("TASK", "COMMUNICATION_OP", "CANN_API", "PYTORCH_API")
        return sum(con.execute(f"select count(*) from {t}").fetchone()[0] for t in tables)


def _text_events(rank_dir: Path) -> int:
    events = json.loads((rank_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    return sum(1 for e in events if e.get("ph") == "X")


def _ingest(paths: list[Path], warehouse: Path, capsys) -> dict[str, int]:
    argv = ["ingest", *map(str, paths), "--warehouse", str(warehouse), "--json", "--no-progress"]
    assert main(argv) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    return {r["origin"]: r["events"] for r in runs}


@pytest.mark.parametrize("again", [False, True], ids=["loaded", "unchanged"])
def test_events_per_run_are_the_inputs_events(
    real_dir: Path, tmp_path: Path, capsys, again: bool
) -> None:
    paths = [real_dir / KINETO, real_dir / DB, real_dir / TEXT]
    warehouse = tmp_path / "w.duckdb"
    got = _ingest(paths, warehouse, capsys)
    if again:  # a re-ingest counts the stored rows (run_row_counts), not the frames written
        got = _ingest(paths, warehouse, capsys)
    expected = {
        str(trace.parent): _kineto_events(trace)
        for trace in sorted((real_dir / KINETO).rglob("*.json.gz"))
    }
    expected[str(real_dir / DB)] = sum(_db_events(d) for d in (real_dir / DB).iterdir())
    expected[str(real_dir / TEXT)] = sum(_text_events(d) for d in (real_dir / TEXT).iterdir())
    assert got == expected
    # measured: simple_add 837, trace_filter 4,810, db 3,726 + 3,725, text 4,384 + 4,385
    assert sorted(expected.values()) == [837, 4810, 7451, 8769]
