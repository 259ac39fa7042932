"""The paper's qualitative results from the architecture presets (seed 000 §3, §7;
docs/schedules.md §6). Nothing here is fitted per test: one calibration in presets.py serves all."""

from __future__ import annotations

import pytest

from pipelines.sim import presets
from pipelines.sim.calibration import paper_run
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate

K = 1024


def run(model: str, prompt, schedule: str, chunk: int = 24 * K) -> dict:
    return summarize(simulate(prompt, schedule, model=model, chunk_size=chunk))


def test_deepseek_512k_ordering_and_breakdown() -> None:
    res = {s: run("deepseek-v3.1", 512 * K, s) for s in ("cpp", "dcpp", "vpp_async")}
    for s, m in res.items():
        print(
            f"deepseek-v3.1 512K {s:9s}: total {m['makespan_ns'] / 1e9:7.2f} s, compute "
            f"{m['compute_ns'] / 1e9:7.2f} s, bubble {m['bubble_ns'] / 1e9:6.2f} s "
            f"({m['bubble_ratio']:.2%}; profiler view {m['profiler_bubble_ratio']:.2%}), "
            f"exposed comm {m['exposed_comm_ns'] / 1e9:5.2f} s, steps {m['scheduling_steps']}"
        )
    cpp, dcpp, vpp = res["cpp"], res["dcpp"], res["vpp_async"]
    assert vpp["makespan_ns"] < cpp["makespan_ns"] < dcpp["makespan_ns"]
    # DCPP trades bubble for compute (fragmentation): paper 20.47 vs 38.64 s bubble,
    # 279.07 vs 252.59 s compute, 4.4x the scheduling steps
    assert dcpp["bubble_ns"] < cpp["bubble_ns"]
    assert dcpp["compute_ns"] > 1.05 * cpp["compute_ns"]
    assert dcpp["scheduling_steps"] > 4 * cpp["scheduling_steps"]
    # the calibrated compute matches the paper's CPP compute (252.59 s) within 2 %
    assert cpp["compute_ns"] / 1e9 == pytest.approx(252.59, rel=0.02)
    # VPP's bubble, as the profiler measures it (each rank over its own step window)
    assert vpp["profiler_bubble_ratio"] < 0.01
    assert (
        vpp["profiler_bubble_ratio"] < dcpp["profiler_bubble_ratio"] < cpp["profiler_bubble_ratio"]
    )
    assert vpp["overlap_ratio"] > 0.5 > cpp["overlap_ratio"]


def test_deepseek_512k_back_to_back_vpp_pack_bubble_under_one_percent() -> None:
    """Over consecutive 512K requests the packing fills the drain: the bubble of the whole run
    (global window, fill and drain included) stays under 1 %."""
    m = run("deepseek-v3.1", [512 * K] * 4, "vpp_pack")
    print(f"deepseek-v3.1 4 x 512K vpp_pack: bubble {m['bubble_ratio']:.3%}")
    assert m["bubble_ratio"] < 0.01


def test_dcpp_128k_steps_with_the_deepseek_preset() -> None:
    """Paper (Fig. 1b): 17 DCPP steps at 128K where CPP takes 8, i.e. a 16K budget. DCPP as
    vLLM-Ascend runs it (online calibration, calibration.paper_run): 11 steps at 24K and 19 at
    16K, 17 +12 % (issue 34 calibration; 21 before it)."""
    steps = [paper_run(n * K, "dcpp")["scheduling_steps"] for n in (64, 128, 256, 512)]
    at_16k = paper_run(128 * K, "dcpp", chunk_size=16 * K)["scheduling_steps"]
    print("deepseek-v3.1 DCPP steps at 64K/128K/256K/512K (C = 24K):", steps, "128K/16K:", at_16k)
    assert run("deepseek-v3.1", 128 * K, "cpp", chunk=16 * K)["scheduling_steps"] == 8
    assert 11 <= steps[1] <= 17 <= at_16k <= 19
    assert steps == sorted(steps)


def _gain(model: str, n_k: int) -> float:
    cpp = run(model, n_k * K, "cpp")["makespan_ns"]
    vpp = run(model, n_k * K, "vpp_async")["makespan_ns"]
    return cpp / vpp - 1


@pytest.mark.xfail(
    strict=True,
    reason="with blocking TP/EP collectives (docs/fidelity.md) GLM's gain over CPP rises from 64K "
    "(+4.4 %) to 128K (+5.0 %) before it shrinks; the paper's narrowing is against DCPP",
)
def test_dsa_gains_less_than_mla_and_the_gain_shrinks_with_length() -> None:
    """Over the lengths the paper reports (DeepSeek 64K-512K, GLM 64K-256K). Beyond them the
    model's GLM gain grows again: the indexer is O(L²), so at 1M+ τ_k is steep again (printed,
    not asserted; the paper has no GLM data past 256K)."""
    lengths = (64, 128, 256, 512, 1024)
    ds = [_gain("deepseek-v3.1", n) for n in lengths]
    glm = [_gain("glm-5.2", n) for n in lengths]
    print(
        "VPP gain over CPP, 64K..1M: deepseek",
        [f"{g:+.2%}" for g in ds],
        "glm",
        [f"{g:+.2%}" for g in glm],
    )
    assert all(g < d for g, d in zip(glm[:4], ds[:4], strict=True))
    assert glm[0] > glm[1] > glm[2]


def test_vpp_beats_dcpp_more_as_sequences_grow_for_deepseek() -> None:
    """Measured as the paper measures (calibration.paper_run: DCPP with online calibration, host
    set-up on); with the library's offline DCPP the 512K gain dips below the 256K one."""
    gains = []
    for n in (128, 256, 512):
        dcpp = paper_run(n * K, "dcpp")["makespan_ns"]
        vpp = paper_run(n * K, "vpp_async")["makespan_ns"]
        gains.append(dcpp / vpp - 1)
    print("deepseek VPP over DCPP at 128K/256K/512K:", [f"{g:+.1%}" for g in gains])
    assert gains == sorted(gains) and gains[-1] > 0.05


def test_presets_cover_the_paper_models_and_llama() -> None:
    assert set(presets.PRESET_NAMES) == {
        "qwen3-coder-30b-a3b",
        "deepseek-v3.1",
        "glm-5.2",
        "llama3-8b",
    }
    m = run("llama3-8b", 32 * K, "cpp", chunk=4 * K)
    assert m["hardware"] == "h100-sxm" and m["makespan_ns"] > 0
    with pytest.raises(ValueError):
        presets.cost_model("gpt-9")
