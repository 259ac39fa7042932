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
