"""The balance residual and the exact CPP/VPP bubble identities against the pipeline simulator
(no noise, pp=2, equal stages, free transfers, one request)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import polars as pl
import pytest

from pipelines.analysis.tau.fits import (
    balance_residual,
    cpp_bubble_ratio,
    fit_curve,
    vpp_bubble_ratio,
)
from pipelines.replay.tables import chunks_frame
from pipelines.replay.tabulated_cost import TabulatedCost
from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.metrics import bubble_ratio_exact, summarize
from pipelines.sim.run import simulate

CHUNK = 16384


def _run(tau: np.ndarray, schedule: str):
    n = len(tau)
    prefixes = np.arange(n, dtype=float) * CHUNK
    cost = TabulatedCost({CHUNK: (prefixes, tau)}, FittedCost(float(tau.mean()) / CHUNK, 0.0))
    return simulate(n * CHUNK, schedule, model=cost, chunk_size=CHUNK, comm=None)


def _vpp_run(tau: np.ndarray):
    return _run(tau, "vpp")


def _simulated_tau(result) -> np.ndarray:
    """Per-chunk total of the simulated stage times (each rounded to whole ns)."""
    per_chunk = (chunks_frame(result, "z").group_by("chunk_idx").agg(pl.col("busy_ns").sum())).sort(
        "chunk_idx"
    )
    return per_chunk["busy_ns"].to_numpy().astype(float)


def _g_affine(ratio: float, n: int) -> float:
    """docs/tau_k.md §4: CPP minus VPP bubble of tau_k = a + b k, r = a/b, valid for r >= 1."""
    return (n - 1) * (n / 2) / ((n + 1) * ((n + 1) * ratio + (n - 1) * (n + 2) / 2))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16, 33])
def test_cpp_and_vpp_bubble_identities_are_exact_for_any_tau(n: int) -> None:
    """VPP: idle = (tau_0 + tau_{N-1} + sum_k |tau_{k-1}+tau_{k+1}-2tau_k|)/4, tau_{-1} = tau_N
    = 0; CPP: idle = max tau; ratio = idle / (sum tau + idle). Exact on the simulated (rounded)
    stage times, for random, increasing and decreasing curves."""
    rng = np.random.default_rng(n)
    draws = rng.uniform(1e8, 5e9, n)
    for tau in (draws, np.sort(draws), np.sort(draws)[::-1].copy()):
        for schedule, identity in (("vpp", vpp_bubble_ratio), ("cpp", cpp_bubble_ratio)):
            result = _run(tau, schedule)
            simulated = _simulated_tau(result)
            exact = bubble_ratio_exact(result)
            assert identity(simulated) == pytest.approx(float(exact), rel=1e-12, abs=1e-15)
            assert identity(tau) == pytest.approx(float(exact), abs=1e-9)  # ns rounding


def test_vpp_can_leave_more_bubble_than_cpp_for_an_irregular_curve() -> None:
    tau = np.random.default_rng(16).uniform(1e8, 5e9, 16)
    vpp, cpp = (summarize(_run(tau, s))["bubble_ratio"] for s in ("vpp", "cpp"))
    assert vpp > 0.25 > 0.15 > cpp
    fit = fit_curve(np.tile(np.arange(16.0), 2), np.tile(tau, 2), np.repeat([0, 1], 16), n_boot=0)
    assert fit.vpp_gain_pred == pytest.approx(cpp - vpp, abs=1e-8) and fit.vpp_gain_pred < 0


def test_vpp_bubble_identity_is_a_whole_fraction_of_integer_ns() -> None:
    """With integer stage times the identity gives the simulator's fraction exactly."""
    result = _vpp_run(np.array([3e8, 9e8, 4e8, 1.2e9, 1.1e9, 5e8]))
    tau = _simulated_tau(result).astype(np.int64)
    padded = np.concatenate(([0], tau, [0]))
    idle = (tau[0] + tau[-1] + np.abs(padded[:-2] + padded[2:] - 2 * padded[1:-1]).sum()) // 4
    assert bubble_ratio_exact(result) == Fraction(int(idle), int(tau.sum() + idle))


@pytest.mark.parametrize(("ratio", "n"), [(1.0, 8), (10.0, 8), (3.0, 16), (10.0, 32), (0.5, 8)])
def test_vpp_gain_of_an_affine_curve_is_the_cpp_minus_vpp_bubble(ratio: float, n: int) -> None:
    """For a/b >= 1 VPP leaves only the drain, 1/(N+1), and the gain is §4's g(a/b, N); below
    a/b = 1 the fill cycle is bound by rank 0 and g overstates the gain (N = 8, a/b = 0.5: VPP
    11.7%, not 11.1%). The identities follow the simulator on both sides."""
    tau = ratio * 1e8 + 1e8 * np.arange(n)
    cost = FittedCost.from_tau_line(ratio * 1e8, 1e8, CHUNK)
    cpp = summarize(simulate(n * CHUNK, "cpp", model=cost, chunk_size=CHUNK, comm=None))
    vpp = summarize(simulate(n * CHUNK, "vpp", model=cost, chunk_size=CHUNK, comm=None))
    assert vpp_bubble_ratio(tau) == pytest.approx(vpp["bubble_ratio"], rel=1e-6)
    gain = cpp_bubble_ratio(tau) - vpp_bubble_ratio(tau)
    assert gain == pytest.approx(cpp["bubble_ratio"] - vpp["bubble_ratio"], rel=1e-5)
    if ratio >= 1:
        assert vpp_bubble_ratio(tau) == pytest.approx(1 / (n + 1), rel=1e-12)
        assert gain == pytest.approx(_g_affine(ratio, n), rel=1e-12)
        assert ratio < 10 or gain <= 0.025
    else:
        assert vpp["bubble_ratio"] == pytest.approx(0.117, abs=5e-4)
        assert gain < _g_affine(ratio, n) - 0.005


def test_chunk_to_chunk_irregularity_raises_residual_and_vpp_bubble_together() -> None:
    n = 16
    k = np.arange(n, dtype=float)
    line = 2e8 + 1e8 * k
    residuals, bubbles = [], []
    for amount in (0.0, 0.05, 0.15, 0.3):
        result = _vpp_run(line * (1 + amount * (-1.0) ** k))
        busy = _simulated_tau(result)
        residuals.append(balance_residual(k, busy))
        bubbles.append(summarize(result)["bubble_ratio"])
    assert residuals[0] == pytest.approx(0.0, abs=1e-6)
    assert bubbles[0] == pytest.approx(1 / (n + 1), rel=1e-6)
    assert all(np.diff(residuals) > 0) and all(np.diff(bubbles) > 0)
    # two identical runs: no pure error, so the zigzag is real structure and the fitted curve
    # keeps it in full (shrinkage factor 1): the prediction is the simulated bubble
    fit = fit_curve(np.tile(k, 2), np.tile(busy, 2), np.repeat([0, 1], n), n_boot=50)
    assert fit.balance == pytest.approx(residuals[-1])
    assert fit.balance_est == pytest.approx(residuals[-1])
    assert fit.vpp_bubble_pred == pytest.approx(bubbles[-1], rel=1e-9)
    cpp = summarize(_run(busy, "cpp"))["bubble_ratio"]
    assert fit.vpp_gain_pred == pytest.approx(cpp - bubbles[-1], rel=1e-6)


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
