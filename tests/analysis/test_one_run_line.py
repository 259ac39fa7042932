"""The line of one run under AR(1) noise of unknown rho (pipelines.analysis.tau.one_run_line): GLS
at rho's 90 % upper bound with bootstrap-t intervals, from 11 consecutive chunks."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.analysis.tau.fits import fit_stage
from pipelines.analysis.tau.one_run_line import one_run_line
from tests.analysis.fixtures import MS
from tests.analysis.test_serial import _runs

CURVE = MS * (1.5 + np.arange(16.0))


def _coverage(g: int, rho: float, seed: int, curves: int = 300) -> tuple[int, int]:
    rng = np.random.default_rng(seed)
    covered = bounded = 0
    for _ in range(curves):
        fit, _ = fit_stage(*_runs(CURVE, g, rho, 0.03, rng), n_boot=0)
        bounded += "bootstrap-t" in fit.ci_method
        covered += fit.slope_lo <= MS <= fit.slope_hi
    return covered, bounded


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_one_serially_correlated_run_keeps_slope_coverage() -> None:
    """AR(1) rho = 0.7, one run of 16 chunks: GLS at rho's bias-corrected point estimate held
    the true slope in 83-87 % of curves (docs/tau_k.md §6.5)."""
    covered, bounded = _coverage(1, 0.7, 11)
    assert bounded >= 290, bounded  # a few fits take the step model instead
    assert covered >= 0.925 * 300, covered


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_white_noise_is_not_made_conservative() -> None:
    """rho = 0: the bound is above 0 in most fits; the bootstrap-t takes the width back."""
    covered, _ = _coverage(1, 0.0, 13)
    assert 0.915 * 300 <= covered <= 0.975 * 300, covered


def test_several_runs_keep_their_own_line() -> None:
    fit, _ = fit_stage(*_runs(CURVE, 3, 0.7, 0.03, np.random.default_rng(6)), n_boot=0)
    assert "bootstrap-t" not in fit.ci_method and "(mean of 3 runs)" in fit.ci_method


def test_a_run_too_short_to_bound_rho_keeps_gls() -> None:
    k = np.arange(8.0)
    tau = MS * (1.5 + k) * np.exp(0.03 * np.random.default_rng(3).standard_normal(8))
    assert one_run_line(k, tau, MS * (1.5 + k)) is None  # 8 chunks: rho_u = 0.9 for noise
    fit, _ = fit_stage(k, tau, None, n_boot=0)
    assert "bootstrap-t" not in fit.ci_method and "line residuals" in fit.ci_method


def test_the_bounded_line_is_reproducible_and_reads_like_a_regression_result() -> None:
    k = np.arange(16.0)
    tau = CURVE * np.exp(0.03 * np.random.default_rng(4).standard_normal(16))
    first, second = (one_run_line(k, tau, CURVE) for _ in range(2))
    assert np.array_equal(first.conf_int(), second.conf_int())
    lo, hi = first.conf_int(0.05)[1]
    assert lo < first.params[1] < hi
    assert first.critical(0.95) >= (hi - lo) / 2 / first.bse[1] - 1e-12
    assert 0 <= first.pvalues[1] < 0.05 and 0 <= first.rho_u <= 0.9
