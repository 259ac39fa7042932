"""Simulated traces that look like torch_npu's (issue 13 item 5, docs/sim_traces.md): per-layer
kernels with real names summing to the simulator's tasks, host launches ahead of the device
linked by flows, one ProfilerStep per scheduler step, one rank folder per TP rank."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pipelines.sim.kernel_mix import split_ns
from pipelines.sim.metrics import ranks_frame
from pipelines.sim.run import simulate
from pipelines.sim.trace_shape import (
    LAUNCH_LATENCY_NS,
    expand_tp_ranks,
    scheduler_step_starts,
    with_scheduler_steps,
)
from pipelines.sim.writers_ascend import write_ascend_pt


def _rank_of(folder: Path) -> int:
    return int(folder.name.split("-rank")[1].split("_")[0])


@pytest.fixture(scope="module")
def tp8_pp2(tmp_path_factory) -> tuple:
    """DeepSeek-V3.1, 64K tokens in 16K chunks, TP8 x PP2, written with per-layer kernels."""
    from pipelines.sim.outputs import traced_result

    result = simulate([65536], "cpp", chunk_size=16384, pp=2, tp=8)
    result.meta["bytes_per_token"] = 7168 * 2 // 8
    traced = traced_result(result, "layers", tp_ranks=True)
    out = tmp_path_factory.mktemp("tp8pp2") / "run"
    folders = sorted(write_ascend_pt(traced, out, detail="layers"), key=_rank_of)
    return result, traced, out, folders


def test_split_sums_exactly() -> None:
    assert sum(split_ns(1_000_003, [0.1, 0.7, 0.2, 1e-9])) == 1_000_003
    assert split_ns(5, [0.0, 0.0]) == [2, 3]


@pytest.mark.slow  # a long end-to-end test (CI runs it: .ci/run)
def test_tp8_pp2_ingests_as_16_ranks_and_equals_the_simulator(tp8_pp2, warehouse) -> None:
    """Acceptance: 16 ranks, TP collectives on the comm lane, chunks segmented through the flow
    links (time containment alone gets them wrong), and the derived breakdown of every rank
    equals the simulator's figures for its stage."""
    from pipelines.analysis.chunks.segment import segment_chunks
    from pipelines.ingest.load import ingest_paths

    result, traced, out, folders = tp8_pp2
    assert len(folders) == 16
    report = ingest_paths([out], warehouse, progress=False)
    assert report.quarantined == [] and len(report.runs) == 1
    run_id = warehouse.execute("select run_id from runs").fetchone()[0]
    ranks = warehouse.execute("select count(*) from ranks where run_id = ?", [run_id]).fetchone()[0]
    assert ranks == 16
    ops = warehouse.execute(
        "select rank, count(*) filter (where op like 'hcom_allReduce%'),"
        " count(*) filter (where op like 'hcom_alltoAll%') from comm_ops where run_id = ?"
        " group by rank order by rank",
        [run_id],
    ).fetchall()
    calls = result.tasks.filter(pl.col("kind") == "compute").group_by("rank").len()
    per_stage = dict(calls.iter_rows())
    assert [r[0] for r in ops] == list(range(16))
    assert all(r[1] == per_stage[r[0] // 8] and r[2] == per_stage[r[0] // 8] for r in ops)

    # derived breakdown = the simulator's per-rank accounting, each TP rank its stage's figures
    derived = warehouse.execute(
        "select rank, sum(computing_ns), sum(communication_ns), sum(overlapped_ns),"
        " sum(comm_not_overlapped_ns), bool_and(complete) from step_breakdown"
        " where run_id = ? and origin = 'derived' group by rank order by rank",
        [run_id],
    ).fetchall()
    sim = {r["rank"]: r for r in ranks_frame(result).iter_rows(named=True)}
    for rank, compute, comm, overlapped, exposed, complete in derived:
        stage = sim[rank // 8]
        assert complete
        assert (compute, comm, overlapped, exposed) == (
            stage["compute_ns"],
            stage["comm_ns"],
            stage["overlapped_ns"],
            stage["exposed_comm_ns"],
        ), rank
    assert (
        ranks_frame(traced).filter(pl.col("rank") == 9).row(0)[1:]
        == ranks_frame(result).filter(pl.col("rank") == 1).row(0)[1:]
    )

    # segmentation: flow links recover every stage call exactly, time containment does not
    slices = warehouse.execute("select * from slices where run_id = ?", [run_id]).pl()
    want = (
        traced.tasks.filter(pl.col("kind") == "compute")
        .select("rank", "chunk_idx", (pl.col("end_ns") - pl.col("start_ns")).alias("busy_ns"))
        .sort("rank", "chunk_idx")
    )
    chunks, unassigned = segment_chunks(slices, run_id)
    got = chunks.select("rank", "chunk_idx", "busy_ns").sort("rank", "chunk_idx")
    assert got.cast(want.schema).equals(want)
    assert unassigned["unassigned_ns"].sum() == 0
    assert (unassigned["n_flow_linked"] == unassigned["n_device_slices"]).all()
    # the links are the trace's flows, as in real traces: host ops carry no id of their own
    host = slices.filter(pl.col("lane") == "host")
    python = host.filter(~pl.col("name").str.starts_with("HCCL@"))  # CANN launches carry ids
    assert not python["args"].str.contains("connection_id").any()
    assert host["args"].str.contains('"flow_links"').sum() > 0
    _by_time, lost = segment_chunks(slices, run_id, link="time")
    assert lost["unassigned_fraction"].min() > 0.5  # host ranges run ahead of their kernels


def test_kernels_have_real_names_and_sum_to_the_tasks(tp8_pp2) -> None:
    result, traced, _, folders = tp8_pp2
    rank0 = json.loads((folders[0] / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    hw = next(
        e["pid"] for e in rank0 if e.get("name") == "process_name"
        and e["args"]["name"] == "Ascend Hardware"
    )  # fmt: skip
    kernels = [e for e in rank0 if e.get("ph") == "X" and e["pid"] == hw and e["tid"] == 2]
    names = Counter(e["name"] for e in kernels)
    tasks = traced.tasks.filter((pl.col("rank") == 0) & (pl.col("kind") == "compute"))
    lo, hi = result.meta["layer_ranges"][0]
    layers = hi - lo
    assert names["aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore"] == (
        layers * tasks.height
    )
    moe_layers = hi - 3  # DeepSeek-V3.1: 3 dense layers first
    assert names["aclnnGroupedMatmulV4_GroupedMatmul_GroupedMatmul"] == 2 * moe_layers * 4
    for name in (
        "RmsNorm",
        "SwiGlu",
        "aclnnMatmul_MatMulV3Common_MatMulV3",
        "aclnnAdd_AddAiCore_Add",
    ):
        assert names[name] > 0
    total_ns = sum(round(float(e["dur"]) * 1000) for e in kernels)
    assert total_ns == int((tasks["end_ns"] - tasks["start_ns"]).sum())
    # every kernel is launched by a host cpu_op at least the launch latency before it starts
    flows = [e for e in rank0 if e.get("name") == "torch_to_npu"]
    end = {e["id"]: e for e in flows if e["ph"] == "f" and e["pid"] == hw}  # HCCL ops: own flows
    start = {e["id"]: e for e in flows if e["ph"] == "s" and e["id"] in end}
    assert start.keys() == end.keys() and len(start) == len(kernels)
    lead = [
        int(end[i]["ts"].replace(".", "")) - int(start[i]["ts"].replace(".", "")) for i in start
    ]
    assert min(lead) == LAUNCH_LATENCY_NS
    host_ops = {e["name"] for e in rank0 if e.get("cat") == "cpu_op"}
    assert {"aclnnMatmul", "aclnnFlashAttentionScore", "RmsNorm"} <= host_ops
    # one ProfilerStep per scheduler step (a chunk entering stage 0)
    steps = [e for e in rank0 if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(steps) == len(scheduler_step_starts(result)) == 4


def test_scheduler_steps_cover_every_device_event() -> None:
    result = simulate([32768, 32768], "vpp", chunk_size=16384, pp=2, vp=2)
    stepped = with_scheduler_steps(result)
    windows = stepped.meta["steps_ns"]
    assert len(windows) == 4
    assert windows[0][0] == -LAUNCH_LATENCY_NS
    assert windows[-1][1] == int(result.tasks["end_ns"].max())
    assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))
    with pytest.raises(ValueError, match="already"):
        expand_tp_ranks(expand_tp_ranks(result, 2), 2)


def test_cli_writes_one_folder_per_tp_rank(tmp_path: Path) -> None:
    from pipelines.cli import main

    code = main(["simulate", "--schedule", "cpp", "--seq-len", "32768", "--chunk", "16384",
                 "--tp-ranks", "--trace-detail", "layers", "--format", "ascend",
                 "--out", str(tmp_path / "o")])  # fmt: skip
    assert code == 0
    assert len(list((tmp_path / "o").glob("*_ascend_pt"))) == 16
