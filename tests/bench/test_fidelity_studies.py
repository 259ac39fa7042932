"""The studies behind the missed §6.2 and overlap claims (pipelines/bench/fidelity_studies.py,
docs/fidelity.md §5)."""

from __future__ import annotations

import itertools

import pytest

from pipelines.bench.fidelity_studies import (
    K,
    dcpp_step_cost_ceiling_ns,
    format_short,
    overlap_readings,
    overlap_sweep,
    short_cells,
)


def test_where_dcpp_runs_cpps_steps_vpp_gains_the_same_over_both() -> None:
    """A 4K prompt fits every budget and a 4K budget is vLLM-Ascend's 4,096-token floor: DCPP
    has nothing to resize, runs CPP's steps, and VPP over DCPP is VPP over CPP exactly. A 16K
    prompt in packed 8K steps is where DCPP's time budget resizes a piece."""
    cells = short_cells(("qwen3-coder-30b-a3b",), (4 * K,), (4 * K, 8 * K))
    assert len(cells) == 4 and all(c.same_steps for c in cells)
    assert all(c.dcpp == c.cpp for c in cells)
    resized = short_cells(("deepseek-v3.1",), (16 * K,), (8 * K,))
    packed = next(c for c in resized if c.packed)
    assert not packed.same_steps and packed.dcpp_steps > packed.cpp_steps
    assert "DCPP runs CPP's steps in 4 of 4 cells" in format_short(cells)


def test_table2_bounds_a_dcpp_step_cost() -> None:
    """DCPP's bubble (21.79 s model, 20.47 s paper, band 15 %) leaves 1.75 s over 99 steps."""
    assert dcpp_step_cost_ceiling_ns() == pytest.approx(17.7e6, rel=0.02)


def test_overlap_readings_and_the_hidden_collective_sweep() -> None:
    readings = overlap_readings()
    assert readings["all communication, both ranks"] == pytest.approx(0.461, abs=0.002)
    assert readings["P2P only (collectives left out)"] > readings["all communication, both ranks"]
    rows = overlap_sweep((0.0, 0.2, 0.4))
    assert rows[0].table2_vpp_exposed_s == pytest.approx(33.69, abs=0.02)
    assert rows[0].table2_overlap == pytest.approx(0.578, abs=0.002)
    # hiding more collective time raises both overlap ratios: the ablation's (below the
    # paper's 54.03 %) and table 2's (already above its 51.75 %)
    for a, b in itertools.pairwise(rows):
        assert b.ablation_overlap > a.ablation_overlap and b.table2_overlap > a.table2_overlap
        assert b.vpp_vs_dcpp_exposed < a.vpp_vs_dcpp_exposed


def test_no_dcpp_estimator_setting_reaches_the_papers_bubble_difference() -> None:
    """Online calibration off or on, refit window 10-100 steps: DCPP's bubble stays 43.1-43.6 %
    below CPP's (paper 47.0 %, met from 44.0 %); a 5-step window runs 32 steps and is faster
    than CPP, against table 2's +4.65 % total."""
    from pipelines.bench.fidelity_studies import dcpp_estimator_sweep

    rows = dcpp_estimator_sweep()
    many = [r for r in rows if r["steps"] > 40]
    assert len(many) == 4
    assert all(-0.44 < r["bubble_vs_cpp"] < -0.42 for r in many)
    few = [r for r in rows if r["steps"] <= 40]
    assert few and all(r["total_vs_cpp"] < 0 for r in few)


def test_a_4k_budget_leaves_no_room_for_deepseeks_10_8_percent() -> None:
    """Read as a 4K chunk size, §6.2's DeepSeek +10.8 % is VPP over CPP (DCPP runs CPP's steps at
    its 4,096-token floor); CPP's headroom there is below the band's lower edge, 7.8 %."""
    cells = short_cells(("deepseek-v3.1",), (4 * K, 8 * K, 16 * K), (4 * K,))
    assert all(c.same_steps for c in cells)
    assert all(0 < c.cpp_headroom < 0.078 and c.vpp / c.cpp - 1 < 0.078 for c in cells)


def test_long_cells_glm_64k_dcpp_runs_cpps_steps_at_its_best_budget() -> None:
    from pipelines.bench.fidelity_studies import long_cells

    cells = {c.budget: c for c in long_cells((("glm-5.2", 64 * K),))}
    assert all(cells[b].same_steps for b in (16 * K, 24 * K, 32 * K))
    assert max(cells.values(), key=lambda c: c.dcpp).budget == 16 * K


def test_no_reading_of_the_waits_reaches_a_48_percent_cut() -> None:
    from pipelines.bench.fidelity_studies import unoverlapped_readings

    readings = list(unoverlapped_readings().values())
    assert readings[0] > 0.9  # the model's reading: the wrong sign
    assert all(r > -0.45 for r in readings)  # the band starts at -51 % and ends at -45 %


def test_deepseek_growth_is_ordered_only_without_online_calibration() -> None:
    """Online calibration on (refit 10-100 steps): 128K >= 256K, the strict order missed; off:
    ordered, but table 2's DCPP vs CPP total is then +7.63 % (paper +4.65 +- 2 pp)."""
    from pipelines.bench.fidelity_studies import growth_by_estimator

    for cfg, gains in growth_by_estimator():
        ordered = gains == sorted(gains)
        assert ordered == (not cfg.online), (cfg, gains)


def test_no_glm_setting_meets_the_64k_peak_and_table2_bounds_the_dcpp_cost_it_needs() -> None:
    """Fig. 4's GLM: VPP over DCPP 8.5 % at 64K (then narrowing) beside at most 4.1 % over CPP.
    Neither the preset (DSA top-2048), a denser attention (top-k 32K), the quadratic host form
    nor DCPP without online calibration meets it; the DCPP-only cost per step it would need is
    above the 17.7 ms table 2's DCPP bubble band leaves, 4x above it for the preset."""
    from pipelines.bench.fidelity_studies import format_glm, glm_sweep

    rows = glm_sweep((2048, 32 * K))
    assert len(rows) == 4 and not any(r.meets for r in rows)
    assert all(r.over_dcpp[0] < 0.055 for r in rows)  # the band starts at 5.5 %
    ceiling = dcpp_step_cost_ceiling_ns()
    assert rows[0].setting.endswith("(preset)") and rows[0].step_cost_needed_ns > 4 * ceiling
    assert all(r.step_cost_needed_ns > ceiling for r in rows)
    assert rows[0].over_dcpp[0] == pytest.approx(rows[0].over_cpp[0])  # DCPP runs CPP's steps
    assert "table 2 allows 17.7 ms" in format_glm(rows)


def test_qwens_up_to_hinges_on_the_host_exponent_table2_does_not_fix() -> None:
    """Every claim under a host set-up of h n (n / 512K)^(P - 1): P = 1 is the model (Qwen up
    to +4.29 %, 3.01 pp short of 7.3 %, missed); P = 1.25 meets it and loses no met line."""
    from pipelines.bench.fidelity import Variant, all_claims
    from pipelines.bench.fidelity_studies import QWEN_UP_TO, host_exponent_sweep

    (_, at1), (_, at125) = host_exponent_sweep((1.0, 1.25))
    base = {(c.section, c.claim): c for c in all_claims(variant=Variant())}
    assert {k: c.met for k, c in at1.items()} == {k: c.met for k, c in base.items()}
    assert not at1[QWEN_UP_TO].met and at1[QWEN_UP_TO].model == pytest.approx(0.0429, abs=5e-4)
    assert at125[QWEN_UP_TO].met
    assert not [k for k, c in at125.items() if base[k].met and not c.met]


def test_a_64k_fall_needs_a_call_cost_that_breaks_table2_and_the_512k_pick() -> None:
    """advise at 64K (DeepSeek-V3.1): no fall as chunks shrink with the preset; 100 ms more per
    stage call already puts table 2's DCPP vs CPP outside +4.65 +- 2 pp; the fall appears only
    at 0.9 s, where the 512K pick leaves 24K for 32K."""
    from pipelines.bench.fidelity_studies import call_cost_sweep, format_call_costs

    rows = call_cost_sweep((0.0, 100e6, 900e6))
    preset, small, large = rows[:3]
    assert not preset.falls_64k and preset.best_512k.endswith("at 24K")
    assert abs(preset.dcpp_vs_cpp - 0.0465) <= 0.02
    assert small.dcpp_vs_cpp - 0.0465 > 0.02
    assert large.falls_64k and large.best_512k.endswith("at 32K")
    # the fall is DCPP's: VPP-Async's own curve (the bench's §6.5 line) still peaks at 24K
    assert large.best_64k.startswith("dcpp") and max(large.vpp_async_64k) == large.vpp_async_64k[2]
    no_delta = rows[3]
    assert no_delta.diagonal == 0.0 and not no_delta.falls_64k
    assert "falls" in format_call_costs(rows)


def test_without_host_set_up_qwens_device_side_gain_is_the_papers() -> None:
    """With no host set-up (P -> infinity below 512K) Qwen's VPP over CPP peaks at 128K at
    +7.18 %, 0.12 pp from the paper's 7.3 %: the whole miss is how the set-up scales."""
    from pipelines.bench.fidelity_studies import qwen_gains_without_host

    gains = qwen_gains_without_host((64 * K, 128 * K, 256 * K))
    assert max(gains, key=gains.__getitem__) == 128 * K
    assert gains[128 * K] == pytest.approx(0.0718, abs=5e-4)


def test_a_dcpp_only_cost_meets_glms_64k_line_only_past_table2s_band() -> None:
    """Simulated, not first order: a cost DCPP alone pays per stage call. 78 ms lifts GLM's VPP
    over DCPP at 64K into the band (from 5.5 %) but puts table 2's DCPP vs CPP total at +8.7 %
    (band +2.65 to +6.65 %); 17.7 ms (the DCPP bubble's ceiling) already leaves that band."""
    from pipelines.bench.fidelity_studies import dcpp_step_cost_sweep, format_dcpp_costs

    none, ceiling, needed = dcpp_step_cost_sweep((0.0, 17.7e6, 78e6))
    assert none.glm_64k_over_dcpp == pytest.approx(0.0105, abs=1e-3)
    assert abs(none.table2_dcpp_vs_cpp - 0.0465) <= 0.02
    assert ceiling.glm_64k_over_dcpp < 0.055 and ceiling.table2_dcpp_vs_cpp > 0.0665
    assert needed.glm_64k_over_dcpp >= 0.055 and needed.table2_dcpp_vs_cpp > 0.0665
    assert "GLM 64K" in format_dcpp_costs([none])
