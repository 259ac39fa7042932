"""The line of a tau_k curve from the spread of its runs' own lines, for serially correlated noise.

With 3 to MIN_CLUSTERS - 1 runs the line is the GLS fit of the per-k mean curve under AR(1)
noise (pipelines.analysis.tau.serial). Its interval needs rho, and rho estimated from a few runs of
8-21 chunks is too uncertain: with rho = 0.5-0.7 the slope interval held the true slope in 89-92 %
of fits where 95 % was asked, and 92.5 % even with the true rho plugged in
(docs/tau_k.md §6.3). Runs are independent, so the G least-squares lines fitted to each run
alone are G independent, identically distributed estimates whatever the correlation inside a
run: their mean, with the covariance of the G lines over G and Student's t with G - 1 degrees of
freedom, is an interval that holds at its level under any within-run correlation (the
"summary statistics" or two-stage approach). It is wider than GLS (t(2) = 4.30 at three runs),
so it is used only when the runs show serial correlation: the pure error's lag-1 correlation
rho exceeds its standard error sqrt((1 - rho^2) / n_eff), n_eff = the within-run pairs of
consecutive chunks x (G - 1) / G (Bartlett's approximation; the deviations from the per-k means
keep (G - 1) / G of the information).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

MIN_RUNS = 3
"""Fewest runs whose lines give the interval: t(1) at two runs is 12.7, no interval at all."""


class RunsLine:
    """Mean of per-run lines (intercept, slope) with t(G-1) inference, the part of a statsmodels
    result the fits read (params, bse, pvalues, df_resid, cov_params, conf_int)."""

    def __init__(self, lines: np.ndarray) -> None:
        runs = len(lines)
        self.params = lines.mean(axis=0)
        self._cov = np.cov(lines.T, ddof=1) / runs
        self.df_resid = runs - 1
        self.bse = np.sqrt(np.diag(self._cov))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = self.params / self.bse
        self.pvalues = 2 * stats.t.sf(np.abs(t), self.df_resid)

    def cov_params(self) -> np.ndarray:
        return self._cov

    def conf_int(self, alpha: float = 0.05) -> np.ndarray:
        half = stats.t.ppf(1 - alpha / 2, self.df_resid) * self.bse
        return np.column_stack([self.params - half, self.params + half])


def rho_standard_error(rho: float, k: np.ndarray, runs: np.ndarray) -> float:
    """Approximate standard error of the pure error's lag-1 correlation rho (module docstring);
    inf when there are no pairs of consecutive chunks."""
    ids = np.unique(runs)
    pairs = sum(int((np.diff(np.sort(k[runs == r])) == 1).sum()) for r in ids)
    n_eff = pairs * (len(ids) - 1) / len(ids)
    return math.sqrt(max(1 - rho * rho, 0.0) / n_eff) if n_eff > 0 else math.inf


def runs_line(k: np.ndarray, y: np.ndarray, runs: np.ndarray) -> RunsLine | None:
    """The RunsLine of the points (k, y) of MIN_RUNS or more runs, each fitted by least squares;
    None when a run has fewer than three chunk indices or the runs are too few."""
    lines = []
    for r in np.unique(runs):
        mine = runs == r
        if len(np.unique(k[mine])) < 3:
            return None
        X = np.column_stack([np.ones(mine.sum()), k[mine]])
        lines.append(np.linalg.lstsq(X, y[mine], rcond=None)[0])
    return RunsLine(np.array(lines)) if len(lines) >= MIN_RUNS else None
