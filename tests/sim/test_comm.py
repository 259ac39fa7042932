"""Blocking and overlapped (async) transfers: exact timings on tiny cases, and their effect."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.sim.comm import CommModel
from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.metrics import ranks_frame, summarize
from pipelines.sim.run import simulate

T = 1_000_000
C = 1024
H = 300_000  # one hop


def toy(schedule: str, n: int, mode: str | None, **kw):
    cost = FittedCost.from_tau_line(4 * T, 4 * T, C)
    comm = CommModel(latency_ns=H)
    return simulate(
        n * C, schedule, model=cost, chunk_size=C, pp=2, comm=comm, comm_mode=mode, **kw
    )


def test_blocking_cpp_single_chunk_timeline() -> None:
    result = toy("cpp", 1, "blocking")
    rows = {
        (r["rank"], r["kind"]): (r["start_ns"], r["end_ns"])
        for r in result.tasks.iter_rows(named=True)
    }
    assert rows[(0, "compute")] == (0, 2 * T)
    assert rows[(0, "send")] == (2 * T, 2 * T + H)
    assert rows[(1, "recv")] == (2 * T, 2 * T + H)  # launched once the sender starts
    assert rows[(1, "compute")] == (2 * T + H, 4 * T + H)
    ranks = ranks_frame(result)
    assert ranks["exposed_comm_ns"].to_list() == [H, H]
    assert ranks["bubble_ns"].to_list() == [2 * T, 2 * T]


def test_async_receive_is_outstanding_from_its_post() -> None:
    result = toy("cpp", 1, "async")
    recv = result.tasks.filter((pl.col("rank") == 1) & (pl.col("kind") == "recv")).row(
        0, named=True
    )
    assert (recv["start_ns"], recv["end_ns"]) == (0, 2 * T + H)  # pre-posted at arrival
    ranks = ranks_frame(result)
    assert ranks["exposed_comm_ns"].to_list() == [H, 2 * T + H]
    assert ranks["bubble_ns"].to_list() == [2 * T, 0]


def test_rows_per_hop_and_their_stages() -> None:
    for mode in ("blocking", "async"):
        tasks = toy("vpp", 5, mode).tasks
        sends = tasks.filter(pl.col("kind") == "send")
        recvs = tasks.filter(pl.col("kind") == "recv")
        assert sends.height == recvs.height == 5 * 2  # s0 -> s1 and s2 -> s3; the fold is local
        assert sorted(set(sends["vstage"])) == [0, 2]
        assert sorted(set(recvs["vstage"])) == [1, 3]
        assert set(zip(sends["vstage"], sends["rank"], strict=True)) == {(0, 0), (2, 1)}


def test_overlap_hides_transfers_that_blocking_exposes() -> None:
    """In CPP rank 0 is the bottleneck (τ grows): a blocking send after every chunk lengthens
    its critical path by one hop per chunk; an overlapped send does not."""
    blocking = summarize(toy("cpp", 11, "blocking"))
    overlapped = summarize(toy("cpp", 11, "async"))
    assert blocking["makespan_ns"] - overlapped["makespan_ns"] == 10 * H
    assert blocking["overlap_ratio"] == 0.0
    vanilla, async_ = summarize(toy("vpp", 11, None)), summarize(toy("vpp_async", 11, None))
    print(
        f"N=11, hop {H / T:.1f} t: VPP blocking {vanilla['makespan_ns'] / T:.1f} t "
        f"(overlap {vanilla['overlap_ratio']:.0%}), VPP-Async {async_['makespan_ns'] / T:.1f} t "
        f"(overlap {async_['overlap_ratio']:.0%})"
    )
    assert vanilla["overlap_ratio"] == 0.0 and async_["overlap_ratio"] > 0.5
    # Algorithm 1 with blocking transfers: every chunk's two hops lie on the critical path
    # ((N+1)^2 t + (N+1) hops); VPP-Async's swap issues each transfer while the peer computes,
    # leaving only the first hop in and the last hop back exposed
    assert vanilla["makespan_ns"] == 144 * T + 12 * H
    assert async_["makespan_ns"] == 144 * T + 2 * H


def test_free_transfers_equal_no_comm() -> None:
    free = simulate(
        11 * C,
        "vpp_async",
        model=FittedCost.from_tau_line(4 * T, 4 * T, C),
        chunk_size=C,
        comm=CommModel(),
    )
    assert summarize(free)["makespan_ns"] == 144 * T


def test_tp_and_ep_collectives_are_exposed_comm_per_stage_call() -> None:
    """Every stage call of the DeepSeek preset ends with its TP AllReduce and EP all-to-all:
    count x latency + bytes / bandwidth, blocking, so they are exposed comm in the metrics."""
    from pipelines.sim import presets
    from pipelines.sim.metrics import ranks_frame, summarize
    from pipelines.sim.run import simulate

    coll = presets.collective_model("deepseek-v3.1")
    assert coll is not None and coll.blocking
    result = simulate(65536, "cpp", chunk_size=16384)
    tasks = result.tasks
    lo, hi = result.meta["layer_ranges"][0]
    # stage 0 (layers 0..30): 3 dense layers x 2 AllReduce + 28 MoE layers x 1, 28 x 2 all-to-all
    assert coll.tp_ops[hi] - coll.tp_ops[lo] == 3 * 2 + (hi - 3)
    assert coll.ep_ops[hi] - coll.ep_ops[lo] == 2 * (hi - 3)
    ar = tasks.filter((pl.col("kind") == "allreduce") & (pl.col("vstage") == 0)).sort("chunk_idx")
    want = coll.parts_ns(np.full(4, 16384), np.full(4, lo), np.full(4, hi))["allreduce"]
    assert (ar["end_ns"] - ar["start_ns"]).to_list() == np.rint(want).astype(int).tolist()
    compute = tasks.filter((pl.col("kind") == "compute") & (pl.col("vstage") == 0))
    assert (ar["start_ns"] == compute.sort("chunk_idx")["end_ns"]).all()  # blocking: after compute
    m = summarize(result)
    collectives = tasks.filter(pl.col("kind").is_in(["allreduce", "alltoall"]))
    blocked = int((collectives["end_ns"] - collectives["start_ns"]).sum())
    assert m["exposed_comm_ns"] * 2 >= blocked > 0
    ranks = ranks_frame(result)
    assert (
        ranks["window_ns"] == ranks["compute_ns"] + ranks["bubble_ns"] + ranks["exposed_comm_ns"]
    ).all()
    free = summarize(simulate(65536, "cpp", chunk_size=16384, collectives=None))
    assert free["exposed_comm_ns"] < m["exposed_comm_ns"]
    assert free["makespan_ns"] < m["makespan_ns"]


def test_overlapped_collectives_hide_under_compute() -> None:
    from pipelines.sim import presets
    from pipelines.sim.metrics import summarize
    from pipelines.sim.run import simulate

    coll = presets.collective_model("deepseek-v3.1", blocking=False)
    over = summarize(simulate(65536, "cpp", chunk_size=16384, collectives=coll))
    block = summarize(simulate(65536, "cpp", chunk_size=16384))
    assert over["makespan_ns"] < block["makespan_ns"]
    assert over["overlap_ratio"] > 0.9 and over["exposed_comm_ns"] < 0.1 * block["exposed_comm_ns"]
