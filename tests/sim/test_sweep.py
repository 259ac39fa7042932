"""The batched sweep equals one-by-one simulation."""

from __future__ import annotations

import itertools

import pytest

from pipelines.sim import presets
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate, simulate_batch
from pipelines.sim.sweep import SweepPoint, sweep


def test_sweep_rows_equal_simulate() -> None:
    points = [
        SweepPoint(m, s, n, c, pp, requests=r, seed=seed, noise=0.03, comm=comm)
        for m, s, n, c, pp, r, seed, comm in [
            ("deepseek-v3.1", "cpp", 262144, 24576, 2, 1, 0, True),
            ("glm-5.2", "cpp", 262144, 24576, 2, 1, 1, True),
            ("qwen3-coder-30b-a3b", "dcpp", 131072, 16384, 2, 1, 2, True),
            ("deepseek-v3.1", "dcpp_sglang", 131072, 16384, 4, 1, 0, False),
            ("glm-5.2", "vpp", 131072, 8192, 4, 1, 0, True),
            ("deepseek-v3.1", "vpp_pack", 65536, 8192, 2, 3, 5, False),
            ("qwen3-coder-30b-a3b", "vpp_async", 131072, 16384, 2, 2, 0, True),
        ]
    ]
    frame = sweep(points)
    assert frame.height == len(points)
    for point, row in zip(points, frame.iter_rows(named=True), strict=True):
        ref = summarize(
            simulate(
                [point.seq_len] * point.requests,
                point.schedule,
                model=point.model,
                chunk_size=point.chunk_size,
                pp=point.pp,
                noise=point.noise,
                seed=point.seed,
                comm="preset" if point.comm else None,
            )
        )
        assert row["makespan_ns"] == ref["makespan_ns"]
        assert row["scheduling_steps"] == ref["scheduling_steps"]
        assert row["ttft_mean_ns"] == pytest.approx(ref["ttft_mean_ns"])
        idle = ref["bubble_ratio"] + ref["exposed_comm_ratio"]
        assert row["idle_ratio"] == pytest.approx(idle, abs=1e-12)
        if point.schedule in ("vpp_async", "vpp_pack") and point.comm:
            assert row["bubble_ratio"] is None or row["bubble_ratio"] != row["bubble_ratio"]
        else:
            assert row["bubble_ratio"] == pytest.approx(ref["bubble_ratio"], abs=1e-12)


def test_points_sharing_a_graph_are_batched() -> None:
    points = [
        SweepPoint(m, "vpp", 262144, 16384, seed=s, noise=0.02)
        for m, s in itertools.product(["deepseek-v3.1", "glm-5.2"], range(3))
    ]
    frame = sweep(points)
    assert frame["makespan_ns"].n_unique() == len(points)


def test_simulate_batch_equals_simulate() -> None:
    costs = [presets.cost_model(m) for m in ("deepseek-v3.1", "glm-5.2")]
    got = simulate_batch(131072, "cpp", costs, seeds=(0, 1), noise=0.05, chunk_size=16384)
    for i, cost in enumerate(costs):
        for j, seed in enumerate((0, 1)):
            ref = simulate(
                131072, "cpp", model=cost, chunk_size=16384, comm=None, noise=0.05, seed=seed
            )
            assert got[i, j] == summarize(ref)["makespan_ns"]
