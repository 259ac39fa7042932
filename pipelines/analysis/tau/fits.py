"""Statistics of one tau_k curve: line, ratio, VPP balance residual, curvature, breakpoint.

One curve = the chunk latencies of one (model, schedule, chunk size, sequence length, stage)
configuration, possibly pooled over several runs. Inference:

* few runs (fewer than MIN_CLUSTERS): the per-k mean curve, generalised least squares under
  multiplicative AR(1) noise (pipelines.analysis.tau.serial: weights 1/tau_hat^2, rho from the runs'
  pure error when repeated, else from one run's line residuals, bias-corrected for 8-21 chunks),
  scale pooled with the runs' pure error, t on the pooled df (``ci_method``
  ``gls-ar1(rho=..., runs|line residuals)``); the line and every shape test use it, except
  that from three runs whose pure error shows serial correlation the line is the mean of the
  runs' own lines with t(G-1) (``...(mean of G runs); run lines t(G-1), rho > se ...``,
  pipelines.analysis.tau.runs_line), and that one run of 11 or more consecutive chunks gets its
  line at rho's 90 % upper bound with bootstrap-t intervals (``...; line at rho ... (90 %
  bound), bootstrap-t``, pipelines.analysis.tau.one_run_line);
* many runs: every point, OLS (line) or WLS 1/tau_hat^2 (shapes) with cluster-robust (CR1)
  covariance by run, t intervals with G-1 degrees of freedom (``ci_method='cluster(run)'``);
* a/b and b/a: Fieller intervals from the same covariance (unbounded when the denominator is not
  significantly different from zero, reported as +-inf).
* balance residual sum|tau_{k-1}+tau_{k+1}-2 tau_k| / sum 2 tau_k on the mean curve, and on the
  fitted curve (`balance_est`) with a parametric-bootstrap interval (analysis.bubble_pred);
* predicted whole-run bubble ratio of VPP (P=2, vp=2, free transfers, one request) and VPP's gain
  over CPP from the fitted stage curves by exact identities (pipelines.analysis.tau.bubble_pred;
  fit_curves combines a configuration's stages).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import statsmodels.api as sm
from scipy import stats

from pipelines.analysis.tau.bubble_pred import (
    EMPTY_PREDICTION,
    StageCurve,
    percentile_interval,
    predict_bubbles,
    shrunk_curve,
)
from pipelines.analysis.tau.one_run_line import one_run_line
from pipelines.analysis.tau.outliers import screen_outliers
from pipelines.analysis.tau.robust_slope import NAN_SLOPE, robust_slope_interval
from pipelines.analysis.tau.runs_line import rho_standard_error, runs_line
from pipelines.analysis.tau.serial import (
    Noise,
    noise_model,
    pure_error,
    residual_rho,
)

MIN_RUNS_FOR_RUN_BOOTSTRAP = 5
MIN_CLUSTERS = 20
"""Runs pooled with cluster-robust (CR1) covariance and t(G-1) only from this many runs on;
below it the per-k mean curve is fitted as one series (more runs, less noise per mean: power
never drops as runs are added). Cameron & Miller (2015, J. Human Resources 50(2)) show CR1 with
few clusters over-rejects and its t(G-1) correction costs most of the power below ~20-50."""
HINGE_PARAMS = 3
"""Parameters the two-segment and level-step fits are charged in their BIC gain over the line
(intercept, slope, the extra term). The searched position is paid for by the Bonferroni
adjustment of their p-value; charging it again in BIC made the quadratic win ties against a
true kink: a 50 % slope collapse at N/2 (5 % noise, N = 8, 3 runs) came out `concave` in 19 %
of fits with 4, 8 % with 3 (docs/tau_k.md §6.3)."""
DRIFT_ALPHA = 0.01
"""Significance (Bonferroni-adjusted over the step positions) at which a level step inside the
run is removed before the shapes of tau(k) are tested (pipelines.analysis.tau.verdicts: `drift`)."""

STEP_INTERVAL_ALPHA = 0.2
"""Below this Bonferroni-adjusted p-value (and with two or more runs) a level step too weak to
name (DRIFT_ALPHA) is not ruled out either: the line's intervals are joined with the step
model's. Measured on the x1.05 throttle (docs/tau_k.md §6.7): 0.2 lifts its coverage at N = 8,
G = 3 from 35 to 80 % and at N = 16 from 72-84 to 94-95 %; 0.1 gave 72 % at N = 8; joining
always put straight iid curves at 97.5-98.8 %."""

BEND_STEP_ALPHA = 0.2
"""A slowdown step with this Bonferroni-adjusted p-value or less explains a rising bend that beats
it in BIC when neither the hinge nor the quadratic is significant (DRIFT_ALPHA) next to it."""


@dataclass(frozen=True)
class CurveFit:
    """Everything measured on one curve; times in ns, k in chunk indices."""

    n_runs: int
    n_points: int
    n_k: int
    k_min: int
    k_max: int
    mean_tau: float
    level: float
    ci_method: str
    intercept: float
    intercept_lo: float
    intercept_hi: float
    slope: float
    slope_lo: float
    slope_hi: float
    slope_p: float
    slope_robust_lo: float
    slope_robust_hi: float
    r2: float
    sigma_rel: float
    ab_ratio: float
    ab_lo: float
    ab_hi: float
    ba_lo: float
    ba_hi: float
    balance: float
    balance_est: float
    balance_lo: float
    balance_hi: float
    balance_method: str
    balance_floor: float
    vpp_bubble_pred: float
    vpp_bubble_lo: float
    vpp_bubble_hi: float
    vpp_gain_pred: float
    vpp_gain_lo: float
    vpp_gain_hi: float
    vpp_basis: str
    curvature: float
    curvature_p: float
    curvature_effect: float
    curvature_dbic: float
    breakpoint_k: float
    slope_before: float
    slope_after: float
    breakpoint_p: float
    breakpoint_effect: float
    breakpoint_dbic: float
    curvature_bubble_pp: float
    breakpoint_bubble_pp: float
    first_rel: float
    first_p: float
    first_effect: float
    first_dbic: float
    first_bubble_pp: float
    stair_period: float
    stair_phase: float
    stair_p: float
    stair_effect: float
    stair_dbic: float
    stair_bubble_pp: float
    shapes_from_k: int
    step_k: float
    step_rel: float
    step_p: float
    step_effect: float
    step_dbic: float
    jump_k: float
    jump_from_k: float
    jump_rel: float
    jump_p: float
    jump_effect: float
    jump_dbic: float
    jump_bubble_pp: float
    durbin_watson: float
    n_outliers: int
    outliers: str

    def as_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


NAN = float("nan")


def fieller(
    num: float, den: float, v_num: float, v_den: float, cov: float, tcrit: float
) -> tuple[float, float]:
    """Fieller confidence interval of num/den; (-inf, inf) when den is not significant."""
    a = den * den - tcrit * tcrit * v_den
    b = num * den - tcrit * tcrit * cov
    c = num * num - tcrit * tcrit * v_num
    if not all(map(math.isfinite, (a, b, c))) or a <= 0:
        return -math.inf, math.inf
    disc = b * b - a * c
    if disc < 0:
        return -math.inf, math.inf
    root = math.sqrt(disc)
    return (b - root) / a, (b + root) / a


def vpp_bubble_ratio(tau: np.ndarray) -> float:
    """Whole-run bubble ratio of VPP (P = 2, vp = 2, equal stages, free transfers) for one
    request whose consecutive chunks 0..N-1 take tau_k (the whole chunk, or one stage when every
    stage has the same shape: the ratio does not depend on the scale). Exact identity: cycle k
    runs s3(k-1)+s0(k+1) on rank 0 against s1(k)+s2(k) on rank 1, both ranks start each cycle
    together, so the lighter one idles |tau_{k-1}+tau_{k+1}-2 tau_k|/4 per cycle and

        idle (both ranks) = (tau_0 + tau_{N-1} + sum_k |tau_{k-1}+tau_{k+1}-2 tau_k|) / 4,

    tau_{-1} = tau_N = 0; ratio = idle / (sum tau + idle) (= idle / (2 x makespan)).
    Checked against the simulator in tests/analysis/test_balance_vpp.py (docs/tau_k.md §6.2)."""
    tau = np.asarray(tau, dtype=float)
    return float(_vpp_bubble_rows(tau[None, :])[0]) if tau.size else NAN


def _vpp_bubble_rows(tau: np.ndarray) -> np.ndarray:
    """vpp_bubble_ratio of every row of a (curves, N) array."""
    pad = np.zeros((tau.shape[0], 1))
    padded = np.concatenate([pad, tau, pad], axis=1)
    second = np.abs(padded[:, :-2] + padded[:, 2:] - 2 * padded[:, 1:-1]).sum(axis=1)
    idle = (tau[:, 0] + tau[:, -1] + second) / 4
    return idle / (tau.sum(axis=1) + idle)


def cpp_bubble_ratio(tau: np.ndarray) -> float:
    """Whole-run bubble ratio of CPP with two ranks (equal stages, free transfers) for one
    request whose chunks take tau_k: a two-machine flow shop with tau_k/2 on each rank, so the
    makespan is (sum tau + max tau)/2, the idle of both ranks max tau and the ratio
    max tau / (sum tau + max tau). Exact (tests/analysis/test_balance_vpp.py)."""
    tau = np.asarray(tau, dtype=float)
    if not tau.size:
        return NAN
    return float(tau.max() / (tau.sum() + tau.max()))


def balance_residual(k: np.ndarray, tau: np.ndarray) -> float:
    """sum|tau_{k-1}+tau_{k+1}-2tau_k| / sum 2tau_k over k whose two neighbours are present.

    The steady-state bubble ratio VPP (P=2, vp=2, equal stages, free transfers) leaves for this
    curve is R / (2 (1 + R+)) ~ R/2 without noise, R+ the same sum over the positive second
    differences only; fill and drain add terms set by the end chunks (docs/tau_k.md §6.1), which
    `vpp_bubble_ratio` includes: that, not this linearity score, predicts the whole-run bubble."""
    terms = _balance_terms(k, tau)
    if terms is None:
        return NAN
    diff, weight = terms
    return float(diff.sum() / weight.sum())


def _balance_terms(k: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Per interior k: |second difference| and 2*tau_k (k sorted, distinct)."""
    position = {int(kk): i for i, kk in enumerate(k)}
    inner = [i for i, kk in enumerate(k) if kk - 1 in position and kk + 1 in position]
    if not inner:
        return None
    idx = np.array(inner)
    prev = np.array([position[int(k[i]) - 1] for i in inner])
    nxt = np.array([position[int(k[i]) + 1] for i in inner])
    return np.abs(tau[prev] + tau[nxt] - 2 * tau[idx]), 2 * tau[idx]


def _line_fit(X: np.ndarray, y: np.ndarray, groups: np.ndarray | None, noise: Noise | None):
    """The line (the slope is column 1): GLS under the curve's noise model (few runs) or
    OLS with cluster-robust covariance by run (many runs)."""
    if groups is not None:
        return sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    return noise.fit(X, y)


def durbin_watson_within(resid: np.ndarray, runs: np.ndarray) -> float:
    """Durbin-Watson statistic of residuals ordered by k within each run, pooled over runs."""
    num = sum(float(np.sum(np.diff(resid[runs == r]) ** 2)) for r in np.unique(runs))
    den = float(np.sum(resid**2))
    return num / den if den > 0 else NAN


def _tcrit(result, level: float) -> float:
    if hasattr(result, "critical"):  # a bootstrap-t line (pipelines.analysis.tau.one_run_line)
        return result.critical(level)
    df = getattr(result, "df_resid_inference", None) or result.df_resid
    return float(stats.t.ppf(0.5 + level / 2, df)) if df > 0 else math.inf


def _effect(k_grid: np.ndarray, a: np.ndarray, b: np.ndarray, scale: float) -> float:
    """Largest gap between two fitted curves on the observed k, relative to the mean tau."""
    return float(np.max(np.abs(a - b)) / scale) if scale > 0 else NAN


def _bic(sse: float, n: int, params: int) -> float:
    return n * math.log(max(sse, 1e-300) / n) + params * math.log(n)


def _shape_fit(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, groups: np.ndarray | None, noise: Noise | None
):
    """The shape tests' fit: GLS under the curve's noise model (few runs: weights 1/tau_hat^2,
    AR(1) within runs, scale pooled with the pure error) or weighted least squares with
    cluster-robust covariance by run (many runs)."""
    if groups is not None:
        model = sm.WLS(y, X, weights=w)
        return model.fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    return noise.fit(X, y)


def _whiten(a: np.ndarray, w: np.ndarray, noise: Noise | None) -> np.ndarray:
    """a in the units whose least squares is the shape fit's (whitened, or weighted by w)."""
    if noise is not None:
        return noise.whiten(a)
    root = np.sqrt(w)
    return a * (root[:, None] if a.ndim == 2 else root)


def _curvature(k, y, w, groups, line, k_grid, scale, noise):
    """Quadratic term: coefficient, p, departure from the line, BIC gain, weighted SSE."""
    if len(k_grid) < 4 or len(y) < 4:
        return NAN, NAN, NAN, NAN, NAN, NAN
    centre = k.mean()
    X = np.column_stack([np.ones_like(k), k - centre, (k - centre) ** 2])
    res = _shape_fit(X, y, w, groups, noise)

    def design(g: np.ndarray) -> np.ndarray:
        return np.column_stack([np.ones_like(g), g - centre, (g - centre) ** 2])

    line_grid = line.params[0] + line.params[1] * k_grid
    effect = _effect(k_grid, design(k_grid) @ res.params, line_grid, scale)
    bubble = _bubble_change(k_grid, design, res.params, line.params)
    dbic = _bic(float(line.ssr), len(y), 2) - _bic(float(res.ssr), len(y), 3)
    return float(res.params[2]), float(res.pvalues[2]), effect, dbic, float(res.ssr), bubble


def _bubble_change(k_grid: np.ndarray, design, params: np.ndarray, line_params) -> float:
    """Predicted VPP bubble ratio of the fitted shape (`design(k) @ params`) minus that of the
    fitted line, in percentage points, over every chunk index from the first to the last
    observed: an outlier chunk left out of the fit, or one missing from the trace, still ran."""
    span = np.arange(k_grid.min(), k_grid.max() + 1.0)
    line_span = line_params[0] + line_params[1] * span
    return 100 * (vpp_bubble_ratio(design(span) @ params) - vpp_bubble_ratio(line_span))


def _positions(k_grid: np.ndarray) -> list[int]:
    """Candidate positions of a kink or a step: measured chunk indices with at least two chunk
    indices strictly on each side (a single chunk off the line is an outlier, not a kink). On a
    consecutive grid that is every integer between the ends; on a table's gapped grid (prefixes
    measured at 0, 1K, 2K, 4K, ... 1M: k = 0-4, 8, 16, ... 1023) only the measured indices, since
    the data place a break no finer than them, and the Bonferroni count is the grid's, not the
    thousand integers of its gaps (docs/tau_k.md §4). A chunk the outlier screen set aside is
    no candidate either."""
    return [
        int(kb) for kb in np.unique(k_grid) if (k_grid < kb).sum() >= 2 and (k_grid > kb).sum() >= 2
    ]


def _best_position(
    k, y, w, noise, base: np.ndarray, term, candidates: list[int]
) -> tuple[int, float]:
    """Of the candidate positions, the one whose column term(k, position) added to the columns
    `base` leaves the smallest SSE in the shape fit's units (whitened, or weighted by w), and
    that SSE; the first one on ties."""
    yw = _whiten(y, w, noise)
    best = None
    for kb in candidates:
        Xw = _whiten(np.column_stack([base, term(k, kb)]), w, noise)
        coef, *_ = np.linalg.lstsq(Xw, yw, rcond=None)
        sse = float(np.sum((yw - Xw @ coef) ** 2))
        if best is None or sse < best[1]:
            best = (kb, sse)
    return best


def _shape_p_beside_step(k, y, w, groups, noise, line, step_k: float) -> float:
    """The smaller p-value of the two shapes of tau(k), each fitted together with the level step
    at step_k: the quadratic term, and the hinge term at its best position (Bonferroni-adjusted
    over the positions). Large when the step alone accounts for what the shapes fitted."""
    base = np.column_stack([np.ones_like(k), k, _step_term(k, step_k, *line.params[:2])])
    centre = k.mean()
    quad = _shape_fit(np.column_stack([base, (k - centre) ** 2]), y, w, groups, noise)
    candidates = _positions(np.unique(k))
    if not candidates:
        return float(quad.pvalues[3])
    kb, _ = _best_position(k, y, w, noise, base, _hinge, candidates)
    hinge = _shape_fit(np.column_stack([base, _hinge(k, kb)]), y, w, groups, noise)
    return min(float(quad.pvalues[3]), float(min(1.0, hinge.pvalues[3] * len(candidates))))


def _first_against_shapes(k, y, w, cnt, fitted, scale, noise, first: dict) -> float:
    """One run only: the best BIC gain of the shapes through chunk 0 (hinge, quadratic,
    staircase) against the first chunk's, both under the AR(1) rho of the first-chunk model's
    residuals, minus the first chunk's gain plus its own (so that `first_dbic > result` says the
    first chunk wins). One run's rho comes from the line's residuals (§3), which a chunk 0 on its
    own path inflates (rho 0.9 in the misread draws), and under that whitening a hinge at k = 3-5
    beat the indicator in 2.0 % of 128-token curves with tau_1/tau_0 = 3.2 (N = 16, 2 % noise);
    an oracle choosing by the true noise picked the indicator in 2,000 of 2,000 (docs/tau_k.md
    §4 "Measured"). With repeats rho comes from the pure error, which no shape enters: unchanged."""
    if noise is None or noise.source != "line residuals":
        return math.inf
    X_first = np.column_stack([np.ones_like(k), k, (k == 0).astype(float)])
    rho = residual_rho(k, X_first, y, fitted)
    alt = noise_model(k, fitted, cnt, rho, (0.0, 0), "first-chunk residuals")
    X = np.column_stack([np.ones_like(k), k])
    line = _shape_fit(X, y, w, None, alt)
    grid = np.unique(k)
    again = _first_chunk(k, y, w, None, line, grid, scale, alt)
    curvature = _curvature(k, y, w, None, line, grid, scale, alt)[3]
    hinge = _breakpoint(k, y, w, None, line, grid, scale, alt)["breakpoint_dbic"]
    stair = _staircase(k, y, w, None, line, grid, scale, alt)["stair_dbic"]
    best = max([d for d in (curvature, hinge, stair) if math.isfinite(d)], default=0.0)
    return first["first_dbic"] - again["first_dbic"] + best


def _first_chunk(k, y, w, groups, line, k_grid, scale, noise) -> dict:
    """A knee between k = 0 and 1: chunk 0 (no prefix: another kernel path, no cached keys to
    read) off the line through chunks 1 on. The line plus an indicator of k = 0, tested like the
    curvature (one pre-specified position: no search, no Bonferroni). `first_rel`: tau_0 over
    the later chunks' line at k = 0, minus 1 (-0.69 for tau_1/tau_0 = 3.2 on a flat line)."""
    out = dict(first_rel=NAN, first_p=NAN, first_effect=NAN, first_dbic=NAN, first_bubble_pp=NAN)
    if k_grid.min() != 0 or (k_grid > 0).sum() < 4 or len(y) < 5:
        return out
    X = np.column_stack([np.ones_like(k), k, (k == 0).astype(float)])
    res = _shape_fit(X, y, w, groups, noise)

    def design(g: np.ndarray) -> np.ndarray:
        return np.column_stack([np.ones_like(g), g, (g == 0).astype(float)])

    line_grid = line.params[0] + line.params[1] * k_grid
    a, _, delta = res.params
    out.update(
        first_rel=float(delta / a) if a > 0 else NAN,
        first_p=float(res.pvalues[2]),
        first_effect=_effect(k_grid, design(k_grid) @ res.params, line_grid, scale),
        first_dbic=_bic(float(line.ssr), len(y), 2) - _bic(float(res.ssr), len(y), 3),
        first_bubble_pp=_bubble_change(k_grid, design, res.params, line.params),
    )
    return out


MAX_STAIR_PERIOD = 16
"""Longest staircase period searched, in chunk indices (a kernel stepping every 256 keys shows
a period of 256 / c chunks: 2 at 128-token chunks, 4 at 64)."""


def _stair_term(k: np.ndarray, position: tuple[int, int]) -> np.ndarray:
    """The sawtooth a staircase leaves around its line: (k + phase) mod period."""
    period, phase = position
    return np.mod(k + phase, period).astype(float)


def _staircase(k, y, w, groups, line, k_grid, scale, noise) -> dict:
    """Steps every `period` chunk indices: the line plus the sawtooth (k + phase) mod period, the
    period (2 .. MAX_STAIR_PERIOD, at least three periods observed) and phase searched, the
    sawtooth term tested with its p-value Bonferroni-adjusted over the candidates."""
    out = dict(
        stair_period=NAN,
        stair_phase=NAN,
        stair_p=NAN,
        stair_effect=NAN,
        stair_dbic=NAN,
        stair_bubble_pp=NAN,
    )
    consecutive = len(k_grid) == int(k_grid.max() - k_grid.min()) + 1
    top = min(MAX_STAIR_PERIOD, len(k_grid) // 3)
    if not consecutive or top < 2 or len(y) < 6:
        return out
    candidates = [(m, phase) for m in range(2, top + 1) for phase in range(m)]
    base = np.column_stack([np.ones_like(k), k])
    position, sse = _best_position(k, y, w, noise, base, _stair_term, candidates)
    X = np.column_stack([base, _stair_term(k, position)])
    res = _shape_fit(X, y, w, groups, noise)

    def design(g: np.ndarray) -> np.ndarray:
        return np.column_stack([np.ones_like(g), g, _stair_term(g, position)])

    line_grid = line.params[0] + line.params[1] * k_grid
    out.update(
        stair_period=float(position[0]),
        stair_phase=float(position[1]),
        stair_p=float(min(1.0, res.pvalues[2] * len(candidates))),
        stair_effect=_effect(k_grid, design(k_grid) @ res.params, line_grid, scale),
        stair_dbic=_bic(float(line.ssr), len(y), 2) - _bic(sse, len(y), HINGE_PARAMS),
        stair_bubble_pp=_bubble_change(k_grid, design, res.params, line.params),
    )
    return out


def _slowdown_bend(step: dict, curvature: float, breakpoint: dict) -> bool:
    """Whether the step slows the run down (a throttle) and both shapes bend up the way it
    does (convex: the slope rises)."""
    rising = curvature > 0 and breakpoint["slope_after"] > breakpoint["slope_before"]
    return step["step_rel"] > 0 and rising


NO_STEP = dict(step_k=NAN, step_rel=NAN, step_p=NAN, step_effect=NAN, step_dbic=NAN)
NO_JUMP = dict(
    jump_k=NAN,
    jump_from_k=NAN,
    jump_rel=NAN,
    jump_p=NAN,
    jump_effect=NAN,
    jump_dbic=NAN,
    jump_bubble_pp=NAN,
)
"""The jump fields of a curve with no jump searched (a run's curve, or too short)."""
JUMP_PARAMS = 4
"""Parameters of the broken line (intercept, slope, the jump, the change of slope)."""


def _jump_terms(k: np.ndarray, kb: float) -> np.ndarray:
    """The broken line's two columns at kb: a level step and a change of slope from kb on."""
    return np.column_stack([(k >= kb).astype(float), np.maximum(k - kb, 0.0)])


def _jump(k, y, w, groups, line, k_grid, scale, noise) -> dict:
    """A latency table's jump (docs/tau_k.md §4 "A jump"): the line broken at a measured chunk
    index kb, its own level and slope on each side ([1, k, 1(k >= kb), (k - kb)+]), kb the
    measured index with two or more chunk indices strictly on each side whose broken line leaves
    the least SSE; the two extra terms F-tested together against the line, p Bonferroni-adjusted
    over the positions; `jump_rel` the level step at kb relative to the line there. DSA's module
    switches from its dense path to the indexer + sparse path when the prefix reaches its top-k
    (2,048 keys): x1.9 at once, a slope 5x smaller after; the continuous hinge placed that one
    grid point late (a prefix of 3K-4K)."""
    out = dict(NO_JUMP)
    candidates = _positions(k_grid)
    if not candidates or len(y) < JUMP_PARAMS + 2:
        return out
    line_columns = np.column_stack([np.ones_like(k), k])
    kb, sse = _best_position(k, y, w, noise, line_columns, _jump_terms, candidates)
    res = _shape_fit(np.column_stack([line_columns, _jump_terms(k, kb)]), y, w, groups, noise)

    def design(g: np.ndarray) -> np.ndarray:
        return np.column_stack([np.ones_like(g), g, _jump_terms(g, kb)])

    grid = design(k_grid) @ res.params
    line_grid = line.params[0] + line.params[1] * k_grid
    before = k_grid[k_grid < kb]
    level = line.params[0] + line.params[1] * kb
    out.update(
        jump_k=float(kb),
        jump_from_k=float(before.max()),
        jump_rel=float(res.params[2] / level) if level > 0 else NAN,
        jump_p=float(min(1.0, res.f_test(np.eye(JUMP_PARAMS)[2:]).pvalue * len(candidates))),
        jump_effect=_effect(k_grid, grid, line_grid, scale),
        jump_dbic=_bic(float(line.ssr), len(y), 2) - _bic(sse, len(y), JUMP_PARAMS),
        jump_bubble_pp=_bubble_change(k_grid, design, res.params, line.params),
    )
    return out


"""The level-step fields of a curve with no step searched (too short, or a table's points)."""


def _breakpoint(k, y, w, groups, line, k_grid, scale, noise, step=False):
    """Continuous two-segment fit; breakpoint = the integer k (two or more chunk indices on
    each side) minimising the weighted SSE; its hinge term tested like the curvature and the
    p-value Bonferroni-adjusted for the number of candidates."""
    out = dict(
        breakpoint_k=NAN,
        slope_before=NAN,
        slope_after=NAN,
        breakpoint_p=NAN,
        breakpoint_effect=NAN,
        breakpoint_dbic=NAN,
        breakpoint_bubble_pp=NAN,
        _sse=NAN,
    )
    if step:
        out = {**NO_STEP, "_sse": NAN}
    if step:  # a throttle multiplies the line from kb on: (a + b k) (1 + c [k >= kb])
        a0, b0 = line.params[0], line.params[1]

        def term(kk, kb):
            return _step_term(kk, kb, a0, b0)
    else:
        term = _hinge
    candidates = _positions(k_grid)
    n = len(y)
    if not candidates or n < 5:
        return out
    line_columns = np.column_stack([np.ones_like(k), k])
    kb, sse_hinge = _best_position(k, y, w, noise, line_columns, term, candidates)
    X = np.column_stack([np.ones_like(k), k, term(k, kb)])
    res = _shape_fit(X, y, w, groups, noise)

    def design(g: np.ndarray) -> np.ndarray:
        return np.column_stack([np.ones_like(g), g, term(g, kb)])

    grid = design(k_grid)
    line_grid = line.params[0] + line.params[1] * k_grid
    if step:
        out.update(
            step_k=float(kb),
            step_rel=float(res.params[2]),
            step_p=float(min(1.0, res.pvalues[2] * len(candidates))),
            step_effect=_effect(k_grid, grid @ res.params, line_grid, scale),
            step_dbic=_bic(float(line.ssr), n, 2) - _bic(sse_hinge, n, HINGE_PARAMS),
            _sse=sse_hinge,
        )
        return out
    out.update(
        breakpoint_bubble_pp=_bubble_change(k_grid, design, res.params, line.params),
        breakpoint_k=float(kb),
        slope_before=float(res.params[1]),
        slope_after=float(res.params[1] + res.params[2]),
        breakpoint_p=float(min(1.0, res.pvalues[2] * len(candidates))),
        breakpoint_effect=_effect(k_grid, grid @ res.params, line_grid, scale),
        breakpoint_dbic=_bic(float(line.ssr), n, 2) - _bic(sse_hinge, n, HINGE_PARAMS),
        _sse=sse_hinge,
    )
    return out


def _union(first, second):
    """The smallest interval holding both intervals: (lo, hi) pairs, or rows of them."""
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    joined = np.stack(
        [np.minimum(first[..., 0], second[..., 0]), np.maximum(first[..., 1], second[..., 1])],
        axis=-1,
    )
    return joined if joined.ndim > 1 else (float(joined[0]), float(joined[1]))


def _line_intervals(model, level: float):
    """The `level` intervals of a fitted line's intercept and slope (rows of (lo, hi)), and
    Fieller's intervals of a/b and b/a, from the model's first two coefficients."""
    tcrit = _tcrit(model, level)
    (a, b), cov = model.params[:2], model.cov_params()[:2, :2]
    ab = fieller(a, b, cov[0, 0], cov[1, 1], cov[0, 1], tcrit)
    ba = fieller(b, a, cov[1, 1], cov[0, 0], cov[0, 1], tcrit)
    return model.conf_int(alpha=1 - level)[:2], ab, ba


def _step_line(X, xk, yk, a, b, step_k, groups, noise):
    """The line of tau(k) under a throttle from step_k on: (a + b k) (1 + c [k >= step_k]),
    linear in (a, b, c) with the step term built on the plain line's a and b."""
    return _line_fit(np.column_stack([X, _step_term(xk, step_k, a, b)]), yk, groups, noise)


def _step_term(k: np.ndarray, kb: float, a0: float, b0: float) -> np.ndarray:
    """The level step's column: the line a0 + b0 k from kb on (its coefficient c makes the
    curve (a + b k)(1 + c) there, a throttle's x(1 + c))."""
    return (k >= kb) * (a0 + b0 * k)


def _hinge(k: np.ndarray, kb: float) -> np.ndarray:
    return np.maximum(k - kb, 0.0)


_interval = percentile_interval


def _balance_rows(k_grid: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """balance_residual of every row of a (draws, len(k_grid)) array."""
    position = {int(kk): i for i, kk in enumerate(k_grid)}
    inner = [i for i, kk in enumerate(k_grid) if kk - 1 in position and kk + 1 in position]
    if not inner or tau.shape[0] == 0:
        return np.full(tau.shape[0], NAN)
    idx = np.array(inner)
    prev = np.array([position[int(k_grid[i]) - 1] for i in inner])
    nxt = np.array([position[int(k_grid[i]) + 1] for i in inner])
    second = np.abs(tau[:, prev] + tau[:, nxt] - 2 * tau[:, idx])
    # an affine curve's second differences are 0 up to rounding: count them as 0
    second[second <= 1e-9 * np.abs(tau[:, idx])] = 0.0
    return second.sum(axis=1) / (2 * tau[:, idx]).sum(axis=1)


def _shape_design(kind: str, k: np.ndarray, line_params, position) -> np.ndarray:
    """Design matrix of the shape the fit kept, on the chunk indices k."""
    ones = np.ones_like(k)
    if kind == "quadratic":
        centre = k.mean()
        return np.column_stack([ones, k - centre, (k - centre) ** 2])
    if kind == "hinge":
        return np.column_stack([ones, k, _hinge(k, position)])
    if kind == "step":
        a0, b0 = line_params
        return np.column_stack([ones, k, _step_term(k, position, a0, b0)])
    if kind == "first chunk":
        return np.column_stack([ones, k, (k == 0).astype(float)])
    if kind == "staircase":
        return np.column_stack([ones, k, _stair_term(k, position)])
    return np.column_stack([ones, k])


def _kept_shape(
    curvature_p, curvature_dbic, breakpoint: dict, step: dict, first: dict, stair: dict
) -> tuple[str, object]:
    """The shape the bubble prediction follows: of the quadratic, the hinge, the level step, the
    first-chunk knee and the staircase, the one with the largest BIC gain among those
    significant at DRIFT_ALPHA (and preferred to the line by BIC); else the line."""
    stair_at = (
        (int(stair["stair_period"]), int(stair["stair_phase"]))
        if math.isfinite(stair["stair_period"])
        else NAN
    )
    options = [
        ("first chunk", first["first_p"], first["first_dbic"], NAN),
        ("staircase", stair["stair_p"], stair["stair_dbic"], stair_at),
        ("quadratic", curvature_p, curvature_dbic, NAN),
        (
            "hinge",
            breakpoint["breakpoint_p"],
            breakpoint["breakpoint_dbic"],
            breakpoint["breakpoint_k"],
        ),
        ("step", step["step_p"], step["step_dbic"], step["step_k"]),
    ]
    chosen = [o for o in options if o[1] < DRIFT_ALPHA and o[2] > 0]
    if not chosen:
        return "line", NAN
    kind, _, _, position = max(chosen, key=lambda o: o[2])
    return kind, position


def _r2(y: np.ndarray, fitted: np.ndarray) -> float:
    """R^2 of a fitted mean curve (centred, unweighted)."""
    total = float(np.sum((y - y.mean()) ** 2))
    return 1 - float(np.sum((y - fitted) ** 2)) / total if total > 0 else NAN


def _noise_model(ks, ys, rs, xk, yk, cnt, tau_hat, scale, independent=False) -> Noise:
    """The noise model of a mean curve (xk, yk, cnt) from its kept points (ks, ys, rs): rho and
    the pure error from the runs when repeated (no shape of tau(k) enters them); from one run,
    rho from the line's residuals, bias-corrected: the nuisance estimated under the null (the
    line), so that serially correlated noise cannot pass for a kink or a bend. The price: one
    run needs a larger kink to reach significance (docs/tau_k.md §3, §6.3).

    `independent`: the points are separate measurements, not chunks run one after another (an
    operator-latency table: each (tokens, prefix) point timed in its own loop of warm-up and
    repeated calls, its median kept), so rho = 0 and nothing is estimated from the residuals;
    the replicates' pure error, where the table repeats a point, still pools into the scale.
    One run's rho from the line's residuals is what a knee inflates (rho 0.6-0.9 on iid
    curves with a knee 3 chunks before the end: docs/tau_k.md §4 "Measured")."""
    tau_hat = np.maximum(tau_hat, 0.1 * scale)
    pe_ss, pe_df, rho_runs = pure_error(ks, ys, rs, xk, yk)
    if independent:
        return noise_model(xk, tau_hat, cnt, 0.0, (pe_ss, pe_df), "independent points")
    if pe_df > 0:
        return noise_model(xk, tau_hat, cnt, rho_runs, (pe_ss, pe_df), "runs")
    if len(xk) < 6:  # too few chunk indices to estimate rho
        return noise_model(xk, tau_hat, cnt, 0.0, (0.0, 0), "none")
    X = np.column_stack([np.ones_like(xk), xk])
    rho = residual_rho(xk, X, yk, tau_hat)
    return noise_model(xk, tau_hat, cnt, rho, (0.0, 0), "line residuals")


def _rescaled(noise: Noise, xk, tau_hat, cnt) -> Noise:
    """The same noise model with the fitted level tau_hat."""
    return noise_model(xk, tau_hat, cnt, noise.rho, (noise.pe_ss, noise.pe_df), noise.source)


@dataclass(frozen=True)
class _Line:
    """The line of a curve as fit_stage fits it: the outlier screen, the series fitted (per-k
    means of few runs, or every point of many), its noise model and the fitted result."""

    screen: object
    ks: np.ndarray
    groups: np.ndarray | None
    xk: np.ndarray
    yk: np.ndarray
    cnt: np.ndarray
    X: np.ndarray
    noise: Noise | None
    line: object
    dw: float
    method: str
    line_note: str


def _line_of(
    k: np.ndarray, y: np.ndarray, runs: np.ndarray, n_runs: int, scale: float, independent: bool
) -> _Line:
    """Outlier chunks leave the line and the shape tests (and are reported); the balance residual
    and the VPP bubble, which a slow chunk really changes, keep them. Few runs: GLS of the mean
    curve under multiplicative AR(1) noise (pipelines.analysis.tau.serial), rho from the runs' pure
    error when repeated, else from one run's line residuals (bias-corrected); one run long
    enough to bound rho: GLS at rho's upper bound with bootstrap-t intervals
    (pipelines.analysis.tau.one_run_line); three or more runs showing serial correlation: the mean
    of
    the runs' own lines with t(G-1) (pipelines.analysis.tau.runs_line)."""
    screen = screen_outliers(k, y, jumps=independent)
    ks, ys, rs = k[screen.keep], y[screen.keep], runs[screen.keep]
    if n_runs >= MIN_CLUSTERS:  # many runs: every point, clusters = runs
        groups = np.unique(rs, return_inverse=True)[1]
        xk, yk, cnt, order_runs = ks, ys, np.ones(len(ys)), rs
    else:  # few runs: the per-k mean curve of the kept points, one series
        groups = None
        xk = np.unique(ks)
        yk = np.array([ys[ks == kk].mean() for kk in xk])
        cnt = np.array([(ks == kk).sum() for kk in xk], dtype=float)
        order_runs = np.zeros(len(xk), dtype=int)
    X = np.column_stack([np.ones_like(xk), xk])
    first = sm.WLS(yk, X, weights=cnt).fit()
    w = cnt / np.maximum(first.fittedvalues, 0.1 * scale) ** 2
    dw = durbin_watson_within(sm.WLS(yk, X, weights=w).fit().resid * np.sqrt(w), order_runs)
    noise = None
    if groups is None:
        noise = _noise_model(ks, ys, rs, xk, yk, cnt, first.fittedvalues, scale, independent)
    line = _line_fit(X, yk, groups, noise)
    method = "cluster(run)" if groups is not None else noise.label()
    note = ""
    single = None
    if noise is not None and noise.source == "line residuals":
        tau_hat = np.maximum(first.fittedvalues, 0.1 * scale)
        single = one_run_line(xk, yk, tau_hat, cnt)
    if single is not None:
        line = single
        note = f"; line at rho {single.rho_u:.2f} (90 % bound), bootstrap-t"
    elif noise is not None and noise.source == "runs":
        rho_se = rho_standard_error(noise.rho, ks, rs)
        between = runs_line(ks, ys, rs) if noise.rho > rho_se else None
        if between is not None:
            line = between
            note = f"; run lines t({between.df_resid}), rho > se {rho_se:.2f}"
    return _Line(screen, ks, groups, xk, yk, cnt, X, noise, line, dw, method, note)


def band_of(
    grid: np.ndarray, lines: list, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(grid, line, lower, upper) from the line models fit_stage_lines returns: the reported
    line a + b k at each chunk index of `grid` and its pointwise `level` interval from the same
    estimator and covariance; where fit_stage joins intervals (a step named or not ruled out)
    the band is the union of both lines' bands, as the slope interval is (NaN without a
    line)."""
    G = np.column_stack([np.ones_like(grid), grid])
    bands = []
    for model in lines:
        centre = G @ model.params[:2]
        cov = model.cov_params()[:2, :2]
        half = _tcrit(model, level) * np.sqrt(np.einsum("ij,jk,ik->i", G, cov, G))
        bands.append((centre, centre - half, centre + half))
    if not bands:
        nan = np.full(grid.shape, NAN)
        return grid, nan, nan, nan
    lo = np.min([band[1] for band in bands], axis=0)
    hi = np.max([band[2] for band in bands], axis=0)
    return grid, bands[0][0], lo, hi


def fit_curve(
    k: np.ndarray,
    tau: np.ndarray,
    runs: np.ndarray | None = None,
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    independent: bool = False,
) -> CurveFit:
    """Fit tau = a + b*k (and the alternatives) to the points of one curve.

    `k`, `tau`: one entry per observed chunk; `runs`: the run of each point (clusters);
    `independent`: the points are separate measurements (an operator-latency table), no serial
    correlation (AR(1) rho = 0, _noise_model) and no level step inside a run (`drift`: there is
    no run). The predicted VPP bubble takes this curve as four equal virtual stages; fit_curves
    predicts it from every stage curve of a configuration (fit_stage +
    bubble_pred.predict_bubbles).
    """
    fit, stage = fit_stage(
        k, tau, runs, level=level, n_boot=n_boot, seed=seed, independent=independent
    )
    if stage is None:
        return fit
    return with_prediction(fit, predict_bubbles([stage], level))


def with_prediction(fit: CurveFit, prediction) -> CurveFit:
    """`fit` with the VPP bubble and gain predictions replaced."""
    return replace(fit, **asdict(prediction))


def fit_stage(
    k: np.ndarray,
    tau: np.ndarray,
    runs: np.ndarray | None = None,
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    independent: bool = False,
) -> tuple[CurveFit, StageCurve | None]:
    """The fit of one stage curve (VPP predictions not yet filled in) and its estimated curve
    with bootstrap draws for bubble_pred.predict_bubbles."""
    fit, stage, _ = fit_stage_lines(
        k, tau, runs, level=level, n_boot=n_boot, seed=seed, independent=independent
    )
    return fit, stage


def fit_stage_lines(
    k: np.ndarray,
    tau: np.ndarray,
    runs: np.ndarray | None = None,
    *,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    independent: bool = False,
) -> tuple[CurveFit, StageCurve | None, list]:
    """fit_stage, and the fitted line models behind the reported intervals (for band_of): the
    reported line first, then the one its intervals are joined with (none for a curve too
    short to fit)."""
    k = np.asarray(k, dtype=float)
    y = np.asarray(tau, dtype=float)
    runs = np.zeros(len(k), dtype=int) if runs is None else np.asarray(runs)
    n_runs = len(np.unique(runs))
    k_grid = np.unique(k)
    n, scale = len(y), float(y.mean()) if len(y) else NAN
    base = dict(
        n_runs=n_runs,
        n_points=n,
        n_k=len(k_grid),
        k_min=int(k_grid.min()) if n else -1,
        k_max=int(k_grid.max()) if n else -1,
        mean_tau=scale,
        level=level,
    )
    empty = {f: NAN for f in CurveFit.__dataclass_fields__ if f not in base}
    empty.update(
        balance_method="none", ci_method="none", n_outliers=0, outliers="", shapes_from_k=0
    )
    empty.update(asdict(EMPTY_PREDICTION))
    if len(k_grid) < 3 or n < 4:
        return CurveFit(**{**empty, **base}), None, []

    # outlier chunks leave the line and the shape tests (and are reported); the balance residual
    # and the VPP bubble, which a slow chunk really changes, keep them
    prep = _line_of(k, y, runs, n_runs, scale, independent)
    screen, ks, groups, xk, yk, cnt = prep.screen, prep.ks, prep.groups, prep.xk, prep.yk, prep.cnt
    X, line, noise, shape_noise, m = prep.X, prep.line, prep.noise, None, len(prep.yk)
    dw_line = prep.dw
    runs_text = f"(mean of {n_runs} runs)" if groups is None and n_runs > 1 else ""
    base["ci_method"] = prep.method + runs_text + prep.line_note
    a, b = line.params[:2]
    ci, ab, ba = _line_intervals(line, level)
    r2 = float(line.rsquared) if groups is not None else _r2(yk, X @ line.params)

    # shape tests: weighted by counts/tau_hat^2 from the line (floored at a tenth of the mean)
    fitted = np.maximum(a + b * xk, 0.1 * scale)
    w = cnt / fitted**2
    # the robust companion interval (any AR(1) rho <= 0.7, a <= 5 % slowdown step anywhere) of
    # the mean curve's kept points; none for many runs, whose cluster interval is robust already
    robust = robust_slope_interval(xk, yk, cnt, fitted, level) if groups is None else NAN_SLOPE
    if groups is None:
        shape_noise = _rescaled(noise, xk, fitted, cnt)
    line_w = _shape_fit(X, yk, w, groups, shape_noise)
    shape_grid = np.unique(xk)
    curvature, curvature_p, curvature_effect, curvature_dbic, sse_quad, curvature_bubble = (
        _curvature(xk, yk, w, groups, line_w, shape_grid, scale, shape_noise)
    )
    breakpoint = _breakpoint(xk, yk, w, groups, line_w, shape_grid, scale, shape_noise)
    sse_hinge = breakpoint.pop("_sse")
    first = _first_chunk(xk, yk, w, groups, line_w, shape_grid, scale, shape_noise)
    stair = _staircase(xk, yk, w, groups, line_w, shape_grid, scale, shape_noise)
    others = [curvature_dbic, breakpoint["breakpoint_dbic"], stair["stair_dbic"]]
    best_other = max([d for d in others if math.isfinite(d)], default=0.0)
    shapes_from_k = 0
    if first["first_p"] < DRIFT_ALPHA and first["first_dbic"] <= best_other:
        best_other = _first_against_shapes(xk, yk, w, cnt, fitted, scale, shape_noise, first)
    if first["first_p"] < DRIFT_ALPHA and first["first_dbic"] > best_other:
        shapes_from_k = 1
        # chunk 0 ran another path (no prefix), which explains the curve better than any shape
        # through it: the shapes of tau(k) are those of chunks 1 on, so that a first-chunk knee
        # is never read as a kink or a bend further on (docs/tau_k.md §4)
        later = xk > xk.min()
        xs, ys, ws, cs = xk[later], yk[later], w[later], cnt[later]
        gs = None if groups is None else groups[later]
        noise_s = None if groups is not None else _rescaled(noise, xs, fitted[later], cs)
        Xs = np.column_stack([np.ones_like(xs), xs])
        line_s = _shape_fit(Xs, ys, ws, gs, noise_s)
        grid_s = np.unique(xs)
        curvature, curvature_p, curvature_effect, curvature_dbic, sse_quad, curvature_bubble = (
            _curvature(xs, ys, ws, gs, line_s, grid_s, scale, noise_s)
        )
        breakpoint = _breakpoint(xs, ys, ws, gs, line_s, grid_s, scale, noise_s)
        sse_hinge = breakpoint.pop("_sse")
        stair = _staircase(xs, ys, ws, gs, line_s, grid_s, scale, noise_s)
    if independent:
        # a table's points are measured apart, in no run: there is no run for a level step
        # (`drift`) to happen inside, and a jump between its points is a shape of tau(k): the
        # broken line (its own level and slope on each side of a measured index)
        step = dict(NO_STEP)
        if shapes_from_k == 1:  # tested on chunks 1 on, as the other shapes were
            jump = _jump(xs, ys, ws, gs, line_s, grid_s, scale, noise_s)
        else:
            jump = _jump(xk, yk, w, groups, line_w, shape_grid, scale, shape_noise)
    else:
        step = _breakpoint(xk, yk, w, groups, line_w, shape_grid, scale, shape_noise, step=True)
        step.pop("_sse")
        jump = dict(NO_JUMP)
    best_shape = max(curvature_dbic, breakpoint["breakpoint_dbic"])
    lines = [line]
    named = step["step_p"] < DRIFT_ALPHA and step["step_dbic"] > best_shape
    beside = NAN
    # as for the joined interval below, not for one run: a run's own AR(1) wander fits a step
    # and a bend alike, and one run's shape tests need no rescue (docs/tau_k.md §6.8)
    explainable = (
        n_runs > 1
        and step["step_p"] < BEND_STEP_ALPHA
        and _slowdown_bend(step, curvature, breakpoint)
    )
    if not named and explainable:
        beside = _shape_p_beside_step(xk, yk, w, groups, shape_noise, line_w, step["step_k"])
    if named or beside >= DRIFT_ALPHA:
        # a level step explains the curve best, or it is a slowdown and the shapes that beat it
        # in BIC bend up the way it does and are not significant next to it (a hinge or a bend
        # fitted to a throttle; a falling slope, DSA's collapse, is never explained away):
        # test the shapes of tau(k) with the step removed (docs/tau_k.md §6.8)
        drift_free = yk / (1 + step["step_rel"] * (xk >= step["step_k"]))
        line_d = _shape_fit(X, drift_free, w, groups, shape_noise)
        curvature, curvature_p, curvature_effect, curvature_dbic, _, curvature_bubble = _curvature(
            xk, drift_free, w, groups, line_d, shape_grid, scale, shape_noise
        )
        breakpoint = _breakpoint(xk, drift_free, w, groups, line_d, shape_grid, scale, shape_noise)
        breakpoint.pop("_sse")
        # the line of tau(k) is the one under the step: its slope and intercept from the model
        # with the step term (the line through a throttled run is not the undisturbed line),
        # under the shape tests' noise model
        plain = line
        line = _step_line(X, xk, yk, a, b, step["step_k"], groups, shape_noise)
        lines = [line, plain]
        kind = "cluster(run)" if groups is not None else shape_noise.label()
        base["ci_method"] = kind + runs_text + "+step, interval joined with the line's"
        if not named:
            base["ci_method"] += f"; a rising bend the step accounts for (p={beside:.2g} beside it)"
        a, b = line.params[:2]
        # the step model was chosen by a search over its position, so a step found in noise
        # (1-1.5 % of straight curves) gives an interval that misses; the interval is the union
        # of the line's and the step model's (docs/tau_k.md §6.6)
        step_ci, step_ab, step_ba = _line_intervals(line, level)
        ci, ab, ba = _union(ci, step_ci), _union(ab, step_ab), _union(ba, step_ba)
    elif n_runs > 1 and step["step_p"] < STEP_INTERVAL_ALPHA:
        # a step too weak to name but not ruled out: the line keeps its estimate, and its
        # intervals also hold the step model's, which a throttle that is not detected would
        # otherwise leave outside. Not for one run: there the step model's wide a/b interval
        # took GLM-5.2's linear_offset flag (docs/tau_k.md §6.7)
        alt = _step_line(X, xk, yk, a, b, step["step_k"], groups, shape_noise)
        lines = [line, alt]
        step_ci, step_ab, step_ba = _line_intervals(alt, level)
        ci, ab, ba = _union(ci, step_ci), _union(ab, step_ab), _union(ba, step_ba)
        base["ci_method"] += f"; joined with a level step's (p={step['step_p']:.2g})"
    # relative noise variance per point for the balance floor: the best of the three shapes,
    # so that a real kink or curvature does not pass for noise
    rel_var = [line_w.ssr / max(m - 2, 1)]
    if math.isfinite(sse_quad) and m > 3:
        rel_var.append(sse_quad / (m - 3))
    if math.isfinite(sse_hinge) and m > 4:
        rel_var.append(sse_hinge / (m - 4))
    noise_rel_var = min(rel_var)

    means = np.array([y[k == kk].mean() for kk in k_grid])
    counts = np.array([(k == kk).sum() for kk in k_grid])
    balance = balance_residual(k_grid, means)
    # the stage's estimated curve (the kept shape, residuals shrunk by the runs' pure error,
    # outlier chunks as measured) and its parametric bootstrap: balance and VPP bubble from it
    shape_kind, shape_at = _kept_shape(curvature_p, curvature_dbic, breakpoint, step, first, stair)
    kept = np.isin(k_grid, np.unique(ks))
    design = _shape_design(shape_kind, k_grid[kept], (a, b), shape_at)
    stage = shrunk_curve(k_grid, k, y, runs, kept, design, n_boot, seed)
    balance_est = float(_balance_rows(k_grid, stage.tau[None, :])[0])
    lo, hi = _interval(_balance_rows(k_grid, stage.draws), level)
    floor = NAN
    terms = _balance_terms(k_grid, means)
    if terms is not None:
        # expected sum|second difference| of pure noise on the mean curve: relative variance
        # noise_rel_var per point, m_k points at k
        pos = {int(kk): i for i, kk in enumerate(k_grid)}
        inner = [i for i, kk in enumerate(k_grid) if kk - 1 in pos and kk + 1 in pos]
        level_sq = np.maximum(a + b * k_grid, 0.1 * scale) ** 2 / counts
        var = [
            noise_rel_var
            * (
                level_sq[pos[int(k_grid[i]) - 1]]
                + level_sq[pos[int(k_grid[i]) + 1]]
                + 4 * level_sq[i]
            )
            for i in inner
        ]
        floor = float(math.sqrt(2 / math.pi) * np.sqrt(var).sum() / terms[1].sum())

    fit = CurveFit(
        **base,
        intercept=float(a),
        intercept_lo=float(ci[0, 0]),
        intercept_hi=float(ci[0, 1]),
        slope=float(b),
        slope_lo=float(ci[1, 0]),
        slope_hi=float(ci[1, 1]),
        slope_p=float(line.pvalues[1]),
        slope_robust_lo=robust.lo,
        slope_robust_hi=robust.hi,
        r2=r2,
        sigma_rel=math.sqrt(line_w.ssr / max(m - 2, 1)),
        ab_ratio=float(a / b) if b != 0 else math.copysign(math.inf, a),
        ab_lo=ab[0],
        ab_hi=ab[1],
        ba_lo=ba[0],
        ba_hi=ba[1],
        balance=balance,
        balance_est=balance_est,
        balance_lo=lo,
        balance_hi=hi,
        balance_method=f"{stage.method} {shape_kind}",
        balance_floor=floor,
        **asdict(EMPTY_PREDICTION),  # filled in per configuration (with_prediction)
        curvature=curvature,
        curvature_p=curvature_p,
        curvature_effect=curvature_effect,
        curvature_dbic=curvature_dbic,
        curvature_bubble_pp=curvature_bubble,
        **breakpoint,
        **first,
        **stair,
        shapes_from_k=shapes_from_k,
        **step,
        **jump,
        durbin_watson=dw_line,
        n_outliers=screen.count,
        outliers=screen.text,
    )
    return fit, stage, lines
