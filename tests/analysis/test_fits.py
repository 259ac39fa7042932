"""Statistics of one curve: balance residual, predicted VPP bubble, Fieller ratio, cluster
pooling, breakpoint search."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from pipelines.analysis.tau.curves import fit_curves
from pipelines.analysis.tau.fits import (
    MIN_CLUSTERS,
    balance_residual,
    cpp_bubble_ratio,
    fieller,
    fit_curve,
    vpp_bubble_ratio,
)
from pipelines.cli.fit import format_table
from tests.analysis import fixtures


def test_balance_residual_is_zero_for_any_affine_curve_and_exact_otherwise() -> None:
    k = np.arange(6.0)
    assert balance_residual(k, 7 + 3 * k) == 0.0
    tau = np.array([1.0, 2.0, 4.0, 4.0])  # second differences +1 (k=1), -2 (k=2)
    assert balance_residual(np.arange(4.0), tau) == pytest.approx((1 + 2) / (2 * 2 + 2 * 4))
    # a gap at k=2 leaves only k=4 with both neighbours
    gapped = balance_residual(np.array([0.0, 1.0, 3.0, 4.0, 5.0]), np.array([1, 2, 4, 5, 7.0]))
    assert gapped == pytest.approx(1 / 10)


def test_fieller_matches_the_delta_method_when_the_denominator_is_sharp() -> None:
    lo, hi = fieller(10.0, 2.0, 0.01, 1e-6, 0.0, 1.96)
    delta = 1.96 * math.sqrt(0.01 / 4 + 100 * 1e-6 / 16)
    assert lo == pytest.approx(5 - delta, rel=1e-3) and hi == pytest.approx(5 + delta, rel=1e-3)
    assert fieller(10.0, 0.1, 0.01, 1.0, 0.0, 1.96) == (-math.inf, math.inf)


def test_single_run_slope_interval_uses_t_with_n_minus_2_df() -> None:
    k, tau = fixtures.linear(n=10, seed=3)
    fit = fit_curve(k, tau, n_boot=50)
    assert fit.ci_method.startswith("gls-ar1(") and fit.n_runs == 1
    assert "line residuals" in fit.ci_method
    half = (fit.slope_hi - fit.slope_lo) / 2
    # the t quantile the half-width implies is that of n-2 = 8 df: recover it from the p-value
    se = half / stats.t.ppf(0.975, 8)
    assert 2 * stats.t.sf(abs(fit.slope) / se, 8) == pytest.approx(fit.slope_p, rel=1e-6)


def test_pooling_few_runs_fits_the_mean_curve_and_bootstraps_runs() -> None:
    curves = [fixtures.linear(n=8, seed=s) for s in range(6)]
    k = np.concatenate([c[0] for c in curves])
    tau = np.concatenate([c[1] for c in curves])
    runs = np.repeat(np.arange(6), 8)
    pooled = fit_curve(k, tau, runs, n_boot=200)
    assert (pooled.n_runs, pooled.n_points, pooled.n_k) == (6, 48, 8)
    # fewer than MIN_CLUSTERS runs: the mean curve, GLS with the runs' pure error
    assert pooled.ci_method.startswith("gls-ar1(") and pooled.ci_method.endswith(
        "runs)(mean of 6 runs)"
    )
    assert pooled.balance_method == "parametric(runs) line"
    assert pooled.balance_lo <= pooled.balance_est <= pooled.balance_hi
    # every draw of an affine curve leaves 1/(N+1) up to rounding (the point estimate can lie an
    # ulp outside the draws' percentiles)
    assert pooled.vpp_bubble_lo - 1e-12 <= pooled.vpp_bubble_pred <= pooled.vpp_bubble_hi + 1e-12
    single = fit_curve(*curves[0], n_boot=200)
    assert single.balance_method == "parametric(shape) line"
    # an affine curve with a >= b leaves exactly the drain, 1/(N+1): the interval holds it; one
    # run has none (no pure error to tell structure from noise: bubble_pred.predict_bubbles)
    assert pooled.vpp_bubble_lo <= 1 / 9 <= pooled.vpp_bubble_hi < 1 / 9 + 0.02
    assert np.isnan(single.vpp_bubble_lo) and "no interval" in single.vpp_basis
    # pooling six runs narrows the slope interval
    assert pooled.slope_hi - pooled.slope_lo < single.slope_hi - single.slope_lo


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_many_runs_use_cluster_robust_intervals_and_few_runs_never_lose_power() -> None:
    def pooled(g: int, seed: int):
        curves = [fixtures.linear(n=8, seed=1000 * seed + s, rel_sd=0.05) for s in range(g)]
        k = np.concatenate([c[0] for c in curves])
        tau = np.concatenate([c[1] for c in curves])
        return fit_curve(k, tau, np.repeat(np.arange(g), 8), n_boot=0)

    assert pooled(MIN_CLUSTERS, 0).ci_method == "cluster(run)"
    width = {
        g: np.median([(f.slope_hi - f.slope_lo) for f in (pooled(g, s) for s in range(15))])
        for g in (1, 2, 3, 5)
    }
    assert width[1] > width[2] > width[3] > width[5], width


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_noise_floor_of_the_balance_residual_tracks_the_noise() -> None:
    fits = [fit_curve(*fixtures.linear(n=32, seed=s), n_boot=20) for s in range(30)]
    ratio = np.mean([f.balance for f in fits]) / np.mean([f.balance_floor for f in fits])
    assert 0.8 < ratio < 1.2


def test_breakpoint_search_finds_the_kink_position() -> None:
    for at in (2, 5, 9):
        fit = fit_curve(*fixtures.kinked(n=14, at=at, seed=at), n_boot=20)
        assert fit.breakpoint_k == at
        # one run: rho is estimated under the null (the line), which a kink inflates: p rose
        # from < 1e-6 to ~4e-5 here, still far below alpha (docs/tau_k.md §3)
        assert fit.breakpoint_p < 1e-4 and fit.breakpoint_dbic > 10
    straight = fit_curve(*fixtures.linear(n=14, seed=1), n_boot=20)
    assert straight.breakpoint_p > 0.01


def _chunk_rows(run_id: str, seq_len: int, taus: np.ndarray, last_tokens: int) -> list[dict]:
    n = len(taus)
    return [
        {
            "run_id": run_id,
            "model": "m",
            "schedule": "cpp",
            "chunk_size": 100,
            "seq_len": seq_len,
            "vstage": 0,
            "request_id": "r0",
            "chunk_idx": i,
            "tokens": last_tokens if i == n - 1 else 100,
            "tau_ns": int(t),
        }
        for i, t in enumerate(taus)
    ]


def test_fit_curves_groups_configs_pools_repeats_and_drops_the_remainder_chunk() -> None:
    rows = []
    for s in range(3):
        _, tau = fixtures.linear(n=9, seed=s)
        tau[-1] *= 0.3  # the remainder chunk: 30 tokens instead of 100
        rows += _chunk_rows(f"run{s}", 830, tau, last_tokens=30)
    _, other = fixtures.offset(n=12)
    rows += _chunk_rows("run9", 1200, other, last_tokens=100)
    table = fit_curves(pl.DataFrame(rows), n_boot=100)
    assert table.height == 2
    first = table.filter(pl.col("seq_len") == 830).row(0, named=True)
    assert (first["n_runs"], first["n_points"], first["k_max"]) == (3, 24, 7)
    assert first["verdict"] == "linear", first["evidence"]
    second = table.filter(pl.col("seq_len") == 1200).row(0, named=True)
    assert second["verdict"] == "flattened" and second["n_k"] == 12
    kept = fit_curves(pl.DataFrame(rows), n_boot=100, drop_partial=False)
    assert kept.filter(pl.col("seq_len") == 830).row(0, named=True)["k_max"] == 8


def test_vpp_bubble_prediction_is_the_identity_on_the_fitted_curve() -> None:
    """One noisy run: the prediction follows the fitted line (an affine curve's bubble), not
    the mean curve, whose noise adds |second differences| the true curve does not have."""
    k, tau = fixtures.linear(n=10, seed=0)
    fit = fit_curve(k, tau, n_boot=0)
    assert fit.balance_est == 0.0 < fit.balance
    line = np.polyval(np.polyfit(k, tau, 1), k)
    assert fit.vpp_bubble_pred == pytest.approx(vpp_bubble_ratio(line), rel=2e-2)
    assert fit.vpp_bubble_pred < vpp_bubble_ratio(tau)  # the noisy curve reads high
    assert fit.vpp_gain_pred == pytest.approx(
        cpp_bubble_ratio(line) - vpp_bubble_ratio(line), rel=0.1
    )
    # tau = (k+1) t without noise: VPP leaves 1/(N+1), CPP 2/(N+3) (docs/schedules.md §4.5)
    exact = fit_curve(np.arange(10.0), np.arange(1.0, 11.0) * 1e6, n_boot=0)
    assert exact.vpp_bubble_pred == pytest.approx(1 / 11, rel=1e-12)
    assert exact.vpp_gain_pred == pytest.approx(2 / 13 - 1 / 11, rel=1e-12)
    # a missing chunk index: the request's consecutive chunks are unknown, no prediction
    gapped = fit_curve(np.delete(k[:10], 4), np.delete(tau[:10], 4), n_boot=50)
    assert math.isnan(gapped.vpp_bubble_pred) and math.isnan(gapped.vpp_bubble_hi)
    assert math.isfinite(gapped.balance)


def test_fit_table_and_printout_carry_the_vpp_prediction() -> None:
    rows = []
    for s in range(2):
        _, tau = fixtures.linear(n=8, seed=s)
        rows += _chunk_rows(f"run{s}", 800, tau, last_tokens=100)
    table = fit_curves(pl.DataFrame(rows), n_boot=50)
    assert {"vpp_bubble_pred", "vpp_bubble_lo", "vpp_bubble_hi", "vpp_gain_pred"} <= set(
        table.columns
    )
    row = table.row(0, named=True)
    assert 0.09 < row["vpp_bubble_pred"] < 0.2 and 0 < row["vpp_gain_pred"] < 0.1
    text = format_table(table, wide=True)
    assert max(len(line) for line in format_table(table).splitlines()) <= 120
    assert "VPP bubble pred" in text and f"{row['vpp_bubble_pred']:.1%}" in text


def test_a_long_operator_name_narrows_the_compact_table_to_120_columns() -> None:
    """aiconfigurator's operators ('msa_context_module kv=bf16 gemm=fp8') made it 210 wide: the
    schedule, model and source columns give way, cut in the middle so the tail still tells two
    curves apart; --wide keeps every name whole."""
    rows = []
    for s in range(2):
        _, tau = fixtures.linear(n=8, seed=s)
        rows += _chunk_rows(f"run{s}", 800, tau, last_tokens=100)
    table = fit_curves(pl.DataFrame(rows), n_boot=0)
    names = ("msa_context_module kv=bf16 gemm=bf16", "msa_context_module kv=bf16 gemm=fp8")
    table = pl.concat([table.with_columns(operator=pl.lit(n)) for n in names]).with_columns(
        model=pl.lit("MiniMaxAI/MiniMax-M3-preview-sparse-attention"),
        source=pl.lit("aiconfigurator-sglang-h200"),
    )
    text = format_table(table)
    assert max(len(line) for line in text.splitlines()) <= 120
    tails = [line.split()[2] for line in text.splitlines()[1:]]  # the sched column
    assert tails[0].endswith("=bf16") and tails[1].endswith("=fp8")
    assert f"table:{names[1]}" in format_table(table, wide=True)


def test_the_order_rows_are_read_in_changes_no_number() -> None:
    """Several requests per run share each chunk index; a lake returns its rows in no set
    order. The demo's glm-5.2 cpp 1K/16K curve gave slopes 152 / 156 / 158 µs per chunk for
    one set of rows read three ways before the points of one index were ordered by request."""
    rows = []
    for s in range(3):
        for q in range(4):
            _, tau = fixtures.linear(n=8, seed=10 * s + q)
            for row in _chunk_rows(f"run{s}", 800, tau, last_tokens=100):
                rows.append({**row, "request_id": f"req-{q}"})
    frame = pl.DataFrame(rows)
    fits = [
        fit_curves(frame.sample(fraction=1.0, shuffle=True, seed=seed), n_boot=20, seed=0)
        for seed in range(4)
    ]
    numbers = ["slope", "slope_lo", "slope_hi", "intercept", "ab_ratio", "ab_lo", "ab_hi"]
    for other in fits[1:]:
        assert other.select(numbers).rows() == fits[0].select(numbers).rows()
