"""The noise model of one tau_k mean curve: multiplicative noise, AR(1) over the chunk sequence
of a run, and the runs' pure error. Every line and shape test of a curve pooled from fewer than
MIN_CLUSTERS runs is generalised least squares under this model (pipelines.analysis.tau.fits).

* relative noise: sd of tau_k proportional to tau_hat_k (the weights 1/tau_hat^2);
* serial correlation: corr(e_k, e_j) = rho^|k-j| within a run, none across runs. The mean curve
  of G independent runs keeps the same rho with 1/G of the variance;
* rho from two or more runs: the lag-1 autocorrelation of the runs' relative deviations from the
  per-k means (the pure error), which no shape of tau(k) and no step shared by the runs enters;
  E[d_k d_(k+1)] / E[d_k^2] = rho exactly for the deviations of G iid AR(1) runs;
* rho from one run: the lag-1 autocorrelation r of the model's relative residuals is biased
  down by the fit (about -(1+3 rho)/n on 8-21 chunks, and more with more regressors), so rho is
  the value whose expected r, tr(M A M R(rho)) / tr(M R(rho)) (M the residual maker of the
  design, A the symmetric lag-1 matrix), equals the observed r: an approximately unbiased
  estimate (ratio of expectations), clipped to [0, RHO_MAX];
* scale: the whitened residuals' mean square, pooled with the pure error when runs are repeated
  (df = m - p + sum(n_k - 1)): repeats add degrees of freedom to every test.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import statsmodels.api as sm
from scipy import linalg, optimize

RHO_MAX = 0.9


@dataclass(frozen=True)
class Noise:
    """Whitening of one mean curve (m chunk indices) and the runs' pure error."""

    wt: np.ndarray
    rho: float
    pe_ss: float
    pe_df: int
    source: str

    def whiten(self, a: np.ndarray) -> np.ndarray:
        return self.wt @ a

    def fit(self, X: np.ndarray, y: np.ndarray):
        """GLS of y on X under this noise model: a statsmodels OLS result on the whitened data
        with the scale pooled with the pure error and t(df) on the pooled df."""
        model = sm.OLS(self.whiten(y), self.whiten(X))
        plain = model.fit()
        if not self.pe_df:
            return plain
        scale = (plain.ssr + self.pe_ss) / (plain.df_resid + self.pe_df)
        # the pure error's effective df under AR(1): var(sum e^2) grows by (1+rho^2)/(1-rho^2)
        df = plain.df_resid + self.pe_df * (1 - self.rho**2) / (1 + self.rho**2)
        model.df_resid = df  # t(df) in pvalues, conf_int and fits._tcrit
        return model.fit(cov_type="fixed scale", cov_kwds={"scale": scale}, use_t=True)

    def label(self) -> str:
        return f"gls-ar1(rho={self.rho:.2f}, {self.source})"


def correlation(k: np.ndarray, rho: float) -> np.ndarray:
    """AR(1) correlation rho^|k_i - k_j| of the chunk indices k."""
    return rho ** np.abs(k[:, None] - k[None, :]) if rho else np.eye(len(k))


def noise_model(k: np.ndarray, tau_hat: np.ndarray, counts: np.ndarray, rho: float, pe, source):
    """The Noise of a mean curve at chunk indices k with fitted level tau_hat and counts."""
    sd = tau_hat / np.sqrt(counts)
    cov = correlation(k, rho) * np.outer(sd, sd)
    chol = np.linalg.cholesky(cov)
    wt = linalg.solve_triangular(chol, np.eye(len(k)), lower=True)
    return Noise(wt, rho, pe[0], pe[1], source)


def pure_error(k, y, runs, k_grid, means) -> tuple[float, int, float]:
    """(relative pure-error SS, its df, rho of the deviations within runs) of the points."""
    index = np.searchsorted(k_grid, k)
    dev = y / means[index] - 1
    ss = float(dev @ dev)
    df = len(y) - len(k_grid)
    lagged, n_pairs = 0.0, 0
    for r in np.unique(runs):
        mine = runs == r
        kk, dd = k[mine], dev[mine]
        order = np.argsort(kk)
        kk, dd = kk[order], dd[order]
        next_ = np.diff(kk) == 1
        lagged += float(np.sum(dd[:-1][next_] * dd[1:][next_]))
        n_pairs += int(next_.sum())
    if df <= 0 or n_pairs == 0 or ss <= 0:
        return ss, max(df, 0), 0.0
    rho = (lagged / n_pairs) / (ss / len(y))
    return ss, df, float(min(max(rho, 0.0), RHO_MAX))


def residual_rho(k: np.ndarray, X: np.ndarray, y: np.ndarray, tau_hat: np.ndarray) -> float:
    """Approximately unbiased AR(1) rho of one series from the relative residuals of the
    design X (see the module docstring); 0 when the residuals show none."""
    Xs = X / tau_hat[:, None]
    ys = y / tau_hat
    resid_maker = np.eye(len(y)) - Xs @ np.linalg.pinv(Xs)
    e = resid_maker @ ys
    lag = np.zeros((len(k), len(k)))
    step = np.flatnonzero(np.diff(k) == 1)
    lag[step, step + 1] = lag[step + 1, step] = 0.5
    denom = float(e @ e)
    if denom <= 0 or not len(step):
        return 0.0
    observed = float(e @ lag @ e) / denom
    mal = resid_maker @ lag @ resid_maker

    def expected(rho: float) -> float:
        corr = correlation(k, rho)
        return float(np.trace(mal @ corr) / np.trace(resid_maker @ corr))

    if observed <= expected(0.0):
        return 0.0
    if observed >= expected(RHO_MAX):
        return RHO_MAX
    return float(optimize.brentq(lambda r: expected(r) - observed, 0.0, RHO_MAX, xtol=1e-4))
