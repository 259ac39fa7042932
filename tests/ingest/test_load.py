"""End-to-end ingestion of the real sets into a warehouse (acceptance points of the spine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.ingest.load import ingest_paths
from pipelines.store import open_store, queries
from pipelines.store.schema import CANONICAL_TABLES

SETS = {
    "A": ["msinsight/test/st/level2"],
    "B0": ["msinsight/test/data/pytorch/text/level0"],
    "B1": ["msinsight/test/data/pytorch/text/level1"],
    "D": [f"msinsight/server/src/test/test_data/test_rank_{r}" for r in (0, 1)],
    "G": ["msprof-analyze"],
}


@pytest.mark.parametrize("name", sorted(SETS))
def test_sets_ingest_without_quarantine(real_dir: Path, warehouse, name: str) -> None:
    report = ingest_paths([real_dir / p for p in SETS[name]], warehouse, progress=False)
    # G holds msprof-analyze's cluster summary of a job whose rank folders are not there: no
    # device work, so it is quarantined with its reason instead of stored as an empty run; and
    # its compute_advice kernel_details.csv repeats one MatMulV3 line 4 times (lines 10-13): the
    # three copies are set aside as duplicate_row, the file's other rows load
    expected = (
        [("kernel_details.csv", "invalid_rows"), ("cluster_analysis_output", "no_device_events")]
        if name == "G"
        else []
    )
    assert sorted((Path(q.path).name, q.reason) for q in report.quarantined) == sorted(expected)
    if name == "G":
        (copies,) = [q for q in report.quarantined if q.reason == "invalid_rows"]
        assert "duplicate_row" in copies.detail
    assert report.skipped == []
    assert report.runs and all(r.rows["ranks"] >= 1 for r in report.runs)


def test_set_a_ranks_devices_and_pipeline_groups(real_dir: Path, warehouse) -> None:
    report = ingest_paths([real_dir / SETS["A"][0]], warehouse, progress=False)
    (run,) = report.runs
    rows = warehouse.execute(
        "select rank, device_id, pp_stage, groups from ranks where run_id = ? order by rank",
        [run.run_id],
    ).fetchall()
    assert [(r[0], r[1], r[2]) for r in rows] == [(0, 0, 0), (1, 1, 0), (2, 4, 1), (3, 5, 1)]
    pp = {r[0]: [g["ranks"] for g in json.loads(r[3]) if g["name"] == "pp"] for r in rows}
    assert pp == {0: [[0, 2]], 1: [[1, 3]], 2: [[0, 2]], 3: [[1, 3]]}
    facts = warehouse.execute(
        "select source, tp, pp, dp, world_size, software from runs where run_id = ?",
        [run.run_id],
    ).fetchone()
    assert facts[:5] == ("ascend_pt", 1, 2, 2, 4)
    assert json.loads(facts[5]) == {"cann": "8.3.RC1", "torch_npu": "2.7.1"}
    bubble = warehouse.execute(
        "select origin, bubble_ns, p2p_bubble_ns from step_breakdown"
        " where run_id = ? and rank = 2 order by origin",
        [run.run_id],
    ).fetchall()
    assert bubble[0][0] == "derived" and bubble[0][1] == 0 and bubble[0][2] > 70_000_000
    assert bubble[1] == ("profiler", 0, None)


def test_tags_override_run_facts(real_dir: Path, warehouse) -> None:
    tags = {"model": "qwen3-0.6b", "pp": "4", "team": "perf"}
    (run,) = ingest_paths([real_dir / SETS["A"][0]], warehouse, tags=tags, progress=False).runs
    row = warehouse.execute(
        "select model, pp, tags from runs where run_id = ?", [run.run_id]
    ).fetchone()
    assert row[0] == "qwen3-0.6b" and row[1] == 4 and json.loads(row[2])["team"] == "perf"


@pytest.mark.slow
def test_cli_msinsight_twice_changes_nothing(real_dir: Path, tmp_path: Path, capsys) -> None:
    target = tmp_path / "x.duckdb"
    argv = ["ingest", str(real_dir / "msinsight"), "--json", "--warehouse", str(target)]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    con = open_store(target).open(read_only=True)
    counts = queries.row_counts(con, CANONICAL_TABLES)
    con.close()
    assert main(argv) == 0
    second = json.loads(capsys.readouterr().out)
    con = open_store(target).open(read_only=True)
    assert queries.row_counts(con, CANONICAL_TABLES) == counts
    con.close()
    assert [r["run_id"] for r in first["runs"]] == [r["run_id"] for r in second["runs"]]
    assert first["quarantined"] == []
    # the two lone topology folders of msinsight's server fixtures: listed with why, not runs
    assert {Path(x["path"]).parent.name for x in first["skipped"]} == {
        "communication_group",
        "metadata",
    }
    assert all("not a run" in x["reason"] for x in first["skipped"])
    keys = {"run_id", "source", "ranks", "events", "kernels", "quarantined"}
    assert all(keys <= set(r) for r in first["runs"])
    by_source = {}
    for r in first["runs"]:
        by_source.setdefault(r["source"], []).append(r)
    assert sorted(by_source) == ["ascend_pt", "ascend_pt_db"]
    b1 = next(r for r in first["runs"] if r["origin"].endswith("/pytorch/text/level1"))
    assert b1["run_id"].startswith("ascend-pt-rank-20250109-0748-")
    assert b1["ranks"] == 2 and b1["kernels"] == 382 and b1["events"] > 8000
    assert counts["runs"] == len(first["runs"]) and counts["quarantine"] == 0


def test_same_bytes_in_two_folders_are_two_runs(tmp_path: Path, warehouse) -> None:
    """Two origins are two runs even with identical bytes (docs/run_identity.md): otherwise
    changing one folder would delete the other's rows."""
    from tests.ingest.malformed.corpus import good_run

    first = ingest_paths([good_run(tmp_path / "one")], warehouse, progress=False).runs[0]
    second = ingest_paths([good_run(tmp_path / "two")], warehouse, progress=False).runs[0]
    assert first.run_id != second.run_id and second.status == "loaded"
    assert queries.row_counts(warehouse, ["runs", "kernels"]) == {"runs": 2, "kernels": 6}


def test_a_trace_of_host_lanes_only_is_quarantined(real_dir: Path, warehouse, tmp_path) -> None:
    """Set B1's rank 0 trace_view.json cut to its host lanes (Python, CANN) and their metadata:
    no device slice and no kernel file, so no device work: quarantined no_device_events with
    what to do, as a Kineto trace without device events is, never stored as a run."""
    source = real_dir / SETS["B1"][0] / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    events = json.loads((source / "trace_view.json").read_text())
    lanes = {
        e["pid"]: e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    host = [
        e for e in events if e.get("ph") == "M" or lanes.get(e.get("pid")) in ("Python", "CANN")
    ]
    assert 0 < len(host) < len(events)
    out = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "trace_view.json").write_text(json.dumps(host))
    report = ingest_paths([tmp_path / "rank0_ascend_pt"], warehouse, progress=False)
    assert report.runs == []
    (item,) = report.quarantined
    assert item.reason == "no_device_events" and "host events only" in item.detail
