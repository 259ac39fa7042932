"""One small synthetic curve per verdict."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.analysis.fits import fit_curve
from pipelines.analysis.verdicts import Thresholds, classify
from tests.analysis import fixtures


def _verdict(curve, **kwargs):
    k, tau = curve
    fit = fit_curve(k, tau, n_boot=200, **kwargs)
    return fit, classify(fit)


def test_linear() -> None:
    fit, verdict = _verdict(fixtures.linear())
    assert verdict.label == "linear", verdict.evidence
    assert fit.slope == pytest.approx(fixtures.MS, rel=0.1)
    assert fit.ab_lo < 1 < fit.ab_hi  # eq. 2: a/b = 1


def test_linear_offset() -> None:
    fit, verdict = _verdict(fixtures.offset())
    assert verdict.label == "linear_offset", verdict.evidence
    assert fit.ab_lo > 10 and fit.ab_hi < 60


def test_kinked_reports_the_breakpoint_and_both_slopes() -> None:
    fit, verdict = _verdict(fixtures.kinked(at=6))
    assert verdict.label == "kinked", verdict.evidence
    assert verdict.breakpoint_k == 6
    assert fit.slope_before == pytest.approx(fixtures.MS, rel=0.1)
    assert fit.slope_after == pytest.approx(0.1 * fixtures.MS, abs=0.05 * fixtures.MS)


def test_convex() -> None:
    fit, verdict = _verdict(fixtures.convex())
    assert verdict.label == "convex", verdict.evidence
    assert fit.curvature == pytest.approx(0.15 * fixtures.MS, rel=0.1)


def test_concave() -> None:
    _, verdict = _verdict(fixtures.concave())
    assert verdict.label == "concave", verdict.evidence


def test_too_noisy() -> None:
    _, verdict = _verdict(fixtures.weak())
    assert verdict.label == "too_noisy", verdict.evidence


def test_too_short() -> None:
    k, tau = fixtures.linear(n=4, rel_sd=0.0)
    _, verdict = _verdict((k, tau))
    assert verdict.label == "too_short"
    assert classify(fit_curve(k, tau), Thresholds(min_chunks=4)).label != "too_short"


@pytest.mark.parametrize("seed", range(40))
def test_pure_noise_is_never_linear(seed: int) -> None:
    _, verdict = _verdict(fixtures.flat(n=8, seed=seed, rel_sd=0.03))
    assert verdict.label != "linear", verdict.evidence


def test_a_straight_line_is_linear_whatever_its_noise_seed() -> None:
    fits = [fit_curve(*fixtures.linear(n=8, seed=s), n_boot=50) for s in range(40)]
    labels = [classify(fit).label for fit in fits]
    assert labels.count("linear") >= 37, labels


def test_thresholds_are_parameters() -> None:
    fit, _ = _verdict(fixtures.offset())
    assert classify(fit, Thresholds(offset_ratio_min=100)).label == "linear"
    assert np.isfinite(fit.ab_hi)
