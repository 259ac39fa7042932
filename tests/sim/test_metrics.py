"""Interval accounting, summaries, noise."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.metrics import ranks_frame, summarize
from pipelines.sim.result import REQUEST_SCHEMA, TASK_SCHEMA, SimResult
from pipelines.sim.run import simulate
from pipelines.vocabulary.intervals import intersection as _overlap
from pipelines.vocabulary.intervals import union as _merge


def _mask(starts, ends, size=200) -> np.ndarray:
    m = np.zeros(size, dtype=bool)
    for s, e in zip(starts, ends, strict=True):
        m[s:e] = True
    return m


@pytest.mark.parametrize("seed", range(5))
def test_union_and_overlap_match_a_bitmap(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a_s = rng.integers(0, 180, 12)
    a_e = a_s + rng.integers(0, 20, 12)
    b_s = rng.integers(0, 180, 9)
    b_e = b_s + rng.integers(0, 20, 9)
    a, b = _merge(a_s, a_e), _merge(b_s, b_e)
    assert int((a[1] - a[0]).sum()) == _mask(a_s, a_e).sum()
    assert _overlap(a, b) == (_mask(a_s, a_e) & _mask(b_s, b_e)).sum()


def test_hand_built_result_accounting() -> None:
    rows = [
        ("r", 0, 0, 0, "compute", 8, 0, 0, 10),
        ("r", 0, 0, 0, "send", 8, 0, 10, 14),
        ("r", 0, 1, 1, "recv", 8, 0, 8, 14),  # posted at 8, overlaps compute 8..10
        ("r", 0, 1, 1, "compute", 8, 0, 14, 20),
    ]
    tasks = pl.DataFrame(rows, schema=TASK_SCHEMA, orient="row")
    requests = pl.DataFrame([("r", 0, 8, 20, 20)], schema=REQUEST_SCHEMA, orient="row")
    ranks = ranks_frame(SimResult(tasks, requests, {}))
    r0, r1 = ranks.row(0, named=True), ranks.row(1, named=True)
    assert (r0["compute_ns"], r0["exposed_comm_ns"], r0["bubble_ns"]) == (10, 4, 6)
    assert r0["edge_idle_ns"] == 6
    assert (r1["compute_ns"], r1["comm_ns"], r1["exposed_comm_ns"], r1["bubble_ns"]) == (6, 6, 6, 8)
    assert r1["edge_idle_ns"] == 8


def test_summary_fields_and_throughput() -> None:
    cost = FittedCost(alpha_ns=1000.0, beta_ns=0.01)
    result = simulate([8192, 4096], "vpp_pack", model=cost, chunk_size=2048, comm=None)
    s = summarize(result)
    assert s["requests"] == 2 and s["prompt_tokens"] == 12288 and s["scheduling_steps"] == 6
    assert s["throughput_tok_s"] == pytest.approx(12288 / (s["makespan_ns"] / 1e9))
    assert s["compute_ratio"] + s["bubble_ratio"] + s["exposed_comm_ratio"] == pytest.approx(1)
    assert s["schedule"] == "vpp_pack" and s["vp"] == 2 and s["pp"] == 2
    assert s["ttft_max_ns"] == result.requests["ttft_ns"].max()


def test_noise_is_multiplicative_seeded_and_about_the_requested_size() -> None:
    cost = FittedCost(alpha_ns=1000.0, beta_ns=0.0)  # every task of a chunk size costs the same
    base = simulate(1 << 20, "cpp", model=cost, chunk_size=1024, comm=None)
    noisy = simulate(1 << 20, "cpp", model=cost, chunk_size=1024, comm=None, noise=0.03, seed=7)
    again = simulate(1 << 20, "cpp", model=cost, chunk_size=1024, comm=None, noise=0.03, seed=7)
    other = simulate(1 << 20, "cpp", model=cost, chunk_size=1024, comm=None, noise=0.03, seed=8)

    def busy(r):
        c = r.tasks.filter(pl.col("kind") == "compute").sort("rank", "chunk_idx")
        return (c["end_ns"] - c["start_ns"]).to_numpy().astype(float)

    ratio = busy(noisy) / busy(base)
    print(f"noise 0.03: std of log ratio {np.log(ratio).std():.4f} over {len(ratio)} tasks")
    assert np.log(ratio).std() == pytest.approx(0.03, rel=0.1)
    assert (busy(noisy) == busy(again)).all() and not (busy(noisy) == busy(other)).all()
    assert noisy.meta["noise"] == 0.03 and noisy.meta["seed"] == 7
