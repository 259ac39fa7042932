"""The Student-t confidence interval of a mean: the one implementation the schedule comparison,
the dashboards and the workload validation share (the SQL marts compute the same bounds with
the `student_t_quantile` function, pipelines/store/functions.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence

LEVEL = 0.95


def t_interval(mean: float, sd: float | None, n: int, level: float = LEVEL) -> tuple[float, float]:
    """(low, high) of the mean of n observations with sample standard deviation `sd`; NaN
    bounds when n < 2 or sd is not finite."""
    if n < 2 or sd is None or not math.isfinite(sd):
        return (math.nan, math.nan)
    from scipy import stats  # on use: the parsers and light readers never load scipy

    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return (mean - half, mean + half)


def mean_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """(mean, low, high) of `values` (NaN mean when empty, NaN bounds with one value)."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = math.fsum(values) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    low, high = t_interval(mean, sd, n, level)
    return mean, low, high
