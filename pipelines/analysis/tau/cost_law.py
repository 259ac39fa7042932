"""The cost law tau(c, p) of a variable-chunk (DCPP) curve: its chunks change size on purpose, so
tau against the chunk index k is not the law to test (docs/tau_k.md §4 "DCPP").

    tau(c, p) = alpha + beta c + gamma (c p + c (c + 1) / 2)

c: the chunk's tokens, p: the tokens before it (its prefix). alpha: the fixed cost of a forward
(launches, the call), beta c: the work per token (projections, MLP, norms: GEMMs), gamma times the
causal (query, key) pairs of the chunk: attention. This is the per-layer cost of the simulator's
analytic model (pipelines/sim/cost_models.py, docs/schedules.md §4) summed over a stage, and the law
behind the VPP paper's tau_k = (k + 1) t (for a fixed c the pairs are c^2 (k + 1/2), so tau_k is
affine in k with a/b = (alpha + beta c + gamma c (c+1)/2) / (gamma c^2)).

Fit: weighted least squares with weights n / tau_hat^2 (multiplicative noise, n the runs pooled
in a point) on the per-(c, p) mean of the points when fewer than MIN_CLUSTERS runs, t intervals;
from MIN_CLUSTERS runs every point with cluster-robust (CR1) covariance by run and t(G - 1), as
for the tau_k line (pipelines.analysis.tau.fits). The a/b a fixed-chunk curve of the nominal
chunk size c0 would have is reported with Fieller's interval from the same covariance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import statsmodels.api as sm
from scipy import stats

from pipelines.analysis.tau.fits import MIN_CLUSTERS, fieller

MIN_POINTS = 5
"""Distinct (c, p) points needed: three parameters and two degrees of freedom for the noise."""
LAW = "tau(c,p) = alpha + beta*c + gamma*(c*p + c(c+1)/2)"
NAN = float("nan")


@dataclass(frozen=True)
class CostLawFit:
    """The fitted law (ns, ns per token, ns per pair) with `level` intervals, its fit quality,
    and the affine tau_k it implies at chunk size c0: intercept a, slope b (ns per chunk) and
    a/b with Fieller's interval."""

    n_runs: int
    n_points: int
    n_cp: int
    level: float
    method: str
    alpha: float
    alpha_lo: float
    alpha_hi: float
    beta: float
    beta_lo: float
    beta_hi: float
    gamma: float
    gamma_lo: float
    gamma_hi: float
    gamma_p: float
    r2: float
    sigma_rel: float
    c0: float
    a: float
    a_lo: float
    a_hi: float
    b: float
    b_lo: float
    b_hi: float
    ab: float
    ab_lo: float
    ab_hi: float
    ba_lo: float
    ba_hi: float

    @property
    def usable(self) -> bool:
        return self.n_cp >= MIN_POINTS and math.isfinite(self.gamma)


def causal_pairs(c: np.ndarray, p: np.ndarray) -> np.ndarray:
    """(query, key) pairs of a causal chunk of c tokens after p: c p + c (c + 1) / 2."""
    return c * p + c * (c + 1.0) / 2.0


def _design(c: np.ndarray, p: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones_like(c), c, causal_pairs(c, p)])


def fit_cost_law(
    tokens: np.ndarray,
    prefix: np.ndarray,
    tau: np.ndarray,
    runs: np.ndarray | None = None,
    *,
    c0: float | None = None,
    level: float = 0.95,
) -> CostLawFit:
    """Fit tau(c, p) to one curve's points (one entry per chunk: tokens c, prefix p, tau ns, run).
    `c0`: the chunk size whose implied tau_k line and a/b are reported (default: the most common
    chunk size of the points)."""
    c = np.asarray(tokens, dtype=float)
    p = np.asarray(prefix, dtype=float)
    y = np.asarray(tau, dtype=float)
    runs = np.zeros(len(y), dtype=int) if runs is None else np.asarray(runs)
    ok = np.isfinite(c) & np.isfinite(p) & np.isfinite(y) & (c > 0) & (y > 0)
    c, p, y, runs = c[ok], p[ok], y[ok], runs[ok]
    n_runs = len(np.unique(runs))
    pairs = np.unique(np.column_stack([c, p]), axis=0) if len(c) else np.empty((0, 2))
    if c0 is None:
        values, counts = np.unique(c, return_counts=True) if len(c) else (np.array([NAN]), [1])
        c0 = float(values[int(np.argmax(counts))])
    base = dict(n_runs=n_runs, n_points=len(y), n_cp=len(pairs), level=level, c0=float(c0))
    if len(pairs) < MIN_POINTS:
        empty = {f: NAN for f in CostLawFit.__dataclass_fields__ if f not in base}
        return CostLawFit(**{**empty, **base, "method": "none"})
    if n_runs >= MIN_CLUSTERS:
        groups = np.unique(runs, return_inverse=True)[1]
        X, yy, cnt = _design(c, p), y, np.ones(len(y))
    else:
        groups = None
        cc, pp = pairs[:, 0], pairs[:, 1]
        at = [(c == ci) & (p == pi) for ci, pi in pairs]
        yy = np.array([y[m].mean() for m in at])
        cnt = np.array([m.sum() for m in at], dtype=float)
        X = _design(cc, pp)
    # scale the columns for a well-conditioned solve (pairs reach 1e10); coefficients scaled back
    norm = np.maximum(np.abs(X).max(axis=0), 1.0)
    Xs = X / norm
    first = sm.WLS(yy, Xs, weights=cnt).fit()
    w = cnt / np.maximum(first.fittedvalues, 0.1 * yy.mean()) ** 2
    if groups is not None:
        res = sm.WLS(yy, Xs, weights=w).fit(
            cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
        )
        df = n_runs - 1
        method = f"wls 1/tau^2, cluster(run), t({df})"
    else:
        res = sm.WLS(yy, Xs, weights=w).fit()
        df = int(res.df_resid)
        method = f"wls 1/tau^2 on {len(yy)} (c, p) means, t({df})"
    theta = res.params / norm
    cov = np.asarray(res.cov_params()) / np.outer(norm, norm)
    tcrit = float(stats.t.ppf(0.5 + level / 2, df)) if df > 0 else math.inf
    se = np.sqrt(np.diag(cov))
    lo, hi = theta - tcrit * se, theta + tcrit * se
    fitted = X @ theta
    total = float(np.sum((yy - yy.mean()) ** 2))
    r2 = 1 - float(np.sum((yy - fitted) ** 2)) / total if total > 0 else NAN
    rel = (yy - fitted) / np.maximum(fitted, 1e-300)
    sigma_rel = float(np.sqrt(np.sum(rel**2) / max(len(yy) - 3, 1)))
    # the affine tau_k at chunk size c0: a = L_a theta, b = L_b theta
    la = np.array([1.0, c0, c0 * (c0 + 1) / 2])
    lb = np.array([0.0, 0.0, c0 * c0])
    a, b = float(la @ theta), float(lb @ theta)
    va, vb, cab = float(la @ cov @ la), float(lb @ cov @ lb), float(la @ cov @ lb)
    ab_lo, ab_hi = fieller(a, b, va, vb, cab, tcrit)
    ba_lo, ba_hi = fieller(b, a, vb, va, cab, tcrit)
    half_a, half_b = tcrit * math.sqrt(max(va, 0)), tcrit * math.sqrt(max(vb, 0))
    return CostLawFit(
        **base,
        method=method,
        alpha=float(theta[0]),
        alpha_lo=float(lo[0]),
        alpha_hi=float(hi[0]),
        beta=float(theta[1]),
        beta_lo=float(lo[1]),
        beta_hi=float(hi[1]),
        gamma=float(theta[2]),
        gamma_lo=float(lo[2]),
        gamma_hi=float(hi[2]),
        gamma_p=float(res.pvalues[2]),
        r2=r2,
        sigma_rel=sigma_rel,
        a=a,
        a_lo=a - half_a,
        a_hi=a + half_a,
        b=b,
        b_lo=b - half_b,
        b_hi=b + half_b,
        ab=a / b if b != 0 else math.copysign(math.inf, a),
        ab_lo=ab_lo,
        ab_hi=ab_hi,
        ba_lo=ba_lo,
        ba_hi=ba_hi,
    )


def law_text(fit: CostLawFit) -> str:
    """One line of evidence: the law, its coefficients with intervals, and the implied a/b."""

    def iv(x: float, lo: float, hi: float, unit: float = 1.0) -> str:
        return f"{x / unit:.3g} [{lo / unit:.3g}, {hi / unit:.3g}]"

    return (
        f"{LAW}: alpha {iv(fit.alpha, fit.alpha_lo, fit.alpha_hi, 1e6)} ms, beta "
        f"{iv(fit.beta, fit.beta_lo, fit.beta_hi, 1e3)} us/token, gamma "
        f"{iv(fit.gamma, fit.gamma_lo, fit.gamma_hi)} ns/pair; R2={fit.r2:.3f}, "
        f"rel sd {fit.sigma_rel:.1%}; at c={fit.c0:.0f} tau_k = a + b k with a/b "
        f"{fit.ab:.3g} [{fit.ab_lo:.3g}, {fit.ab_hi:.3g}] ({fit.method}; {fit.n_cp} (c, p) "
        f"points, {fit.n_runs} runs)"
    )
