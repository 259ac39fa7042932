"""The line of a tau_k curve measured in one run, under AR(1) noise whose rho it cannot pin down.

A run of 8-21 chunks holds little information about the AR(1) rho of its noise. GLS at a point
estimate of rho then gives a slope interval that is too short whenever rho is underestimated,
which is most of the time: under AR(1) rho = 0.7 the slope interval held the true slope in
85-87 % of series where 95 % was asked, and 85-88 % at rho's REML estimate (docs/tau_k.md §6.5).
This module builds the interval so that it holds whatever rho in [0, 0.9]:

1. r: the lag-1 autocorrelation of the least-squares residuals of the run's relative series
   (pairs of consecutive chunk indices only);
2. rho_u: the rho under which a value of r at or below the observed one has probability
   UPPER_Q, a one-sided (1 - UPPER_Q) upper confidence bound for rho, read from the simulated
   distribution of r under AR(1) at each rho of a grid (it depends on the design alone, not on
   the line or the noise level);
3. the line: GLS at rho_u;
4. the critical value: the quantile of |t| over BOOT_DRAWS series simulated as AR(1) at rho_u
   and put through steps 1-3, or the same quantile at rho = 0 where that is larger (the two
   ends of the one-sided confidence set [0, rho_u], after Berger and Boos: t is not exactly
   pivotal in rho, and on steep relative designs its tails are heavier under white noise than
   at rho_u). t is invariant to the line and the noise scale, so the simulated series are the
   noise alone. The bound keeps the standard error from being too short when rho is
   underestimated; the bootstrap-t takes back the width the bound adds when it is not.

A run too short to bound rho at all (white noise's median r gives rho_u = RHO_MAX: 10 or fewer
consecutive chunks) is left to the caller, and so are several runs: their pure error bounds rho
too, but a bounded line from it was no better than GLS at the pure error's rho and the runs' own
lines (docs/tau_k.md §6.5). Draws are seeded by the data, so a fit is reproducible and the
simulation error differs from fit to fit instead of repeating. Relative noise as in
pipelines.analysis.tau.serial: the design and the series are divided by the fitted level over
sqrt(count).
"""

from __future__ import annotations

import zlib

import numpy as np
from scipy import stats

from pipelines.analysis.tau.serial import RHO_MAX, correlation

UPPER_Q = 0.10
"""Probability of r at or below the observed value under rho_u: rho_u is a 90 % upper bound."""
RHO_STEP = 0.025
GRID = np.arange(0.0, RHO_MAX + RHO_STEP / 2, RHO_STEP)
TABLE_DRAWS = 2000
"""Simulated series per grid rho for the distribution of r."""
BOOT_DRAWS = 1999
SEED = 20261202


class OneRunLine:
    """GLS line at rho_u with bootstrap-t critical values: the part of a statsmodels result the
    fits read (params, bse, pvalues, df_resid, cov_params, conf_int) and `critical(level)`."""

    def __init__(self, params, cov, df_resid: int, rho_u: float, abs_t: np.ndarray) -> None:
        self.params = np.asarray(params, dtype=float)
        self._cov = np.asarray(cov, dtype=float)
        self.bse = np.sqrt(np.diag(self._cov))
        self.df_resid = df_resid
        self.rho_u = rho_u
        self._abs_t = abs_t  # (draws, 2): |t*| of the intercept and the slope
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.abs(self.params / self.bse)
        # p from t(df) with t rescaled so that the 95 % points of t(df) and of |t*| agree
        scale = stats.t.ppf(0.975, df_resid) / np.quantile(abs_t, 0.95, axis=0)
        self.pvalues = 2 * stats.t.sf(t * scale, df_resid)

    def cov_params(self) -> np.ndarray:
        return self._cov

    def critical(self, level: float) -> float:
        """The larger of the two coefficients' |t*| quantiles at `level` (for Fieller and the
        line's band, which combine both)."""
        return float(np.quantile(self._abs_t, level, axis=0).max())

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        half = np.quantile(self._abs_t, 1 - alpha, axis=0) * self.bse
        return np.column_stack([self.params - half, self.params + half])


def _ar1(index: np.ndarray, rho: float, e: np.ndarray) -> np.ndarray:
    """Unit-variance AR(1) noise at the chunk indices `index` (counted from 0) from the standard
    normal draws e (draws, max(index) + 1): e times the Cholesky factor of rho^|i - j|."""
    span = np.arange(e.shape[-1])
    z = e @ np.linalg.cholesky(correlation(span, rho)).T
    return z if len(index) == len(span) else z[:, index]


class _Design:
    """GLS matrices of the relative design at every grid rho, and the distribution of r."""

    def __init__(self, k: np.ndarray, Xs: np.ndarray, rng: np.random.Generator) -> None:
        self.index = (k - k.min()).astype(int)
        self.Xs = Xs
        self.df = len(k) - Xs.shape[1]
        self.resid_maker = np.eye(len(k)) - Xs @ np.linalg.pinv(Xs)
        self.consecutive = (np.diff(k) == 1).astype(float)
        self.gls = []
        for rho in GRID:
            r_inv = np.linalg.inv(correlation(k, rho))
            a_inv = np.linalg.inv(Xs.T @ r_inv @ Xs)
            self.gls.append((a_inv @ Xs.T @ r_inv, r_inv, a_inv))
        # the same draws at every rho (common random numbers): r's quantiles move smoothly
        e = self.draws(TABLE_DRAWS, rng)
        table = np.array([self.r(_ar1(self.index, rho, e)) for rho in GRID])
        # r's UPPER_Q quantile under each grid rho, made non-decreasing in rho
        self.r_at_q = np.maximum.accumulate(np.quantile(table, UPPER_Q, axis=1))
        # the bound white noise typically gets: RHO_MAX when the run is too short to bound rho
        self.white_bound = float(GRID[self.rho_index(np.median(table[0]))])

    def draws(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return rng.standard_normal((n, int(self.index.max()) + 1))

    def r(self, Y: np.ndarray) -> np.ndarray:
        """Lag-1 autocorrelation of the least-squares residuals of each series (row) of Y."""
        E = Y @ self.resid_maker  # symmetric
        lagged = (E[:, :-1] * E[:, 1:]) @ self.consecutive
        return lagged / np.maximum((E * E).sum(axis=1), 1e-300)

    def rho_index(self, r: np.ndarray) -> np.ndarray:
        rho = np.interp(r, self.r_at_q, GRID)
        return np.rint(rho / RHO_STEP).astype(int)

    def line(self, Y: np.ndarray, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(coefficients (series, 2), their covariance (series, 2, 2)) of GLS at grid rho j."""
        hat, r_inv, a_inv = self.gls[j]
        beta = Y @ hat.T
        resid = Y - beta @ self.Xs.T
        scale = ((resid @ r_inv) * resid).sum(axis=1) / self.df
        return beta, scale[:, None, None] * a_inv[None]

    def t(self, Y: np.ndarray) -> np.ndarray:
        """(series, 2) t of intercept and slope, each series at its own bound rho_u."""
        j = self.rho_index(self.r(Y))
        out = np.empty((len(Y), 2))
        for jj in np.unique(j):
            mine = j == jj
            beta, cov = self.line(Y[mine], int(jj))
            out[mine] = beta / np.sqrt(np.diagonal(cov, axis1=1, axis2=2))
        return out


def one_run_line(
    k: np.ndarray, y: np.ndarray, tau_hat: np.ndarray, counts: np.ndarray | None = None
) -> OneRunLine | None:
    """The OneRunLine of one run's curve y at sorted distinct chunk indices k (counts points
    averaged at each k), fitted level tau_hat; None with fewer than two pairs of consecutive
    chunks or when the run is too short to bound rho at all, where the caller keeps GLS at
    rho's point estimate."""
    if int(np.sum(np.diff(k) == 1)) < 2 or len(k) < 4:
        return None
    sd = tau_hat / np.sqrt(np.ones(len(k)) if counts is None else counts)
    Xs = np.column_stack([np.ones_like(k), k]) / sd[:, None]
    observed = (np.asarray(y, dtype=float) / sd)[None]
    # seeded by the data: reproducible, and the simulation error of one set of draws does not
    # repeat in every fit
    rng = np.random.default_rng([SEED, zlib.crc32(observed.tobytes())])
    design = _Design(k, Xs, rng)
    if design.white_bound >= RHO_MAX:
        return None
    j = int(design.rho_index(design.r(observed))[0])
    beta, cov = design.line(observed, j)
    # |t*| at rho_u and at white noise, from the same draws: each quantile the larger of the two
    e = design.draws(BOOT_DRAWS, rng)
    abs_t = np.maximum(
        np.sort(np.abs(design.t(_ar1(design.index, GRID[j], e))), axis=0),
        np.sort(np.abs(design.t(e[:, design.index])), axis=0),
    )
    return OneRunLine(beta[0], cov[0], design.df, float(GRID[j]), abs_t)
