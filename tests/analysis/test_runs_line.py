"""The line from the runs' own lines (pipelines.analysis.tau.runs_line): exact t(G-1) inference,
used
when three or more runs show serial correlation, GLS kept when they do not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pipelines.analysis.tau.fits import fit_stage
from pipelines.analysis.tau.runs_line import RunsLine, rho_standard_error, runs_line
from tests.analysis.fixtures import MS
from tests.analysis.test_serial import _runs


def test_runs_line_is_the_mean_of_the_per_run_lines_with_t_of_g_minus_1() -> None:
    rng = np.random.default_rng(0)
    k, tau, runs = _runs(MS * (2 + np.arange(8.0)), 4, 0.5, 0.03, rng)
    line = runs_line(k, tau, runs)
    per = np.array([np.polyfit(k[runs == r], tau[runs == r], 1)[::-1] for r in range(4)])
    assert np.allclose(line.params, per.mean(axis=0))
    se = per[:, 1].std(ddof=1) / 2
    half = stats.t.ppf(0.975, 3) * se
    assert np.allclose(line.conf_int(0.05)[1], [per[:, 1].mean() - half, per[:, 1].mean() + half])
    assert line.df_resid == 3 and np.isclose(line.bse[1], se)
    assert runs_line(k[runs < 2], tau[runs < 2], runs[runs < 2]) is None  # t(1): no interval


def test_rho_standard_error_counts_pairs_within_runs() -> None:
    k = np.tile(np.arange(9.0), 3)
    runs = np.repeat(np.arange(3), 9)
    # 8 pairs a run, 24 in all, (G-1)/G of them effective: sqrt((1 - 0.25) / 16)
    assert np.isclose(rho_standard_error(0.5, k, runs), np.sqrt(0.75 / 16))
    assert rho_standard_error(0.5, np.array([0.0, 2.0]), np.array([0, 0])) == np.inf


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_serially_correlated_runs_get_run_lines_and_keep_coverage() -> None:
    """AR(1) rho = 0.7, 3 runs of 16 chunks: GLS with rho from the pure error covered the true
    slope in 90.1 % of 1,000 DeepSeek-V3.1 stage curves (92.5 % with the true rho); here GLS
    covered 271 of these 300 curves, the run lines 281 (docs/tau_k.md §6.4)."""
    rng = np.random.default_rng(7)
    curve = MS * (1.5 + np.arange(16.0))
    covered = switched = 0
    for _ in range(300):
        fit, _ = fit_stage(*_runs(curve, 3, 0.7, 0.03, rng), n_boot=0)
        switched += "run lines t(2)" in fit.ci_method
        covered += fit.slope_lo <= MS <= fit.slope_hi
    assert switched >= 270 and covered >= 0.925 * 300, (switched, covered)


@pytest.mark.slow  # a seeded rate study (CI runs it: .ci/run)
def test_independent_runs_keep_the_narrower_gls_line() -> None:
    rng = np.random.default_rng(8)
    curve = MS * (1.5 + np.arange(16.0))
    switched = 0
    for _ in range(200):
        fit, _ = fit_stage(*_runs(curve, 3, 0.0, 0.03, rng), n_boot=0)
        switched += "run lines" in fit.ci_method
    # rho > its se by chance: 28 of 200 (the run lines cover as well, 191 vs 192, only wider)
    assert switched <= 0.25 * 200, switched


def test_a_runs_line_is_what_statsmodels_would_report_for_its_numbers() -> None:
    lines = np.array([[1.0, 2.0], [1.2, 2.1], [0.9, 1.8]])
    line = RunsLine(lines)
    t = line.params / line.bse
    assert np.allclose(line.pvalues, 2 * stats.t.sf(np.abs(t), 2))
    assert np.allclose(line.cov_params(), np.cov(lines.T) / 3)
