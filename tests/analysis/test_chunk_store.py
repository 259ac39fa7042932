"""extract_chunks: ingested run -> segmented chunks in the warehouse, idempotent, per-run report."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines import warehouse as wh
from pipelines.analysis.chunk_store import extract_chunks
from pipelines.analysis.segment import PROFILER_STEP_REGEX
from pipelines.cli import main
from pipelines.ingest.load import ingest_paths
from pipelines.sim.metrics import chunks_frame
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt

KEY = ["rank", "vstage", "request_id", "chunk_idx"]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """A two-request VPP run written as Ascend text exports: (result, run folder)."""
    result = simulate(
        [65536, 32768], "vpp", model="qwen3-coder-30b-a3b", chunk_size=16384, noise=0.03, seed=5
    )
    folder = tmp_path_factory.mktemp("raw") / "qwen-vpp"
    write_ascend_pt(result, folder)
    return result, folder


@pytest.fixture
def ingested(simulated, warehouse):
    """(connection, run_id, simulator truth) with the run ingested."""
    result, folder = simulated
    report = ingest_paths([folder], warehouse, progress=False)
    assert report.ok and len(report.runs) == 1
    run_id = report.runs[0].run_id
    return warehouse, run_id, chunks_frame(result, run_id)


def _stored(con, run_id: str) -> pl.DataFrame:
    return con.execute("select * from chunks where run_id = ? order by all", [run_id]).pl()


def test_extract_stores_the_simulators_chunks(ingested) -> None:
    con, run_id, truth = ingested
    report = extract_chunks(con)
    assert [r.run_id for r in report.runs] == [run_id]
    run = report.runs[0]
    assert run.chunks == truth.height == 6 * 4  # (4 + 2 chunks) x 4 virtual stages
    assert run.markers == truth.height and run.empty_markers == 0
    assert run.unassigned_ns == 0 and run.unassigned_fraction == 0.0
    assert run.device_busy_ns == pytest.approx(truth["busy_ns"].sum(), rel=1e-3)
    stored = _stored(con, run_id)
    joined = truth.join(stored, on=KEY, how="inner", suffix="_db")
    assert joined.height == truth.height
    assert ((joined["busy_ns_db"] / joined["busy_ns"] - 1).abs() < 0.01).all()
    assert (joined["tokens"] == joined["tokens_db"]).all()


def test_extract_twice_changes_nothing(ingested) -> None:
    con, run_id, _ = ingested
    extract_chunks(con)
    first = _stored(con, run_id)
    counts = wh.row_counts(con)
    again = extract_chunks(con, [run_id])
    assert again.total_chunks == first.height
    assert wh.row_counts(con) == counts
    assert _stored(con, run_id).equals(first)


def test_unknown_and_simulated_runs_are_not_segmented(ingested) -> None:
    con, run_id, truth = ingested
    sim_id = "replayed~sim"
    wh.insert_frame(
        con,
        "runs",
        pl.DataFrame({"run_id": [sim_id], "source": ["sim"], "content_hash": ["x"]}),
    )
    wh.insert_frame(con, "chunks", truth.with_columns(pl.lit(sim_id).alias("run_id")))
    report = extract_chunks(con, ["nope", sim_id, run_id])
    assert report.unknown == ["nope"]
    assert [r for r, _ in report.skipped] == [sim_id]
    assert [r.run_id for r in report.runs] == [run_id]
    # the simulator's exact chunks are left alone, also when every run is extracted
    extract_chunks(con)
    assert _stored(con, sim_id).height == truth.height


def test_a_rule_that_matches_nothing_clears_stale_chunks(ingested) -> None:
    con, run_id, _ = ingested
    extract_chunks(con)
    report = extract_chunks(con, [run_id], marker_regex=r"^no_such_marker\[(?P<k>\d+)\]$")
    run = report.runs[0]
    assert (run.chunks, run.markers) == (0, 0)
    assert run.unassigned_fraction == 1.0 and run.unassigned_ns == run.device_busy_ns > 0
    assert _stored(con, run_id).is_empty()


def test_chunks_command(ingested, tmp_path: Path, capsys) -> None:
    con, run_id, truth = ingested
    path = tmp_path / "warehouse.duckdb"
    con.close()
    assert main(["chunks", "--warehouse", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["total_chunks"] == truth.height
    assert out["runs"][0]["run_id"] == run_id
    assert main(["chunks", "--warehouse", str(path), "--run", "missing"]) == 2
    assert "no run 'missing'" in capsys.readouterr().err
    assert main(["chunks", "--warehouse", str(tmp_path / "absent.duckdb")]) == 2
    # one ProfilerStep window per rank in a simulated trace: one chunk per rank
    assert main(["chunks", "--warehouse", str(path), "--profiler-steps", "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["runs"][0]
    assert (steps["chunks"], steps["unassigned_ns"]) == (2, 0)


@pytest.mark.real
def test_real_export_without_markers_segments_by_profiler_step(real_dir, warehouse) -> None:
    folder = real_dir / "msinsight" / "test" / "data" / "pytorch" / "text" / "level1"
    run_id = ingest_paths([folder], warehouse, progress=False).runs[0].run_id
    plain = extract_chunks(warehouse).runs[0]
    assert (plain.run_id, plain.chunks, plain.markers) == (run_id, 0, 0)
    assert plain.unassigned_fraction == 1.0
    by_step = extract_chunks(warehouse, [run_id], PROFILER_STEP_REGEX, renumber=True).runs[0]
    assert by_step.chunks == by_step.markers == 2 and by_step.unassigned_ns == 0
    stored = _stored(warehouse, run_id)
    # ProfilerStep#50 on both ranks, renumbered k=0
    assert stored["rank"].to_list() == [0, 1] and stored["chunk_idx"].to_list() == [0, 0]
    assert (stored["busy_ns"] > 0).all()
