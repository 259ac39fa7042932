"""The simulator's disturbed noise: each option does what it says on the chunk latencies."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.replay.tables import chunks_frame
from pipelines.sim.disturbance import Disturbance
from pipelines.sim.run import simulate

K = 1024


def _stage0(disturbance: Disturbance | None, noise: float = 0.0, seed: int = 1) -> np.ndarray:
    run = simulate(
        256 * K,
        "cpp",
        chunk_size=16 * K,
        noise=noise,
        seed=seed,
        disturbance=disturbance,
        collectives=None,  # the disturbances scale compute; collectives add a fixed part
    )
    chunks = chunks_frame(run, "r").filter(pl.col("vstage") == 0).sort("chunk_idx")
    return chunks["busy_ns"].to_numpy().astype(float)


def test_outlier_chunk_and_throttle_step_scale_exactly_the_chunks_they_name() -> None:
    base = _stage0(None)
    ratio = _stage0(Disturbance(outlier_k=7, outlier_factor=2.0)) / base
    assert ratio[7] == pytest.approx(2.0, rel=1e-6)
    assert np.delete(ratio, 7) == pytest.approx(1.0, rel=1e-6)
    step = _stage0(Disturbance(throttle_factor=1.05)) / base
    half = len(base) // 2
    assert step[:half] == pytest.approx(1.0, rel=1e-6)
    assert step[half:] == pytest.approx(1.05, rel=1e-6)


def test_run_scale_multiplies_the_whole_run_by_one_factor() -> None:
    ratio = _stage0(Disturbance(run_sigma=0.1), seed=4) / _stage0(None)
    assert np.ptp(ratio) < 1e-6 and abs(ratio[0] - 1) > 1e-4


def test_ar1_noise_is_serially_correlated_with_the_stated_marginal_sigma() -> None:
    base = _stage0(None)

    def lag1(disturbance: Disturbance | None) -> tuple[float, float]:
        lags, sds = [], []
        for seed in range(40):
            z = np.log(_stage0(disturbance, noise=0.05, seed=seed) / base)
            lags.append(np.corrcoef(z[:-1], z[1:])[0, 1])
            sds.append(z.std(ddof=1))
        return float(np.mean(lags)), float(np.mean(sds))

    rho, sd = lag1(Disturbance(ar_rho=0.7))
    assert 0.4 < rho < 0.8  # the lag-1 autocorrelation of 16 points is biased low
    assert 0.03 < sd < 0.06
    rho_iid, _ = lag1(None)
    assert abs(rho_iid) < 0.15


def test_invalid_options_are_refused() -> None:
    with pytest.raises(ValueError):
        Disturbance(ar_rho=1.0)
    with pytest.raises(ValueError):
        Disturbance(throttle_factor=0.0)


def test_with_blocking_collectives_a_slowdown_is_of_compute_only() -> None:
    """TP / EP collectives are part of a call's duration; a kernel slowdown leaves them alone
    (3 % asked, 3 % of compute, exposed comm unchanged: before, compute absorbed the scaled
    collectives and grew 4.2 %), and the run scale moves compute and communication alike."""
    from pipelines.sim.metrics import summarize

    def run(disturbance: Disturbance | None, seed: int = 3) -> dict:
        return summarize(
            simulate(64 * K, "cpp", chunk_size=16 * K, seed=seed, disturbance=disturbance)
        )

    base = run(None)
    slow = run(Disturbance(throttle_factor=1.03, throttle_from=0.0))
    assert slow["compute_ns"] / base["compute_ns"] == pytest.approx(1.03, rel=1e-6)
    assert slow["exposed_comm_ns"] == base["exposed_comm_ns"]
    scaled = run(Disturbance(run_sigma=0.1))
    factor = scaled["compute_ns"] / base["compute_ns"]
    assert abs(factor - 1) > 1e-3
    assert scaled["exposed_comm_ns"] / base["exposed_comm_ns"] == pytest.approx(factor, rel=1e-6)
    assert scaled["makespan_ns"] / base["makespan_ns"] == pytest.approx(factor, rel=1e-6)
    whole = run(Disturbance(run_factor=1.03))  # --run-slowdown 3: TTFT exactly 3 % longer
    assert whole["ttft_mean_ns"] / base["ttft_mean_ns"] == pytest.approx(1.03, rel=1e-6)
    assert whole["exposed_comm_ns"] / base["exposed_comm_ns"] == pytest.approx(1.03, rel=1e-6)
