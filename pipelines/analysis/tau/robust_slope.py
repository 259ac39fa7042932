"""The robust companion interval of a tau_k slope: one that holds whatever the AR(1) rho of the
noise up to RHO_CAP and a slowdown step of up to SLOWDOWN anywhere in the run.

A run of 8-10 chunks cannot tell correlated from independent noise (no test reaches more than
~28 % power at rho = 0.7, N = 8), so no single interval is both <= 97 % under white noise and
>= 93 % under rho = 0.7 (docs/tau_k_accuracy.md §6.11). The model interval (fits.fit_stage)
answers for its noise model; this one states the assumptions it holds under instead:

1. the noise is multiplicative (sd proportional to tau_hat) and AR(1) over the chunk sequence
   with some rho in [0, RHO_CAP]: for each rho of RHO_GRID the GLS line under that rho (least
   squares of the series whitened as pipelines.analysis.tau.serial whitens it) gives a t(m - 2)
   interval of the slope, exact (Gaussian noise) when rho is the true one; the interval is their
   union, so it holds at least `level` at every grid rho;
2. a level step of at most SLOWDOWN x tau (a clock or thermal throttle) may start at any chunk
   of the run: the step shifts each GLS slope by a known amount per onset (the GLS hat matrix
   applied to SLOWDOWN x tau_hat from that chunk on), and each rho's interval is widened by the
   largest shift either way over the onsets (zero shift included: no step);
3. outlier chunks are those fits.fit_stage's screen removed (the same kept points).

Assumptions not covered: rho > RHO_CAP, a step larger than SLOWDOWN, several steps, a speed-up
(a step down), and a curve that is not a line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from pipelines.analysis.tau.serial import noise_model

RHO_CAP = 0.7
"""The largest AR(1) rho the robust interval holds under."""
RHO_GRID = np.round(np.arange(0.0, RHO_CAP + 1e-9, 0.1), 2)
SLOWDOWN = 0.05
"""The largest relative level step (from any chunk on) the robust interval holds under."""


@dataclass(frozen=True)
class RobustSlope:
    """The robust slope interval and, for comparison, the white-noise t interval's half-width
    (WLS 1/tau_hat^2, t(m - 2)) of the same points."""

    lo: float
    hi: float
    white_half: float

    def method(self) -> str:
        return f"union of GLS rho in [0, {RHO_CAP:g}], +-{SLOWDOWN:.0%} step anywhere"


NAN_SLOPE = RobustSlope(float("nan"), float("nan"), float("nan"))


def robust_slope_interval(
    k: np.ndarray,
    y: np.ndarray,
    counts: np.ndarray,
    tau_hat: np.ndarray,
    level: float = 0.95,
    rho_cap: float = RHO_CAP,
    slowdown: float = SLOWDOWN,
) -> RobustSlope:
    """The RobustSlope of the mean curve y at sorted distinct chunk indices k (counts points
    averaged at each k) with fitted level tau_hat (> 0); NaN with fewer than 4 chunk indices."""
    k = np.asarray(k, dtype=float)
    y = np.asarray(y, dtype=float)
    m = len(k)
    if m < 4:
        return NAN_SLOPE
    X = np.column_stack([np.ones(m), k])
    t = float(stats.t.ppf(0.5 + level / 2, m - 2))
    onsets = [np.zeros(m)] + [slowdown * tau_hat * (k >= kk) for kk in k[1:]]
    steps = np.column_stack(onsets)
    lows, highs, white_half = [], [], float("nan")
    for rho in (r for r in RHO_GRID if r <= rho_cap + 1e-12):
        noise = noise_model(k, tau_hat, counts, float(rho), (0.0, 0), "robust")
        # GLS as least squares of the whitened series (numpy: 8 of these per curve)
        xw, yw = noise.whiten(X), noise.whiten(y)
        hat = np.linalg.pinv(xw)  # GLS coefficients = hat @ whitened y
        beta = hat @ yw
        resid = yw - xw @ beta
        se = float(np.sqrt(resid @ resid / (m - 2) * (hat[1] @ hat[1])))
        half = t * se
        if rho == 0:
            white_half = half
        # the GLS slope's shift by a step from each onset: row 1 of the GLS hat matrix
        shifts = hat[1] @ noise.whiten(steps)
        lows.append(float(beta[1]) - half - max(float(shifts.max()), 0.0))
        highs.append(float(beta[1]) + half - min(float(shifts.min()), 0.0))
    return RobustSlope(float(min(lows)), float(max(highs)), white_half)
