"""pipelines.analysis.advice: chunk-size x schedule advice on the simulator (docs/advise.md)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from pipelines import schedule_kinds
from pipelines.analysis.advice import (
    NoiseModel,
    Scenario,
    advise,
    curve_source,
    parse_chunk_grid,
    preset_source,
    remainder_note,
    table_source,
)
from pipelines.analysis.advice.advisor import margin_draws, sweep_grid, trend
from pipelines.analysis.advice.grid import FINE_GRID, PAPER_GRID, chunk_count, parse_tokens
from pipelines.sim.fitted_cost import FittedCost
from pipelines.sim.metrics import summarize
from pipelines.sim.run import simulate

K = 1024
QUIET = NoiseModel(task=0.0, run=0.0, draws=200)


def test_chunk_grids_parse_lists_ranges_and_names() -> None:
    assert parse_chunk_grid("paper") == PAPER_GRID == (8 * K, 16 * K, 24 * K, 32 * K)
    assert parse_chunk_grid("8K:32K:4K") == FINE_GRID and len(FINE_GRID) == 7
    assert parse_chunk_grid("32K, 8k,8K,3000") == (3000, 8 * K, 32 * K)
    assert parse_tokens("1M") == K * K and parse_tokens("0.5K") == 512
    for bad in ("", "abc", "8K:4K:1K", "1:100000:1", "1.5", "8K:16K"):
        with pytest.raises(ValueError):
            parse_chunk_grid(bad)


def test_remainder_chunk_of_24k_at_512k_is_8k() -> None:
    assert chunk_count(512 * K, 24 * K) == (22, 8 * K)
    assert chunk_count(512 * K, 16 * K) == (32, 16 * K)
    assert remainder_note(512 * K, 24 * K).startswith("22 chunks, the last one 8K")
    assert remainder_note(64 * K, 16 * K) == "4 equal chunks"


def test_sweep_rows_are_the_simulators_own_numbers() -> None:
    """No second simulator: each row is pipelines.sim.run.simulate of that point, summarised by
    pipelines.sim.metrics.summarize (vp 2 for VPP schedules, 1 otherwise; pp and length kept)."""
    scenario = Scenario(128 * K, pp=2, chunks=(16 * K, 24 * K), schedules=("cpp", "dcpp", "vpp"))
    rows = sweep_grid(preset_source("deepseek-v3.1"), scenario)
    assert [(r["schedule"], r["chunk_size"]) for r in rows] == [
        (s, c) for s in scenario.schedules for c in scenario.chunks
    ]
    for r in rows:
        vp = 2 if r["schedule"] == "vpp" else 1
        run = simulate(
            128 * K, r["schedule"], model="deepseek-v3.1", chunk_size=r["chunk_size"], vp=vp
        )
        s = summarize(run)
        assert (
            r["makespan_ns"] == s["makespan_ns"] and r["scheduling_steps"] == s["scheduling_steps"]
        )
        assert r["n_chunks"] == math.ceil(128 * K / r["chunk_size"])
    by = {(r["schedule"], r["chunk_size"]): r for r in rows}
    assert by[("dcpp", 16 * K)]["scheduling_steps"] > by[("cpp", 16 * K)]["scheduling_steps"]


def test_deepseek_512k_picks_24k_and_a_vpp_variant() -> None:
    """Acceptance (issue 32 item 4): the paper's DeepSeek-V3.1 preset at 512K on the paper's
    budgets picks 24K chunks (its 8K remainder chunk runs in the drain) and a VPP schedule."""
    result = advise(preset_source("deepseek-v3.1"), Scenario(512 * K), NoiseModel(draws=500))
    assert result.best["chunk_size"] == 24 * K
    assert schedule_kinds.is_virtual(result.best["schedule"])
    assert result.best["last_chunk"] == 8 * K
    # with one request VPP-Pack has nothing to pack: a tie, never the runner-up
    assert "vpp_pack at 24K" in result.ties
    assert (
        result.runner_up is not None
        and result.runner_up["makespan_ns"] > result.best["makespan_ns"]
    )
    assert result.margin_lo <= result.margin <= result.margin_hi


@pytest.mark.xfail(
    strict=True,
    reason="the presets' costs reproduce the VPP paper's 64K finding only below 16K: at 64K on "
    "DeepSeek throughput falls from 16K to 8K but 24K and 32K lose to 16K; the fall needs ~0.9 s "
    "more per stage call, table 2 bounds one at 75 ms (docs/advise.md, fidelity_studies chunk64)",
)
def test_deepseek_64k_throughput_falls_as_chunks_shrink() -> None:
    result = advise(preset_source("deepseek-v3.1"), Scenario(64 * K), QUIET)
    best = result.best["schedule"]
    assert result.trends[best] == "falls as chunks shrink"


def test_trend_names_monotone_and_peaked_curves() -> None:
    def rows(costs):
        return [
            {"chunk_size": c, "makespan_ns": m} for c, m in zip(PAPER_GRID, costs, strict=False)
        ]

    assert trend(rows([4, 3, 2, 1]), "throughput") == "falls as chunks shrink"
    assert trend(rows([1, 2, 3, 4]), "throughput") == "rises as chunks shrink"
    assert trend(rows([3, 2, 1, 2]), "throughput") == "best at 24K"
    assert trend(rows([1])[:1], "throughput") == "-"


def test_margin_without_noise_is_exact_and_outside_the_noise() -> None:
    result = advise(preset_source("deepseek-v3.1"), Scenario(128 * K), QUIET)
    assert result.margin > 0
    assert result.margin_lo == pytest.approx(result.margin) == result.margin_hi
    assert result.inside_noise is False and result.runner_up_faster == 0.0


def test_margin_inside_large_noise() -> None:
    """A 1 % margin cannot be told apart with 30 % run-to-run noise and one run a side."""
    noisy = NoiseModel(task=0.0, run=0.3, runs=1, draws=2000)
    result = advise(preset_source("deepseek-v3.1"), Scenario(512 * K), noisy)
    assert result.inside_noise is True
    assert 0.2 < result.runner_up_faster < 0.5


def test_margin_draws_of_equal_sides_flip_half_the_time() -> None:
    noise = NoiseModel(run=0.02, runs=4, draws=20_000, seed=3)
    same = np.full(10, 100.0)
    flips = float(np.mean(margin_draws(same, same, noise) <= 0))
    assert flips == pytest.approx(0.5, abs=0.02)
    # 5 % apart with 2 % noise and 4 runs a side: almost never flips
    assert float(np.mean(margin_draws(same, same * 1.05, noise) <= 0)) < 0.001


def test_proportional_curve_prefers_vpp_over_cpp() -> None:
    """tau_k = (k+1) t (the paper's law, free transfers): VPP's fold-back removes the
    imbalance bubble, so a VPP schedule beats CPP at every chunk size."""
    t = 200e6  # ns per chunk of 16K at k = 0
    source = curve_source(t, t, 16 * K)
    scenario = Scenario(256 * K, schedules=("cpp", "vpp"), chunks=(16 * K, 32 * K))
    result = advise(source, scenario, QUIET)
    by = {(r["schedule"], r["chunk_size"]): r["makespan_ns"] for r in result.rows}
    for chunk in scenario.chunks:
        assert by[("vpp", chunk)] < by[("cpp", chunk)]
    assert result.best["schedule"] == "vpp"
    with pytest.raises(ValueError):
        curve_source(1.0, 10.0, 16 * K)  # a below b/2: no positive per-token term


def test_latency_table_source_recovers_its_cost(tmp_path) -> None:
    truth = FittedCost(alpha_ns=2_000.0, beta_ns=0.05, prefix_ns=30.0, fixed_ns=5e6)
    c = np.repeat([4 * K, 8 * K, 16 * K], 6)
    p = np.tile(np.arange(6) * 16 * K, 3)
    frame = pl.DataFrame({"tokens": c, "prefix": p, "time_ms": truth.full_ns(c, p) / 1e6})
    path = tmp_path / "table.csv"
    frame.write_csv(path)
    source = table_source(path)
    fitted = source.model
    assert isinstance(fitted, FittedCost)
    assert fitted.alpha_ns == pytest.approx(truth.alpha_ns, rel=1e-6)
    assert fitted.beta_ns == pytest.approx(truth.beta_ns, rel=1e-6)
    result = advise(source, Scenario(128 * K, schedules=("cpp", "vpp")), QUIET)
    assert len(result.rows) == 8
    two = frame.with_columns(pl.lit("layer").alias("operator"))
    both = pl.concat([two, two.with_columns(pl.lit("attention").alias("operator"))])
    both.write_csv(tmp_path / "ops.csv")
    with pytest.raises(ValueError, match="several operators"):
        table_source(tmp_path / "ops.csv")
    assert table_source(tmp_path / "ops.csv", "layer").label.endswith("(layer)")
    bad = tmp_path / "bad.csv"
    pl.DataFrame({"tokens": [1, 2], "time_ms": [1.0, 2.0]}).write_csv(bad)
    with pytest.raises(ValueError, match="not an operator-latency table"):
        table_source(bad)


def test_scenario_refuses_unknown_schedules_and_empty_grids() -> None:
    with pytest.raises(ValueError):
        Scenario(64 * K, schedules=("zpp",))
    with pytest.raises(ValueError):
        Scenario(64 * K, chunks=())
    with pytest.raises(ValueError):
        preset_source("gpt-9")


@pytest.mark.parametrize("model", ["glm-5.2", "qwen3-coder-30b-a3b"])
def test_noisy_runs_are_measured_as_the_rows_are(model) -> None:
    """The noisy runs behind the margin use the rows' own metric: with 0.1 % task noise and no
    run noise the measured margin sits on the noise-free one (it sat 20 % off when the noisy
    makespan was read from the task table, whose first task starts after t = 0 in blocking VPP)."""
    noise = NoiseModel(task=0.001, run=0.0, task_seeds=4, draws=200)
    result = advise(preset_source(model), Scenario(64 * K), noise)
    assert result.margin_lo - 0.003 <= result.margin <= result.margin_hi + 0.003
    assert result.margin_hi - result.margin_lo < 0.006
