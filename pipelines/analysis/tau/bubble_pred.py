"""Predicted VPP and CPP bubbles from fitted tau_k curves, one per virtual stage, with their
sampling intervals (docs/tau_k.md §6.2).

Identities (P = 2, vp = 2, fold-back layout: rank 0 runs virtual stages 0 and 3, rank 1 stages 1
and 2; free transfers; one request of chunks 0..N-1; vanilla VPP order, s3(k-1) before
s0(k+1)). Every cycle c = -1..N ends when both ranks are done: rank 0 runs s0(c+1) + s3(c-1),
rank 1 runs s1(c) + s2(c) (missing chunks count 0), so the lighter rank idles their difference:

    idle = sum_c |s0(c+1) + s3(c-1) - s1(c) - s2(c)|,   VPP bubble = idle / (sum s + idle).

With equal stages (s_v = tau/4) this is `fits.vpp_bubble_ratio`. CPP on the same stages is a
two-machine flow shop with rank r0 = s0 + s1 and r1 = s2 + s3. Both are exact against the
simulator (tests/analysis/test_bubble_pred.py).

The estimate of each stage's curve is the fitted curve, not the raw mean curve: noise on the
mean curve adds |second differences| that the true curve does not have, so the mean curve's
bubble runs high (+0.6 to +1.1 pp for an exactly affine curve). The fitted curve is the shape the
fit kept (the line, or the quadratic / hinge / level step when significant), plus the per-k
residuals shrunk towards it by a positive-part James-Stein factor computed from the runs' pure
error: 0 while the lack of fit is below its 95 % critical value, towards 1 when the curve has
real chunk-to-chunk structure. With one run pure error is not known and the shape alone is used.
Outlier chunks (pipelines.analysis.tau.outliers) keep their measured mean (a slow chunk really
changes the bubble). The interval is a parametric bootstrap of this whole estimator: noise drawn
around the fitted curve with the estimated relative variance (its own chi-square uncertainty
included), the same shape refitted and shrunk again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

NAN = float("nan")
LACK_OF_FIT_LEVEL = 0.95
"""Quantile of the lack-of-fit F statistic below which the residuals are shrunk to nothing."""


@dataclass(frozen=True)
class StageCurve:
    """One virtual stage's estimated curve on consecutive chunks k_min..k_max and `draws`
    (B x N) of the same estimator under the parametric bootstrap (B = 0 without intervals)."""

    k_grid: np.ndarray
    tau: np.ndarray
    draws: np.ndarray
    method: str

    @property
    def contiguous(self) -> bool:
        return bool(self.k_grid.size) and bool(np.all(np.diff(self.k_grid) == 1))


def vpp_bubble_stages(stages: np.ndarray) -> np.ndarray:
    """VPP bubble ratio (P = 2, vp = 2) of (..., 4, N) virtual-stage curves s0..s3."""
    stages = np.asarray(stages, dtype=float)
    lead = stages.shape[:-2]
    zero = np.zeros((*lead, 1))
    s0 = np.concatenate([stages[..., 0, :], zero, zero], axis=-1)  # s0(c+1), c = -1..N
    s3 = np.concatenate([zero, zero, stages[..., 3, :]], axis=-1)  # s3(c-1)
    mid = np.concatenate([zero, stages[..., 1, :] + stages[..., 2, :], zero], axis=-1)
    idle = np.abs(s0 + s3 - mid).sum(axis=-1)
    return idle / (stages.sum(axis=(-2, -1)) + idle)


def cpp_bubble_stages(stages: np.ndarray) -> np.ndarray:
    """CPP bubble ratio (two ranks, r0 = s0 + s1, r1 = s2 + s3) of (..., 4, N) stage curves:
    the flow-shop recurrence end1(k) = max(end1(k-1), end0(k)) + r1(k)."""
    stages = np.asarray(stages, dtype=float)
    r0 = stages[..., 0, :] + stages[..., 1, :]
    r1 = stages[..., 2, :] + stages[..., 3, :]
    end0 = np.cumsum(r0, axis=-1)
    end1 = np.zeros(stages.shape[:-2])
    for k in range(stages.shape[-1]):
        end1 = np.maximum(end1, end0[..., k]) + r1[..., k]
    busy = r0.sum(axis=-1) + r1.sum(axis=-1)
    return (2 * end1 - busy) / (2 * end1)


def virtual_stages(curves: list[np.ndarray]) -> tuple[np.ndarray, str] | None:
    """The four virtual-stage curves (..., 4, N) a VPP run with P = 2, vp = 2 would have: four
    curves are taken as they are (a VPP run's stages 0..3); two (a CPP run's ranks 0 and 1)
    are each split evenly into the rank's two virtual stages; one curve into four equal stages.
    Returns the stack and the basis it rests on, or None for another count."""
    if len(curves) == 4:
        return np.stack(curves, axis=-2), "4 virtual stages"
    if len(curves) == 2:
        r0, r1 = (c / 2 for c in curves)
        return np.stack([r0, r0, r1, r1], axis=-2), "2 ranks, each split evenly"
    if len(curves) == 1:
        quarter = curves[0] / 4
        return np.stack([quarter] * 4, axis=-2), "1 curve as 4 equal stages"
    return None


@dataclass(frozen=True)
class BubblePrediction:
    vpp_bubble_pred: float
    vpp_bubble_lo: float
    vpp_bubble_hi: float
    vpp_gain_pred: float
    vpp_gain_lo: float
    vpp_gain_hi: float
    vpp_basis: str


EMPTY_PREDICTION = BubblePrediction(NAN, NAN, NAN, NAN, NAN, NAN, "none")


def predict_bubbles(curves: list[StageCurve], level: float) -> BubblePrediction:
    """VPP's predicted bubble and its gain over CPP for the stage curves of one configuration
    (in stage order), with `level` percentile intervals from the stages' bootstrap draws."""
    if not curves or not all(c.contiguous for c in curves):
        return EMPTY_PREDICTION
    grid = curves[0].k_grid
    if any(c.k_grid.shape != grid.shape or np.any(c.k_grid != grid) for c in curves):
        return EMPTY_PREDICTION
    point = virtual_stages([c.tau for c in curves])
    if point is None:
        return EMPTY_PREDICTION
    stages, basis = point
    vpp = float(vpp_bubble_stages(stages))
    gain = float(cpp_bubble_stages(stages)) - vpp
    lo = hi = gain_lo = gain_hi = NAN
    boots = {c.draws.shape[0] for c in curves}
    if len(boots) == 1 and boots.pop() > 0:
        drawn, _ = virtual_stages([c.draws for c in curves])
        vpp_draws = vpp_bubble_stages(drawn)
        lo, hi = percentile_interval(vpp_draws, level)
        gain_lo, gain_hi = percentile_interval(cpp_bubble_stages(drawn) - vpp_draws, level)
    return BubblePrediction(vpp, lo, hi, gain, gain_lo, gain_hi, basis)


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """The central `level` percentile interval of the finite values."""
    values = values[np.isfinite(values)]
    if values.size == 0:
        return NAN, NAN
    lo, hi = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def shrunk_curve(
    k_grid: np.ndarray,
    k: np.ndarray,
    y: np.ndarray,
    runs: np.ndarray,
    kept: np.ndarray,
    shape: np.ndarray,
    n_boot: int,
    seed: int,
) -> StageCurve:
    """The stage's fitted curve on k_grid and its parametric-bootstrap draws.

    `k`, `y`, `runs`: every point; `kept`: per k_grid entry, False for outlier chunk indices;
    `shape`: the design (rows = kept k_grid entries) of the shape the fit kept."""
    index = np.searchsorted(k_grid, k)
    counts = np.bincount(index, minlength=len(k_grid)).astype(float)
    means = np.bincount(index, weights=y, minlength=len(k_grid)) / counts
    n_shape = int(kept.sum())
    params = shape.shape[1]
    # WLS by count / level^2 (multiplicative noise), weights from a first unweighted pass
    first = _wls_hat(shape, counts[kept]) @ means[kept]
    floor = 0.1 * float(np.mean(means))
    weights = counts[kept] / np.maximum(first, floor) ** 2
    hat = _wls_hat(shape, weights)
    fitted = hat @ means[kept]
    level = np.where(kept, 0.0, means)
    level[kept] = np.maximum(fitted, floor)
    rel = (y - means[index]) / level[index]
    df_pure = len(y) - len(k_grid)
    df_shape = n_shape - params
    lack = float(np.sum(counts[kept] * ((means[kept] - fitted) / level[kept]) ** 2))
    if df_pure >= 2 and df_shape >= 1:  # replicate runs: pure error, lack of fit, shrinkage
        s2, df_s = float(rel @ rel) / df_pure, df_pure
        crit = df_shape * stats.f.ppf(LACK_OF_FIT_LEVEL, df_shape, df_pure) * s2
        shrink = max(0.0, 1 - crit / lack) if lack > 0 else 0.0
        method = "parametric(runs)"
    elif df_shape >= 1:
        s2, df_s, shrink = lack / df_shape, df_shape, 0.0
        method = "parametric(shape)"
    else:
        return StageCurve(k_grid, means, np.empty((0, len(k_grid))), "none")
    tau = means.copy()
    tau[kept] = fitted + shrink * (means[kept] - fitted)
    if n_boot <= 0 or not math.isfinite(s2):
        return StageCurve(k_grid, tau, np.empty((0, len(k_grid))), method)
    rng = np.random.default_rng(seed)
    sd = math.sqrt(s2) * np.sqrt(df_s / rng.chisquare(df_s, n_boot))  # s itself is estimated
    base = np.maximum(tau, floor)
    if method == "parametric(runs)":
        noise = rng.standard_normal((n_boot, len(y))) * sd[:, None]
        points = base[index] * (1 + noise)
        sums = np.zeros((n_boot, len(k_grid)))
        np.add.at(sums.T, index, points.T)
        boot_means = sums / counts
        rel_b = (points - boot_means[:, index]) / level[index]
        s2_b = (rel_b**2).sum(axis=1) / df_pure
        fit_b = boot_means[:, kept] @ hat.T
        lack_b = (counts[kept] * ((boot_means[:, kept] - fit_b) / level[kept]) ** 2).sum(axis=1)
        crit_b = df_shape * stats.f.ppf(LACK_OF_FIT_LEVEL, df_shape, df_pure) * s2_b
        shrink_b = np.clip(1 - crit_b / np.maximum(lack_b, 1e-300), 0.0, 1.0)
        draws = boot_means.copy()
        draws[:, kept] = fit_b + shrink_b[:, None] * (boot_means[:, kept] - fit_b)
    else:
        noise = rng.standard_normal((n_boot, len(k_grid))) * sd[:, None] / np.sqrt(counts)
        boot_means = base * (1 + noise)
        draws = boot_means.copy()
        draws[:, kept] = boot_means[:, kept] @ hat.T
    return StageCurve(k_grid, tau, draws, method)


def _wls_hat(X: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The hat matrix X (X'WX)^-1 X'W of weighted least squares."""
    xtw = X.T * weights
    return X @ np.linalg.pinv(xtw @ X) @ xtw
