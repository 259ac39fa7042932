"""The few-runs noise model (pipelines.analysis.tau.serial): AR(1) measured from the runs' pure
error
or one run's line residuals, pure error pooled into every test. Each rate below was measured
before the model existed (docs/tau_k.md §6.3) and fails on that code."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pipelines.analysis.tau.fits import fit_curve
from pipelines.analysis.tau.serial import pure_error, residual_rho
from pipelines.analysis.tau.verdicts import classify
from tests.analysis.fixtures import MS

SHAPES = ("knee", "convex", "concave")


def _ar1(n: int, rho: float, rng: np.random.Generator) -> np.ndarray:
    z = np.empty(n)
    z[0] = rng.standard_normal()
    for j in range(1, n):
        z[j] = rho * z[j - 1] + np.sqrt(1 - rho * rho) * rng.standard_normal()
    return z


def _runs(curve: np.ndarray, g: int, rho: float, sd: float, rng: np.random.Generator):
    n = len(curve)
    tau = np.concatenate([curve * np.exp(sd * _ar1(n, rho, rng)) for _ in range(g)])
    return np.tile(np.arange(n, dtype=float), g), tau, np.repeat(np.arange(g), n)


def test_rho_of_the_pure_error_is_unbiased_and_blind_to_the_shape() -> None:
    rng = np.random.default_rng(0)
    k_grid = np.arange(16.0)
    kink = MS * (1 + k_grid + 2 * np.maximum(k_grid - 8, 0))  # a shape the runs share
    rhos = []
    for _ in range(200):
        k, tau, runs = _runs(kink, 3, 0.7, 0.03, rng)
        means = np.array([tau[k == kk].mean() for kk in k_grid])
        _ss, df, rho = pure_error(k, tau, runs, k_grid, means)
        rhos.append(rho)
    assert df == 32 and np.mean(rhos) == pytest.approx(0.7, abs=0.05)


def test_one_run_rho_is_bias_corrected() -> None:
    """The raw lag-1 autocorrelation of 8 line residuals averages about 0.3 for rho = 0.7."""
    rng = np.random.default_rng(1)
    k = np.arange(8.0)
    X = np.column_stack([np.ones(8), k])
    curve = MS * (1.5 + k)
    raw, corrected = [], []
    for _ in range(300):
        tau = curve * np.exp(0.03 * _ar1(8, 0.7, rng))
        e = tau / curve - 1
        e = e - X @ np.linalg.lstsq(X, e, rcond=None)[0]
        raw.append(float(e[:-1] @ e[1:] / (e @ e)))
        corrected.append(residual_rho(k, X, tau, curve))
    assert np.mean(raw) < 0.4 and np.median(corrected) > np.median(raw) + 0.2


@pytest.mark.slow  # a seeded coverage / rate study (CI runs it: .ci/run)
def test_repeated_runs_keep_slope_coverage_under_ar1() -> None:
    """AR(1) rho = 0.7, 3 runs of 16 chunks: the mean curve keeps rho; HC3 on it covered the true
    slope in 77 % of 200 stage curves (docs/tau_k.md §6.3)."""
    rng = np.random.default_rng(2)
    curve = MS * (1.5 + np.arange(16.0))
    covered = 0
    for _ in range(80):
        fit = fit_curve(*_runs(curve, 3, 0.7, 0.03, rng), n_boot=0)
        assert fit.ci_method.startswith("gls-ar1(") and "runs)" in fit.ci_method
        covered += fit.slope_lo <= MS <= fit.slope_hi
    assert covered / 80 >= 0.86, covered


@pytest.mark.slow  # a seeded rate study (CI runs it: .ci/run)
def test_one_run_with_ar1_noise_is_not_called_a_shape() -> None:
    """One run of 8 chunks under AR(1) rho = 0.7 was kinked/convex/concave in 8 % of curves."""
    rng = np.random.default_rng(3)
    curve = MS * (1.5 + np.arange(8.0))
    labels = [
        classify(fit_curve(*_runs(curve, 1, 0.7, 0.03, rng), n_boot=0)).label for _ in range(150)
    ]
    shaped = sum(label in SHAPES for label in labels)
    assert shaped / 150 <= 0.03, shaped


@pytest.mark.slow  # a seeded rate study (CI runs it: .ci/run)
def test_three_runs_find_a_slope_collapse_on_eight_chunks() -> None:
    """A 50 % slope collapse at k = 4 under 5 % noise, 3 runs of 8 chunks: the mean curve's 5 df
    found it (kinked) in 60 % of curves; the runs' pure error adds 16 df."""
    rng = np.random.default_rng(4)
    k = np.arange(8.0)
    curve = MS * (1.6 + k - 0.5 * np.maximum(k - 4, 0))
    labels = [
        classify(fit_curve(*_runs(curve, 3, 0.0, 0.05, rng), n_boot=0)).label for _ in range(60)
    ]
    assert sum(label in ("knee", "flattened") for label in labels) / 60 >= 0.75, labels


def test_pooled_tests_use_the_pure_error_degrees_of_freedom() -> None:
    rng = np.random.default_rng(5)
    curve = MS * (1.5 + np.arange(8.0))
    fit = fit_curve(*_runs(curve, 4, 0.0, 0.03, rng), n_boot=0)
    rho = float(fit.ci_method.split("rho=")[1].split(",")[0])
    df = 8 - 2 + 24 * (1 - rho**2) / (1 + rho**2)  # line residuals + pure error, AR-effective
    half = (fit.slope_hi - fit.slope_lo) / 2
    se = half / stats.t.ppf(0.975, df)
    assert 2 * stats.t.sf(abs(fit.slope) / se, df) == pytest.approx(fit.slope_p, rel=1e-6)
