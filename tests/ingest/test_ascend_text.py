"""ascend_text.read_rank on whole rank folders of the real exports (sets A, B1, D, G)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.ingest.readers.ascend_text import read_rank

SET_A = "msinsight/test/st/level2"
SET_D = "msinsight/server/src/test/test_data"


@pytest.fixture(scope="module")
def set_a(real_dir: Path):
    return {r: read_rank(real_dir / SET_A / f"rank_{r}_ascend_pt") for r in range(4)}


def test_set_a_identity_and_devices(set_a) -> None:
    assert {r: f.rank for r, f in set_a.items()} == {0: 0, 1: 1, 2: 2, 3: 3}
    assert {r: f.device_id for r, f in set_a.items()} == {0: 0, 1: 1, 2: 4, 3: 5}
    assert all(not f.quarantined for f in set_a.values())
    assert set_a[2].info["software"] == {"torch_npu": "2.7.1", "cann": "8.3.RC1"}
    # ranks 1 and 3 were trimmed upstream: no kernels, but comm ops and the profiler breakdown
    assert "kernels" not in set_a[1].tables and set_a[1].tables["comm_ops"].height == 15


def test_set_a_comm_ops_join_exact_kernel_times_with_communication_json(set_a) -> None:
    ops = set_a[2].tables["comm_ops"]
    assert ops.height == 23
    first = ops.filter(pl.col("op") == "hcom_batchSendRecv__128_3_1").row(0, named=True)
    assert first["start_ns"] == 1764246877076689680  # exact, from kernel_details
    assert first["dur_ns"] == 71424680
    assert first["group_kind"] == "pp" and first["is_p2p"] and first["peer"] == 0
    assert first["op_type"] == "batchSendRecv" and first["bytes"] == 8388608
    kinds = dict(ops.group_by("group_kind").len().iter_rows())
    assert kinds["tp"] == 6 and kinds["dp"] == 2 and None not in kinds
    assert set_a[3].tables["comm_ops"].filter(pl.col("is_p2p"))["peer"].unique().to_list() == [1]


def test_set_a_rank2_breakdown_rows(set_a) -> None:
    rows = set_a[2].tables["step_breakdown"]
    origins = dict(zip(rows["origin"], rows["p2p_bubble_ns"], strict=True))
    assert origins["profiler"] is None and origins["derived"] > 70_000_000
    assert rows["bubble_ns"].to_list() == [0, 0]


def test_set_b1_rank0(real_dir: Path) -> None:
    frames = read_rank(real_dir / "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")
    assert frames.rank == 0 and frames.device_id == 0 and not frames.quarantined
    assert frames.tables["kernels"].height == 191
    ops = frames.tables["comm_ops"]
    assert ops.height == 4 and ops["group_name"].unique().to_list() == ["17522688603477080586"]
    # exact trace time, not communication.json's 1736408883732241.5
    assert ops["start_ns"].min() == 1736408883732241564
    assert ops["wait_ns"].null_count() == 0  # enriched from communication.json
    assert frames.tables["slices"]["step"].drop_nulls().unique().to_list() == [50]


@pytest.mark.parametrize(("rank", "peer"), [(0, 8), (1, 9)])
def test_set_d_send_ops(real_dir: Path, rank: int, peer: int) -> None:
    frames = read_rank(real_dir / SET_D / f"test_rank_{rank}")
    assert frames.rank == rank and not frames.quarantined
    ops = frames.tables["comm_ops"]
    send = ops.filter(pl.col("op") == "hcom_send__822_0").row(0, named=True)
    assert send["is_p2p"] and send["op_type"] == "send" and send["peer"] == peer
    assert send["bytes"] == 20971520 and send["step"] == 2
    assert ops.height == 28


def test_lone_trace_view_folder(real_dir: Path) -> None:
    frames = read_rank(real_dir / "msprof-analyze/test/ut/advisor/advisor_backend/timeline_advice")
    assert frames.rank is None and not frames.quarantined
    assert frames.tables["step_breakdown"]["origin"].to_list() == ["derived"]
