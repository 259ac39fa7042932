"""The balance residual and the affine VPP gain against the pipeline simulator (no noise)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.analysis.fits import balance_residual, fit_curve, vpp_gain_affine
from pipelines.sim.measured import FittedCost, TabulatedCost
from pipelines.sim.metrics import chunks_frame, summarize
from pipelines.sim.run import simulate

CHUNK = 16384


def _bubble(cost, schedule: str, n: int) -> float:
    result = simulate(n * CHUNK, schedule, model=cost, chunk_size=CHUNK, comm=None)
    return summarize(result)["bubble_ratio"]


@pytest.mark.parametrize(("ratio", "n"), [(1.0, 8), (10.0, 8), (3.0, 16), (10.0, 32)])
def test_vpp_gain_of_an_affine_curve_is_the_cpp_minus_vpp_bubble(ratio: float, n: int) -> None:
    cost = FittedCost.from_tau_line(ratio * 1e8, 1e8, CHUNK)
    cpp, vpp = _bubble(cost, "cpp", n), _bubble(cost, "vpp", n)
    assert vpp == pytest.approx(1 / (n + 1), rel=1e-6)  # affine: only the drain is left
    assert cpp - vpp == pytest.approx(vpp_gain_affine(ratio, n), rel=1e-4)
    assert vpp_gain_affine(10.0, n) <= 0.025


def test_chunk_to_chunk_irregularity_raises_residual_and_vpp_bubble_together() -> None:
    n = 16
    line = 2e8 + 1e8 * np.arange(n)
    prefixes = np.arange(n, dtype=float) * CHUNK
    residuals, bubbles = [], []
    for amount in (0.0, 0.05, 0.15, 0.3):
        tau = line * (1 + amount * (-1.0) ** np.arange(n))
        cost = TabulatedCost({CHUNK: (prefixes, tau)}, FittedCost(tau.mean() / CHUNK, 0.0))
        result = simulate(n * CHUNK, "vpp", model=cost, chunk_size=CHUNK, comm=None)
        per_chunk = (
            chunks_frame(result, "z")
            .group_by("chunk_idx")
            .agg(pl.col("busy_ns").sum())
            .sort("chunk_idx")
        )
        k, busy = per_chunk["chunk_idx"].to_numpy(), per_chunk["busy_ns"].to_numpy()
        residuals.append(balance_residual(k.astype(float), busy.astype(float)))
        bubbles.append(summarize(result)["bubble_ratio"])
    assert residuals[0] == pytest.approx(0.0, abs=1e-6)
    assert bubbles[0] == pytest.approx(1 / (n + 1), rel=1e-6)
    assert all(np.diff(residuals) > 0) and all(np.diff(bubbles) > 0)
    fit = fit_curve(k, busy, n_boot=50)
    assert fit.balance == pytest.approx(residuals[-1])


def _vpp_run(tau: np.ndarray):
    n = len(tau)
    prefixes = np.arange(n, dtype=float) * CHUNK
    cost = TabulatedCost({CHUNK: (prefixes, tau)}, FittedCost(float(tau.mean()) / CHUNK, 0.0))
    return simulate(n * CHUNK, "vpp", model=cost, chunk_size=CHUNK, comm=None)


def _idle_ns(result) -> int:
    """Idle of both ranks: 2 x makespan - busy time (no transfers here)."""
    compute = result.tasks.filter(pl.col("kind") == "compute")
    busy = int((compute["end_ns"] - compute["start_ns"]).sum())
    return 2 * (int(compute["end_ns"].max()) - int(compute["start_ns"].min())) - busy


def _steady_bubble(result) -> float:
    """Bubble ratio of both ranks between the starts of s3(0) and s3(N-2) (no fill, no drain)."""
    compute = result.tasks.filter(pl.col("kind") == "compute")
    exits = compute.filter(pl.col("vstage") == 3).sort("chunk_idx")["start_ns"].to_numpy()
    t0, t1 = exits[0], exits[-2]
    busy = compute["end_ns"].to_numpy().clip(t0, t1) - compute["start_ns"].to_numpy().clip(t0, t1)
    return 1 - busy.sum() / (2 * (t1 - t0))


def _second_differences(tau: np.ndarray) -> np.ndarray:
    return tau[:-2] + tau[2:] - 2 * tau[1:-1]


@pytest.mark.parametrize("n", [3, 5, 8, 16, 33])
def test_vpp_idle_is_ends_plus_a_quarter_of_every_padded_second_difference(n: int) -> None:
    """Cycle k: rank 0 runs s3(k-1)+s0(k+1), rank 1 s1(k)+s2(k), both start it together; so the
    idle is (tau_0 + tau_{N-1} + sum_k |tau_{k-1} + tau_{k+1} - 2 tau_k|) / 4 with
    tau_{-1} = tau_N = 0, for any tau (equal stages, free transfers)."""
    rng = np.random.default_rng(n)
    for tau in (rng.uniform(1e8, 5e9, n), np.sort(rng.uniform(1e8, 5e9, n))):
        padded = np.concatenate(([0.0], tau, [0.0]))
        expected = (tau[0] + tau[-1] + np.abs(_second_differences(padded)).sum()) / 4
        assert _idle_ns(_vpp_run(tau)) == pytest.approx(expected, abs=4 * n)  # ns rounding


def test_steady_state_bubble_is_half_the_residual() -> None:
    """In the steady state the lighter rank idles |second difference|/4 per cycle and a cycle
    lasts tau_k/2 + max(second difference, 0)/4, so the steady-state bubble ratio is
    R / (2 (1 + R+)), R+ the residual of the positive second differences only."""
    n = 16
    k = np.arange(n, dtype=float)
    line = 2e8 + 1e8 * k
    rng = np.random.default_rng(3)
    for tau in (
        line,
        line * (1 + 0.1 * rng.standard_normal(n)),
        line * (1 + 0.2 * (-1.0) ** k),
        line + 3e8 * (k >= n // 2),
        line - 4e8 * 4 * k * (n - 1 - k) / (n - 1) ** 2,
    ):
        second = _second_differences(tau)
        residual = balance_residual(k, tau)
        positive = np.maximum(second, 0).sum() / (2 * tau[1:-1]).sum()
        steady = _steady_bubble(_vpp_run(tau))
        assert steady == pytest.approx(residual / (2 * (1 + positive)), abs=1e-8)
        assert residual / (2 * (1 + residual)) - 1e-8 <= steady <= residual / 2 + 1e-8


def test_bends_move_the_whole_run_bubble_through_the_ends_not_the_residual() -> None:
    """A concave bend (rank 1 heavier every cycle) adds residual but no idle: rank 0's per-cycle
    waits are repaid by shorter fill and drain waits, the idle stays (tau_0 + tau_{N-1})/2 and
    the bubble ratio falls as the middle chunks grow. A convex bend adds the slope increase/2.
    (Both while the fill stays rank-1 bound, tau_1 <= 2 tau_0.)"""
    n = 16
    k = np.arange(n, dtype=float)
    line = 2e8 + 1e8 * k
    bend = 4 * k * (n - 1 - k) / (n - 1) ** 2
    residuals, bubbles = [], []
    for amount in (0.0, 1e8, 2e8, 3e8):
        concave = line + amount * bend
        assert concave[1] <= 2 * concave[0]
        result = _vpp_run(concave)
        assert _idle_ns(result) == pytest.approx((concave[0] + concave[-1]) / 2, abs=64)
        residuals.append(balance_residual(k, concave))
        bubbles.append(summarize(result)["bubble_ratio"])
        convex = line - amount * bend
        rise = (convex[-1] - convex[-2]) - (convex[1] - convex[0])
        expected = (convex[0] + convex[-1]) / 2 + rise / 2
        assert _idle_ns(_vpp_run(convex)) == pytest.approx(expected, abs=64)
    assert all(np.diff(residuals) > 0) and all(np.diff(bubbles) < 0)
