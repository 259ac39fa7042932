"""msprof-analyze cluster output: set E (16 ranks, PP=2, V2023) and set G (8 ranks, empty Step)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import conform
from pipelines.ingest.readers.cluster import (
    read_cluster,
    read_cluster_step_trace,
    stage_ranks,
)

SET_E = "msinsight/server/src/test/test_data/cluster_analysis_output"
SET_G = "msprof-analyze/test/resource/advisor/cluster_analysis_output"
MS = 1_000_000


@pytest.mark.real
def test_set_e_stages_and_bubbles(real_dir: Path) -> None:
    frames = read_cluster(real_dir / SET_E)
    assert frames.quarantined == []
    assert frames.run["source"] == "cluster"
    assert frames.run["world_size"] == 16 and frames.run["pp"] == 2
    ranks = frames.tables["ranks"]
    assert ranks.get_column("rank").to_list() == list(range(16))
    stage = dict(ranks.select("rank", "pp_stage").iter_rows())
    assert {r for r, s in stage.items() if s == 0} == set(range(8))
    assert {r for r, s in stage.items() if s == 1} == set(range(8, 16))

    breakdown = frames.tables["step_breakdown"]
    assert breakdown.height == 16
    assert set(breakdown.get_column("origin")) == {"cluster"}
    assert set(breakdown.get_column("step")) == {2}
    bubble = dict(breakdown.select("rank", "bubble_ns").iter_rows())
    assert all(bubble[r] == 0 for r in range(8))
    assert all(178 * MS <= bubble[r] <= 196 * MS for r in range(8, 16))
    assert max(bubble.values()) == 195_498_280  # rank 11: 195498.28 µs, converted exactly
    rank8 = breakdown.filter(pl.col("rank") == 8).row(0, named=True)
    assert rank8["computing_ns"] == 80_072_450  # 80072.45015234381 µs
    # Stage + Bubble = device window = Computing + Not Overlapped + Free (to µs rounding)
    assert rank8["stage_ns"] + rank8["bubble_ns"] == pytest.approx(
        rank8["computing_ns"] + rank8["comm_not_overlapped_ns"] + rank8["free_ns"], abs=1_000
    )
    conform("step_breakdown", breakdown)
    conform("ranks", ranks)


@pytest.mark.real
def test_set_e_comm_ops_and_groups(real_dir: Path) -> None:
    frames = read_cluster(real_dir / SET_E)
    ops = frames.tables["comm_ops"]
    assert set(ops.get_column("rank")) == {0, 1}
    send = ops.filter(pl.col("op") == "hcom_send__822_0")
    assert send.height == 2 and send.get_column("is_p2p").all()
    assert set(send.get_column("group_kind")) == {"p2p"}
    assert send.get_column("group_name").unique().to_list() == ["13337953553061386822"]
    first = send.filter(pl.col("rank") == 0).row(0, named=True)
    assert first["start_ns"] == 1_695_115_378_810_042_500
    assert first["dur_ns"] == 896_487  # 0.89648691015625 ms
    assert first["op_type"] == "send"
    assert not ops.filter(pl.col("op").str.starts_with("hcom_broadcast")).get_column("is_p2p").any()
    conform("comm_ops", ops)
    # the old-format group file: rank 0's groups include its cross-stage pair [0, 8]
    groups = json.loads(frames.tables["ranks"].filter(pl.col("rank") == 0).get_column("groups")[0])
    assert {"name": "collective", "ranks": [0, 8]} in groups
    # per-rank data present: the spine asks for no cluster comm_ops
    assert "comm_ops" not in read_cluster(real_dir / SET_E, with_comm_ops=False).tables


@pytest.mark.real
def test_set_g_empty_step_single_stage(real_dir: Path) -> None:
    table = read_cluster_step_trace(real_dir / SET_G / "cluster_step_trace_time.csv")
    assert stage_ranks(table) == [tuple(range(8))]
    frames = read_cluster(real_dir / SET_G)
    assert frames.run["world_size"] == 8 and frames.run["pp"] == 1
    breakdown = frames.tables["step_breakdown"]
    assert breakdown.height == 8
    assert breakdown.get_column("step").null_count() == 8
    assert breakdown.filter(pl.col("rank") == 1).get_column("free_ns").item() == 1_488_610_059
    assert set(frames.tables["ranks"].get_column("pp_stage")) == {0}
    ops = frames.tables["comm_ops"]
    assert ops.height == 4 and ops.get_column("step").null_count() == 4  # step key "step"


def test_newer_columns_pp_index_and_preparing(tmp_path: Path) -> None:
    folder = tmp_path / "cluster_analysis_output"
    folder.mkdir()
    (folder / "cluster_step_trace_time.csv").write_text(
        "Step,Type,Index,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,"
        "Stage,Bubble,Communication(Not Overlapped and Exclude Receive),Preparing,"
        "DP Index,PP Index,TP Index\n"
        "13,rank,0,1.5,2,0,2,3,6.5,0,2,0.25,0,0,0\n"
        "13,rank,2,1,2,0,2,3,6,0,2,0.125,0,1,0\n"
        '13,stage,"(0, 2)",1.5,2,0,2,3,6.5,0,2,0.25,,,\n'
    )
    frames = read_cluster(folder)
    stages = dict(frames.tables["ranks"].select("rank", "pp_stage").iter_rows())
    assert stages == {0: 0, 2: 1}  # PP Index wins over the stage rows
    prep = dict(frames.tables["step_breakdown"].select("rank", "preparing_ns").iter_rows())
    assert prep == {0: 250, 2: 125}


def test_malformed_cluster_inputs(tmp_path: Path) -> None:
    folder = tmp_path / "cluster_analysis_output"
    folder.mkdir()
    with pytest.raises(QuarantineError) as err:
        read_cluster(folder)
    assert err.value.reason == "no_cluster_data"
    (folder / "cluster_step_trace_time.csv").write_text("Step,Computing\n1,2\n")
    (folder / "communication_group.json").write_text('{"collective": [[0, 1]]')  # truncated
    with pytest.raises(QuarantineError) as err:
        read_cluster(folder)
    assert err.value.reason == "no_cluster_data"
    assert "missing_columns" in err.value.detail and "truncated_json" in err.value.detail
    # one good file is enough; the bad ones are listed
    (folder / "cluster_communication.json").write_text(
        '{"p2p": {"step3": {"hcom_send__1_0@7": {"0": {"Communication Time Info": '
        '{"Start Timestamp(us)": 10.5, "Elapse Time(ms)": 0.002}}}}}}'
    )
    frames = read_cluster(folder)
    assert {q.reason for q in frames.quarantined} == {"missing_columns", "truncated_json"}
    row = frames.tables["comm_ops"].row(0, named=True)
    assert (row["rank"], row["step"], row["start_ns"], row["dur_ns"]) == (0, 3, 10_500, 2_000)
