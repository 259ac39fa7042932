"""`tracereplay replay`: simulate -> write Ascend folders -> ingest -> extract_chunks -> replay the
measured tau under other schedules, reruns stored in the warehouse (replay_of), idempotent."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.analysis.chunks.chunk_store import extract_chunks
from pipelines.cli import main
from pipelines.ingest.load import ingest_paths
from pipelines.replay.store import ReplayError, replay_run, replay_run_id
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import open_store, queries
from pipelines.store.schema import CANONICAL_TABLES

SCHEDULES = ["cpp", "vpp", "vpp_pack"]


@pytest.fixture(scope="module")
def measured_folder(tmp_path_factory):
    """A DeepSeek CPP run (128K prompt, 16K chunks, pp=2, 3 % noise) as Ascend text exports."""
    result = simulate(
        131072, "cpp", model="deepseek-v3.1", chunk_size=16384, pp=2, noise=0.03, seed=11
    )
    folder = tmp_path_factory.mktemp("raw") / "deepseek-cpp"
    write_ascend_pt(result, folder)
    return result, folder


@pytest.fixture
def measured(measured_folder, tmp_path: Path):
    """(warehouse path, open connection, run_id, simulated result) with chunks extracted."""
    result, folder = measured_folder
    path = tmp_path / "warehouse.duckdb"
    con = open_store(path).open()
    run_id = ingest_paths([folder], con, progress=False).runs[0].run_id
    assert extract_chunks(con, [run_id]).total_chunks == 16
    yield path, con, run_id, result
    con.close()


def test_reruns_are_stored_as_runs_tagged_with_the_measured_run(measured) -> None:
    _, con, run_id, original = measured
    report = replay_run(con, run_id, SCHEDULES)
    runs = con.execute(
        "select run_id, source, model, schedule, pp, vp, replay_of from runs"
        " where replay_of is not null order by run_id"
    ).pl()
    expected = sorted(replay_run_id(run_id, s, "tabulated") for s in SCHEDULES)
    assert runs["run_id"].to_list() == expected
    assert set(runs["source"]) == {"sim"} and set(runs["replay_of"]) == {run_id}
    assert set(runs["model"]) == {"deepseek-v3.1"}
    vp = dict(zip(runs["schedule"], runs["vp"], strict=True))
    assert vp == {"cpp": 1, "vpp": 2, "vpp_pack": 2}
    for row in report.reruns:
        rid = row["run_id"]
        chunks = con.execute("select count(*) from chunks where run_id = ?", [rid]).fetchone()[0]
        assert chunks == 8 * 2 * (2 if row["schedule"] != "cpp" else 1)  # chunks x stages
        compute = con.execute(
            "select count(*) from slices where run_id = ? and lane = 'compute'", [rid]
        ).fetchone()[0]
        assert compute == chunks
        assert row["rows"]["comm_ops"] > 0 and row["rows"]["ranks"] == 2
    # replaying the run's own schedule with its own tau reproduces its makespan (3 % noise)
    cpp = next(r for r in report.reruns if r["schedule"] == "cpp")
    assert cpp["speedup"] == 1.0
    assert cpp["makespan_ns"] == pytest.approx(summarize(original)["makespan_ns"], rel=0.03)
    # a linear tau_k leaves less bubble under VPP than under CPP
    vpp = next(r for r in report.reruns if r["schedule"] == "vpp")
    assert vpp["speedup"] > 1.03 and vpp["bubble_ratio"] < cpp["bubble_ratio"]


def test_step_breakdown_accounts_for_each_ranks_span(measured) -> None:
    _, con, run_id, _ = measured
    replay_run(con, run_id, ["vpp_pack"])
    rid = replay_run_id(run_id, "vpp_pack", "tabulated")
    rows = con.execute("select * from step_breakdown where run_id = ? order by rank", [rid]).pl()
    assert rows.height == 2 and set(rows["origin"]) == {"sim"}
    assert rows["complete"].to_list() == [True, True]  # exact: every simulated task
    assert rows["incomplete_reason"].null_count() == 2
    # computing + exposed comm + free = the rank's first-to-last-task span = stage + receives
    accounted = rows["computing_ns"] + rows["comm_not_overlapped_ns"] + rows["free_ns"]
    assert (accounted == rows["stage_ns"] + rows["bubble_ns"]).all()
    exposed = rows["communication_ns"] - rows["comm_not_overlapped_ns"]
    assert (rows["overlapped_ns"] == exposed).all()
    busy = con.execute(
        "select rank, sum(busy_ns) as busy from chunks where run_id = ? group by rank order by 1",
        [rid],
    ).pl()
    assert busy["busy"].to_list() == rows["computing_ns"].to_list()  # chunks do not overlap


def test_replaying_twice_adds_no_rows(measured) -> None:
    _, con, run_id, _ = measured
    replay_run(con, run_id, SCHEDULES)
    counts = queries.row_counts(con, CANONICAL_TABLES)
    stamps = con.execute("select run_id, ingested_at from runs order by 1").fetchall()
    replay_run(con, run_id, SCHEDULES)
    assert queries.row_counts(con, CANONICAL_TABLES) == counts
    assert con.execute("select run_id, ingested_at from runs order by 1").fetchall() == stamps


def test_unknown_run_and_run_without_chunks_are_refused(measured) -> None:
    _, con, run_id, _ = measured
    with pytest.raises(ReplayError, match="no run 'nope'"):
        replay_run(con, "nope", SCHEDULES)
    with pytest.raises(ReplayError, match="unknown schedule"):
        replay_run(con, run_id, ["zigzag"])
    con.execute("delete from chunks where run_id = ?", [run_id])
    con.execute("delete from slices where run_id = ? and lane = 'host'", [run_id])
    with pytest.raises(ReplayError, match="has no chunks"):
        replay_run(con, run_id, SCHEDULES)


def test_replay_command(measured, capsys) -> None:
    path, con, run_id, _ = measured
    con.close()
    argv = ["replay", run_id, "--warehouse", str(path), "--schedules", "cpp,vpp"]
    assert main([*argv, "--cost", "fitted", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["replay_of"] == run_id and out["cost"] == "fitted"
    assert [r["kind"] for r in out["rows"]] == ["measured", "replay", "replay"]
    assert [r["schedule"] for r in out["rows"]] == ["cpp", "cpp", "vpp"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "speed-up" in text and "cpp (measured)" in text and "1.000x" in text
    check = open_store(path).open(read_only=True)
    try:
        ids = check.execute("select run_id from runs where replay_of = ? order by 1", [run_id])
        assert [r[0] for r in ids.fetchall()] == [
            replay_run_id(run_id, s, c) for s in ("cpp", "vpp") for c in ("fitted", "tabulated")
        ]
    finally:
        check.close()
    assert main(["replay", "missing", "--warehouse", str(path)]) == 2
    assert "no run 'missing'" in capsys.readouterr().err
    assert main([*argv[:4], "--schedules", "cpp,bogus"]) == 2


def test_no_write_compares_without_writing(measured, capsys) -> None:
    path, con, run_id, _ = measured
    counts = queries.row_counts(con, CANONICAL_TABLES)
    con.close()
    assert main(["replay", run_id, "--warehouse", str(path), "--no-write", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == 6  # measured + cpp, dcpp, vpp, vpp_async, vpp_pack
    check = open_store(path).open(read_only=True)
    try:
        assert queries.row_counts(check, CANONICAL_TABLES) == counts
        assert pl.DataFrame(rows)["makespan_ns"].min() > 0
    finally:
        check.close()


def test_fits_leave_the_reruns_out(measured) -> None:
    from pipelines.analysis.tau.tau_points import load_tau_points

    _, con, run_id, _ = measured
    replay_run(con, run_id, SCHEDULES)
    chunks, _ = load_tau_points(con, segment=False)
    assert set(chunks["run_id"]) == {run_id}  # reruns re-use measured tau: no new repeats
