"""A replay of a measured DeepSeek-V3.1 CPP run keeps the paper's sign (issue 13): DCPP slower
than CPP, VPP faster, every replayed makespan within 5 % of the direct simulation. The measured
runs are simulated with 3 % lognormal noise per task, so the fit is not handed the truth."""

from __future__ import annotations

import pytest

from pipelines.replay.measured_run import Measured
from pipelines.replay.rerun import replay
from pipelines.replay.store import format_comparison, simulate_reruns
from pipelines.replay.tables import chunks_frame
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate

K = 1024
SCHEDULES = ("cpp", "dcpp", "vpp", "vpp_async")
CASES = [(128 * K, 16 * K), (256 * K, 16 * K), (512 * K, 24 * K)]


def measured_cpp(prompt: int, chunk: int) -> Measured:
    run = simulate(prompt, "cpp", model="deepseek-v3.1", chunk_size=chunk, noise=0.03, seed=1)
    facts = {"run_id": "measured", "model": "deepseek-v3.1", "chunk_size": chunk, "tp": 8}
    return Measured(facts, chunks_frame(run, run_id="measured"))


@pytest.mark.parametrize("cost", ["tabulated", "fitted"])
@pytest.mark.parametrize(("prompt", "chunk"), CASES)
def test_replay_keeps_the_sign_and_the_makespan(prompt: int, chunk: int, cost: str) -> None:
    reruns = simulate_reruns(measured_cpp(prompt, chunk), SCHEDULES, cost=cost)
    got = {s: summarize(reruns[s])["makespan_ns"] for s in SCHEDULES}
    direct = {
        s: summarize(simulate(prompt, s, model="deepseek-v3.1", chunk_size=chunk))["makespan_ns"]
        for s in SCHEDULES
    }
    print(
        f"{prompt // K}K/{chunk // K}K {cost}: "
        + ", ".join(f"{s} {got[s] / 1e9:.1f} s (direct {direct[s] / 1e9:.1f})" for s in SCHEDULES)
    )
    assert got["dcpp"] > got["cpp"] > got["vpp"] > got["vpp_async"]
    # DCPP within 6 %: its chunk sizes were never measured, and the attention's masked-diagonal
    # share (presets attn_diagonal_extra, issue 34) is not in the replay's cost (128K / 16K
    # tabulated: -5.0 %)
    for s in SCHEDULES:
        assert got[s] == pytest.approx(direct[s], rel=0.06 if s == "dcpp" else 0.05), s
    # one chunk size measured (16K runs divide the prompt): the output names the extrapolation
    if prompt % chunk == 0:
        assert reruns["dcpp"].meta["replay_note"] == (
            "DCPP extrapolates chunk size: overhead from preset"
        )
        assert "replay_note" not in reruns["cpp"].meta


def test_without_overheads_the_replay_flips_the_sign() -> None:
    """The defect this replaces: fitted without per-call overhead, fixed per-pass cost and the
    prefix-only term (and without collectives), a 256K / 16K CPP run predicts DCPP faster."""
    measured = measured_cpp(256 * K, 16 * K)
    old = replay(measured.chunks, ("cpp", "dcpp"), chunk_size=16 * K)
    assert summarize(old["dcpp"])["makespan_ns"] < summarize(old["cpp"])["makespan_ns"]
    assert old["dcpp"].meta["replay_note"].startswith("DCPP extrapolates chunk size: overhead unid")


def test_two_chunk_sizes_identify_the_overheads() -> None:
    """A DCPP run measures many chunk sizes: gamma, phi and kappa come from the run itself and
    the replay adds no note."""
    run = simulate(256 * K, "dcpp", model="deepseek-v3.1", chunk_size=16 * K)
    facts = {"run_id": "m", "model": "deepseek-v3.1", "chunk_size": 16 * K, "tp": 8}
    reruns = simulate_reruns(Measured(facts, chunks_frame(run, run_id="m")), ["cpp"], cost="fitted")
    assert reruns["cpp"].meta["replay_overhead"] == "fitted"
    assert "replay_note" not in reruns["cpp"].meta
    direct = summarize(simulate(256 * K, "cpp", model="deepseek-v3.1", chunk_size=16 * K))
    assert summarize(reruns["cpp"])["makespan_ns"] == pytest.approx(direct["makespan_ns"], rel=0.02)


def test_the_printed_comparison_names_the_extrapolation() -> None:
    from pipelines.replay.store import ReplayReport

    measured = measured_cpp(128 * K, 16 * K)
    reruns = simulate_reruns(measured, ["cpp", "dcpp"])
    report = ReplayReport(measured, "tabulated", "preset link", "cpp", 1.0, results=reruns)
    text = format_comparison(report)
    assert text.splitlines()[-1] == "note: DCPP extrapolates chunk size: overhead from preset"
    assert report.as_json()["notes"] == ["DCPP extrapolates chunk size: overhead from preset"]
