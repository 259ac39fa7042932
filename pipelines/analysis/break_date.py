"""How sure a change point's date is: the confidence interval of a mean shift's break date
(Bai 1997), the interval of runs within which the first run after the change lies.

With a shift of size delta in a series of noise sigma, the least-squares break date k_hat
satisfies (delta / sigma)^2 (k_hat - k0) -> argmax_s (W(s) - |s| / 2), W a two-sided Brownian
motion (Yao 1987; Bai 1997, "Estimation of a change point in multiple regression models",
Review of Economics and Statistics 79(4), 551-563). The distribution function of that argmax is
closed form; its 97.5 % quantile is 11.03 (Bai's table), so a 95 % interval is
k_hat +- 11.03 sigma^2 / delta^2, rounded outwards. No maintained Python library computes it
(ruptures and Otava report a point only); R's strucchange does (`confint.breakpointsfull`).
docs/regressions.md has its coverage measured on this detector's output.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from scipy import optimize, stats

DEFAULT_LEVEL = 0.95


def argmax_cdf(x: float) -> float:
    """P(argmax_s (W(s) - |s|/2) <= x): Bai (1997) eq. for equal variances on both sides."""
    if x < 0:
        return 1.0 - argmax_cdf(-x)
    if x == 0:
        return 0.5
    root = math.sqrt(x)
    tail = math.exp(x + stats.norm.logcdf(-1.5 * root))  # e^x Phi(-3 sqrt(x) / 2), no overflow
    return (
        1.0
        + math.sqrt(x / (2 * math.pi)) * math.exp(-x / 8)
        + 1.5 * tail
        - (x + 5) / 2 * stats.norm.cdf(-root / 2)
    )


@cache
def argmax_quantile(p: float) -> float:
    """The p quantile (p > 0.5) of the argmax's distribution: 11.03 at 0.975, 7.69 at 0.95."""
    if not 0.5 < p < 1:
        raise ValueError(f"quantile level must lie in (0.5, 1), got {p}")
    return float(optimize.brentq(lambda x: argmax_cdf(x) - p, 1e-12, 1e4))


def break_date_interval(
    before: np.ndarray, after: np.ndarray, level: float = DEFAULT_LEVEL
) -> tuple[int, int]:
    """(earliest, latest) index, counted from the start of `before`, that the first value after
    the break may have at `level`: len(before) -+ q sigma^2 / delta^2 rounded outwards, with delta
    the difference of the two means and sigma^2 their pooled variance; clipped so at least one
    value stays on each side. Values are compared as given (pass logs for relative shifts)."""
    b = np.asarray(before, dtype=float)
    a = np.asarray(after, dtype=float)
    n_b, n_a = len(b), len(a)
    if n_b < 2 or n_a < 2:
        return 1, n_b + n_a - 1
    delta = float(a.mean() - b.mean())
    dof = n_b + n_a - 2
    var = float(((b - b.mean()) ** 2).sum() + ((a - a.mean()) ** 2).sum()) / dof
    if delta == 0:
        return 1, n_b + n_a - 1
    half = argmax_quantile(1 - (1 - level) / 2) * var / delta**2
    lo = max(1, math.floor(n_b - half))
    hi = min(n_b + n_a - 1, math.ceil(n_b + half))
    return lo, hi
