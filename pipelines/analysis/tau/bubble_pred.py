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
changes the bubble). The stage's parametric bootstrap (noise drawn around the fitted curve with
the estimated relative variance, the same shape refitted and shrunk again) still gives the
balance interval (fits.py); the bubble's interval no longer comes from it: a percentile
bootstrap of this estimator, bounded below and biased by the noise, held the noise-free bubble
in 11-96 % on shaped curves. It comes from `bubble_bounds` (a bound that holds for any shape,
from the per-k means and the runs' pure error); one run gets none (docs/advise.md).
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
    (B x N) of the same estimator under the parametric bootstrap (B = 0 without intervals).
    With replicate runs also the per-k means, their standard errors (from the runs' pure error)
    and its degrees of freedom, which the bubble's interval rests on (predict_bubbles)."""

    k_grid: np.ndarray
    tau: np.ndarray
    draws: np.ndarray
    method: str
    means: np.ndarray | None = None
    se: np.ndarray | None = None
    df: int = 0

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
    (in stage order): the point from the fitted (shrunk) curves, the `level` interval from the
    per-k means by the bound of `bubble_bounds`. Without replicate runs (no pure error) there is
    no interval, and `vpp_basis` says why: one run cannot tell chunk-to-chunk structure, which
    changes the bubble, from noise."""
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
    if all(c.se is not None and c.means is not None and c.df >= 2 for c in curves):
        lo, hi, gain_lo, gain_hi = bubble_bounds(
            [c.means for c in curves], [c.se for c in curves], [c.df for c in curves], level
        )
        # the point is one estimate of the truth the interval holds: never outside it
        lo, hi = min(lo, vpp), max(hi, vpp)
        gain_lo, gain_hi = min(gain_lo, gain), max(gain_hi, gain)
    else:
        basis += f"; {NO_INTERVAL}"
    return BubblePrediction(vpp, lo, hi, gain, gain_lo, gain_hi, basis)


NO_INTERVAL = "no interval: one run (noise and chunk-to-chunk structure not separable)"
BOUND_DRAWS = 2000
"""Draws of the noise vector behind the bound's quantiles (Monte Carlo error of a 0.98
quantile's tail probability: about 0.3 percentage points)."""


def _vpp_cycles(stages: np.ndarray) -> np.ndarray:
    """Per cycle c = -1..N: rank 0's work s0(c+1) + s3(c-1) minus rank 1's s1(c) + s2(c)."""
    lead = stages.shape[:-2]
    zero = np.zeros((*lead, 1))
    s0 = np.concatenate([stages[..., 0, :], zero, zero], axis=-1)
    s3 = np.concatenate([zero, zero, stages[..., 3, :]], axis=-1)
    mid = np.concatenate([zero, stages[..., 1, :] + stages[..., 2, :], zero], axis=-1)
    return s0 + s3 - mid


def _cpp_idles(stages: np.ndarray) -> np.ndarray:
    """CPP's idle (both ranks) if path k is the critical one: 2 P_k - S, with P_k = sum_{j<=k}
    r0_j + sum_{j>=k} r1_j the flow shop's path lengths (r0 = s0 + s1, r1 = s2 + s3) and S the
    work; the makespan is max_k P_k, so the idle is the largest of these."""
    r0 = stages[..., 0, :] + stages[..., 1, :]
    r1 = stages[..., 2, :] + stages[..., 3, :]
    paths = np.cumsum(r0, axis=-1) + np.cumsum(r1[..., ::-1], axis=-1)[..., ::-1]
    return 2 * paths - stages.sum(axis=(-2, -1))[..., None]


def bubble_bounds(
    means: list[np.ndarray],
    se: list[np.ndarray],
    df: list[int],
    level: float,
    n_draws: int = BOUND_DRAWS,
    seed: int = 0,
) -> tuple[float, float, float, float]:
    """(VPP bubble lo, hi, gain lo, hi): a `level` interval for the noise-free bubbles of the
    true stage curves tau, from their per-k means m = tau + e (e_k ~ N(0, se_k^2), se from the
    runs' pure error with `df` degrees of freedom).

    Both bubbles are functions of three quantities of the curves: the VPP idle I = sum_c |L_c|
    (L_c the cycle differences, linear in the curves), the work S = sum of all stages and the
    CPP idle J = max_k Q_k (Q_k = 2 P_k - S, P_k the flow shop's path lengths; linear):
    vpp = I / (S + I), cpp = J / (S + J). Whatever tau is:

        sum_c s_c L_c(e)  <=  I(m) - I(tau)  <=  sum_c |L_c(e)|     (s_c = sign L_c(tau))
        Q_k*(e)           <=  J(m) - J(tau)  <=  max_k Q_k(e)       (k* = argmax Q_k(tau))

    (convexity of |.| and of the max), and on a cycle whose sign is settled (|L_c(m)| beyond
    kappa standard errors, kappa Bonferroni-sized so that no settled sign is wrong with
    probability >= 1 - alpha/10) the term is exactly s_c L_c(e). The right-hand sides are
    simulated from se (each stage's scale drawn from its chi-square) and taken at one-sided
    quantiles; the left-hand sides are linear in e with signs unknown where unsettled, their
    spread bounded by sqrt(sum |cov|) and taken at Student t's quantile. With the work's
    two-sided t bound (alpha/10), Bonferroni over the remaining one-sided bounds gives joint
    coverage >= level, and the bubbles, monotone in I and J, range over that box. No shape is
    fitted, so a kink, a knee or a step cannot break it; it is conservative where many cycles
    are near balance (tests/analysis/test_bubble_pred.py; `python -m pipelines.bench.vpp_pred`
    measures it on shaped curves)."""
    rng = np.random.default_rng(seed)
    centre, _ = virtual_stages([np.asarray(m, dtype=float) for m in means])
    unit, scaled = [], []
    for s, d in zip(se, df, strict=True):
        s = np.asarray(s, dtype=float)
        z = rng.standard_normal((n_draws, s.size)) * s
        unit.append(z)
        scaled.append(z * np.sqrt(d / rng.chisquare(d, (n_draws, 1))))
    errors, _ = virtual_stages(scaled)
    plain, _ = virtual_stages(unit)
    cycles, paths = _vpp_cycles(plain), _cpp_idles(plain)
    alpha, dof = 1 - level, min(df)

    def t(tail: float) -> float:
        return float(stats.t.ppf(1 - tail, dof))

    def q(values: np.ndarray, tail: float) -> float:
        return float(np.quantile(values, 1 - tail))

    centre_cycles = _vpp_cycles(centre)
    kappa = t(alpha / 10 / (2 * centre_cycles.size))
    settled = np.abs(centre_cycles) > kappa * cycles.std(axis=0)
    sign = np.where(settled, np.sign(centre_cycles), 0.0)
    error_cycles = _vpp_cycles(errors)
    up_idle = (error_cycles * sign).sum(axis=-1) + (np.abs(error_cycles) * ~settled).sum(axis=-1)
    spread_idle = math.sqrt(float(np.abs(np.cov(cycles, rowvar=False)).sum()))
    spread_span = float(paths.std(axis=0).max())
    spread_work = float(plain.sum(axis=(-2, -1)).std())
    up_span = _cpp_idles(errors).max(axis=-1)  # J(m) - J(tau) <= this
    idle = float(np.abs(centre_cycles).sum())
    work = float(centre.sum())
    span = float(_cpp_idles(centre).max())
    d_w = t(alpha / 10 / 2) * spread_work
    w_lo, w_hi = max(work - d_w, 1e-300), work + d_w

    def vpp(i: float, w: float) -> float:
        return i / (w + i)

    def idle_box(sides: int) -> tuple[float, float]:
        """I's lower and upper limits, 8/10 of alpha shared by `sides` one-sided bounds."""
        share = 0.8 * alpha / sides
        return max(idle - q(up_idle, share), 0.0), idle + t(share) * spread_idle

    i_lo, i_hi = idle_box(2)
    lo, hi = vpp(i_lo, w_hi), vpp(i_hi, w_lo)
    i_lo, i_hi = idle_box(4)
    share = 0.8 * alpha / 4
    m_lo, m_hi = span - q(up_span, share), span + t(share) * spread_span
    works = np.linspace(w_lo, w_hi, 41)

    def gain(i: float, j: float) -> np.ndarray:
        j = max(j, 0.0)
        return j / (works + j) - i / (works + i)

    return lo, hi, float(gain(i_hi, m_lo).min()), float(gain(i_lo, m_hi).max())


def ttft_saving(vpp_bubble: float, gain: float) -> float:
    """The share of CPP's TTFT (makespan, one request) VPP saves, from VPP's bubble ratio and
    its gain over CPP (P = 2): both runs do the same work W on 2 ranks, so the makespan is
    W / (2 (1 - bubble)) and the saving 1 - (1 - cpp) / (1 - vpp) = gain / (1 - vpp)."""
    return gain / (1 - vpp_bubble) if vpp_bubble < 1 else NAN


def ttft_saving_interval(
    vpp_lo: float, vpp_hi: float, gain_lo: float, gain_hi: float
) -> tuple[float, float]:
    """The range of ttft_saving over the box of the VPP-bubble and gain intervals (the saving
    rises with the gain and, for a positive gain, with VPP's bubble). Each interval covers on
    its own; `tracereplay bench tau-accuracy --vpp-interval` measures how often the box holds
    the true saving."""
    corners = [ttft_saving(v, g) for v in (vpp_lo, vpp_hi) for g in (gain_lo, gain_hi)]
    if any(math.isnan(c) for c in corners):
        return NAN, NAN
    return min(corners), max(corners)


def analytic_bubbles(ab: float, n: int) -> dict[str, float]:
    """CPP and VPP bubble ratios and VPP's TTFT saving for tau_k = a + b k on equal virtual
    stages (P = 2, vp = 2, free transfers, one request of n >= 2 chunks) with a/b = `ab` (inf:
    a flat curve): the closed forms of cpp_bubble_stages and vpp_bubble_stages on a line. In
    units of b with r = a/b:

        S = n r + n (n - 1) / 2                       the work (sum of tau)
        M = r + n - 1                                 CPP's idle (the largest chunk)
        I = (3 r + 2 n - 1 + |1 - r|) / 4             VPP's idle: tau_0 and tau_{n-1} in fill
                                                      and drain, |tau_1 - 2 tau_0| and
                                                      tau_{n-2} - 2 tau_{n-1} at the two ends
        cpp = M / (S + M),  vpp = I / (S + I),  g(a/b, n) = 1 - (S + I) / (S + M).

    a/b = 1 (tau_k = (k + 1) t) gives CPP 2 / (n + 3) and VPP 1 / (n + 1) (docs/schedules.md);
    a flat curve gives both 1 / (n + 1) and g = 0: the imbalance VPP removes shrinks as a/b
    grows (tests/analysis/test_bubble_pred.py checks these against the exact identities)."""
    if n < 2 or math.isnan(ab) or ab < 0:
        return {"cpp_bubble": NAN, "vpp_bubble": NAN, "ttft_saving": NAN}
    if math.isinf(ab):
        work, idle, span = float(n), 1.0, 1.0  # tau constant = 1
    else:
        work = n * ab + n * (n - 1) / 2
        idle = (3 * ab + 2 * n - 1 + abs(1 - ab)) / 4
        span = ab + n - 1
    return {
        "cpp_bubble": span / (work + span),
        "vpp_bubble": idle / (work + idle),
        "ttft_saving": 1 - (work + idle) / (work + span),
    }


def analytic_saving_interval(ab_lo: float, ab_hi: float, n: int) -> tuple[float, float]:
    """g(a/b, n) over a/b's interval clipped to [0, inf] (g falls with a/b: tested), so it holds
    the analytic saving as often as a/b's interval holds a/b; it assumes a straight tau_k."""
    lo_ab = max(ab_lo, 0.0) if not math.isnan(ab_lo) else 0.0
    hi_ab = max(ab_hi, 0.0) if not math.isnan(ab_hi) else math.inf
    return (
        analytic_bubbles(hi_ab, n)["ttft_saving"],
        analytic_bubbles(lo_ab, n)["ttft_saving"],
    )


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
    replicated = method == "parametric(runs)" and math.isfinite(s2)
    se = math.sqrt(s2) * np.maximum(tau, floor) / np.sqrt(counts) if replicated else None
    basis = dict(means=means if replicated else None, se=se, df=df_pure if replicated else 0)
    if n_boot <= 0 or not math.isfinite(s2):
        return StageCurve(k_grid, tau, np.empty((0, len(k_grid))), method, **basis)
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
    return StageCurve(k_grid, tau, draws, method, **basis)


def _wls_hat(X: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The hat matrix X (X'WX)^-1 X'W of weighted least squares."""
    xtw = X.T * weights
    return X @ np.linalg.pinv(xtw @ X) @ xtw
