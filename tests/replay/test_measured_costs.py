"""Cost models from a measured chunks frame, and replay under other schedules."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.ingest.frames import SCHEMAS
from pipelines.replay.rerun import replay
from pipelines.replay.tables import chunks_frame
from pipelines.replay.tabulated_cost import TabulatedCost
from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate

TRUTH = FittedCost(alpha_ns=2_000.0, beta_ns=0.05, call_overhead_ns=3_000_000.0)


def measured(schedule: str, prompt: int = 262144, chunk: int = 16384, **kw) -> pl.DataFrame:
    result = simulate(prompt, schedule, model=TRUTH, chunk_size=chunk, comm=None, **kw)
    return chunks_frame(result, run_id=f"sim-{schedule}")


def test_chunks_frame_is_canonical() -> None:
    frame = measured("vpp")
    assert frame.schema == pl.Schema(SCHEMAS["chunks"])
    assert (frame["busy_ns"] == frame["end_ns"] - frame["start_ns"]).all()
    assert frame.height == 16 * 4 and frame["run_id"].unique().to_list() == ["sim-vpp"]


def test_fit_recovers_alpha_beta_gamma_from_several_chunk_sizes() -> None:
    fit = FittedCost.from_chunks(measured("dcpp"), num_layers=120)
    assert fit.alpha_ns == pytest.approx(TRUTH.alpha_ns, rel=1e-4)
    assert fit.beta_ns == pytest.approx(TRUTH.beta_ns, rel=1e-4)
    assert fit.call_overhead_ns == pytest.approx(TRUTH.call_overhead_ns, rel=1e-3)
    assert fit.fit_info["r2"] > 0.999999


def test_single_chunk_size_fixes_gamma() -> None:
    frame = measured("cpp")
    fit = FittedCost.from_chunks(frame, gamma_ns=TRUTH.call_overhead_ns)
    assert (fit.alpha_ns, fit.beta_ns) == pytest.approx((TRUTH.alpha_ns, TRUTH.beta_ns), rel=1e-4)
    a, b = fit.tau_line(16384)
    line = FittedCost.from_tau_line(a, b, 16384)
    assert (line.alpha_ns, line.beta_ns) == pytest.approx((fit.alpha_ns, fit.beta_ns))


def test_tabulated_cost_returns_measured_chunks_and_interpolates() -> None:
    frame = measured("cpp", prompt=65536)
    table = TabulatedCost.from_chunks(frame)
    per_chunk = frame.group_by("chunk_idx").agg(
        pl.col("busy_ns").sum(), pl.col("prefix_tokens").first()
    )
    got = table.full_ns(np.full(per_chunk.height, 16384), per_chunk["prefix_tokens"].to_numpy())
    assert np.allclose(got, per_chunk["busy_ns"].to_numpy(), rtol=1e-9, atol=1)
    mid = table.full_ns(np.array([16384]), np.array([8192]))[0]
    ends = table.full_ns(np.array([16384, 16384]), np.array([0, 16384]))
    assert mid == pytest.approx(ends.mean())


def test_replaying_a_run_under_its_own_schedule_reproduces_it() -> None:
    original = simulate(262144, "cpp", model=TRUTH, chunk_size=16384, comm=None)
    frame = chunks_frame(original, "run-a")
    again = replay(frame, ["cpp"])["cpp"]
    assert summarize(again)["makespan_ns"] == pytest.approx(
        summarize(original)["makespan_ns"], abs=len(frame)
    )
    assert again.meta["replay_of"] == "run-a"


def test_replay_of_a_cpp_trace_predicts_vpp_and_dcpp() -> None:
    frame = chunks_frame(simulate(262144, "cpp", model=TRUTH, chunk_size=16384, comm=None), "r")
    replays = replay(frame, ["cpp", "dcpp", "vpp", "vpp_async"], gamma_ns=TRUTH.call_overhead_ns)
    truth = {
        s: summarize(simulate(262144, s, model=TRUTH, chunk_size=16384, comm=None))["makespan_ns"]
        for s in replays
    }
    for schedule, result in replays.items():
        predicted = summarize(result)["makespan_ns"]
        error = abs(predicted / truth[schedule] - 1)
        print(
            f"replay {schedule}: predicted {predicted / 1e9:.3f} s, truth "
            f"{truth[schedule] / 1e9:.3f} s, error {error:.2%}"
        )
        assert error < 0.01
    assert summarize(replays["vpp"])["makespan_ns"] < summarize(replays["cpp"])["makespan_ns"]


def test_replay_with_noise_and_fitted_cost() -> None:
    frame = chunks_frame(
        simulate(131072, "cpp", model=TRUTH, chunk_size=16384, comm=None, noise=0.05, seed=3), "n"
    )
    out = replay(frame, ["vpp"], cost="fitted", noise=0.03, seed=1)
    assert out["vpp"].meta["noise"] == 0.03 and out["vpp"].meta["replay_cost"] == "fitted"
    with pytest.raises(ValueError):
        replay(frame, ["vpp"], cost="nonsense")
