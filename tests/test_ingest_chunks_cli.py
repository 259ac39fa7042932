"""`tracereplay ingest` segments runs that carry chunk markers right away (--no-chunks skips it)."""

from __future__ import annotations

import json
from pathlib import Path

from pipelines.cli import main
from pipelines.replay.tables import chunks_frame
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import open_store


def _written_run(tmp_path: Path):
    result = simulate([65536], "cpp", chunk_size=16384, pp=2)
    write_ascend_pt(result, tmp_path / "raw" / "cpp_run")
    return result


def test_ingest_stores_the_chunks_of_marked_runs(tmp_path: Path, capsys) -> None:
    result = _written_run(tmp_path)
    target = tmp_path / "w.duckdb"
    argv = ["ingest", str(tmp_path / "raw"), "--json", "--warehouse", str(target)]
    assert main(argv) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    expected = chunks_frame(result, "sim").height
    assert [r["chunks"] for r in runs] == [expected]
    con = open_store(target).open(read_only=True)
    busy = con.execute("select sum(busy_ns) from chunks").fetchone()[0]
    con.close()
    assert busy == int(chunks_frame(result, "sim")["busy_ns"].sum())
    assert main(argv) == 0  # again: same rows
    con = open_store(target).open(read_only=True)
    assert con.execute("select count(*) from chunks").fetchone()[0] == expected
    con.close()


def test_no_chunks_leaves_the_chunks_table_empty(tmp_path: Path, capsys) -> None:
    _written_run(tmp_path)
    target = tmp_path / "w.duckdb"
    argv = ["ingest", str(tmp_path / "raw"), "--no-chunks", "--warehouse", str(target)]
    assert main(argv) == 0
    assert "chunks=" not in capsys.readouterr().out
    con = open_store(target).open(read_only=True)
    assert con.execute("select count(*) from chunks").fetchone()[0] == 0
    con.close()


def test_reingest_keeps_the_chunks_of_a_stored_rule(tmp_path: Path, capsys) -> None:
    _written_run(tmp_path)
    target = str(tmp_path / "w.duckdb")
    argv = ["ingest", str(tmp_path / "raw"), "--json", "--warehouse", target]
    assert main(argv) == 0
    assert main(["chunks", "--profiler-steps", "--warehouse", target]) == 0
    capsys.readouterr()
    assert main(argv) == 0  # the same bytes again: segmented by the stored rule
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [(r["status"], r["chunks"]) for r in runs] == [("unchanged", 2)]
    # new bytes (a re-export): the replacing run is segmented with the stored rule again
    info = next((tmp_path / "raw").rglob("profiler_info_0.json"))
    info.write_text(json.dumps({**json.loads(info.read_text()), "re_export": 1}))
    assert main(argv) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [(r["status"], r["chunks"]) for r in runs] == [("replaced", 2)]
