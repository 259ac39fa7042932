"""How large the best split of a series without any change gets: the p-value of a change point
found by searching every split.

A change point is the split of a segment (length L, at least `min_segment` values each side)
with the largest two-sample t (pooled variance, on log values). Testing that one split as if it
had been chosen in advance ignores the search: over the 51 splits of a 60-night series the
largest |t| of pure noise exceeds the single-test 1e-4 critical value (4.18) in 0.2 % of series,
20x more often than 1e-4. The
largest |t| over the splits of L iid normal values does not depend on their mean or variance, so
its distribution is simulated once per (L, min_segment) (NULL_DRAWS seeded draws, cached) and the
p-value of an observed t is the share of draws at least as large. In the far tail (fewer than
MIN_EXCEEDANCES draws as large, p below about 1e-3) the share is too coarse to print, so the
smaller of it and the Bonferroni bound (the number of splits x the single test's p, an upper
bound of the true p) is reported; every decision at the thresholds used (1e-3 and above) is
taken on the simulated share.

The simulated null is a pure function of (L, min_segment, NULL_DRAWS) and numpy's generator, so
it is also kept on disk (`null_cache_dir`: one .npy of NULL_DRAWS sorted values per length):
a new process finds it instead of simulating it again (1.8 s at 100 nights, 5 s at 1,000, on this
project's 2-core machine), with identical p-values. A file that cannot be read as the expected
array is simulated again and rewritten; a cache folder that cannot be written is skipped.
"""

from __future__ import annotations

import io
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy import stats

from pipelines.paths import CACHE_ENV as CACHE_ENV  # tests and callers name it here
from pipelines.paths import cache_base, keep_file, read_cache_file

NULL_DRAWS = 20_000
MIN_EXCEEDANCES = 20
_BATCH_VALUES = 4_000_000  # draws x length simulated at once (about 32 MB per array)


def split_t(z: np.ndarray, min_segment: int) -> tuple[np.ndarray, np.ndarray]:
    """(split positions, |pooled two-sample t| at each) of the rows of z (draws x L)."""
    z = np.atleast_2d(z)
    n = z.shape[1]
    k = np.arange(min_segment, n - min_segment + 1)
    if not len(k):
        return k, np.zeros((z.shape[0], 0))
    c = np.cumsum(z, axis=1)
    c2 = np.cumsum(z * z, axis=1)
    s1, q1 = c[:, k - 1], c2[:, k - 1]
    s2, q2 = c[:, -1:] - s1, c2[:, -1:] - q1
    n1, n2 = k.astype(float), (n - k).astype(float)
    m1, m2 = s1 / n1, s2 / n2
    ss = np.maximum(q1 - n1 * m1 * m1 + q2 - n2 * m2 * m2, 0.0)
    sd = np.sqrt(ss / (n - 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(m2 - m1) / (sd * np.sqrt(1 / n1 + 1 / n2))
    return k, np.nan_to_num(t, nan=0.0, posinf=np.inf)


def null_cache_dir() -> Path:
    """The folder of this numpy version's simulated nulls (the generator's stream is numpy's)."""
    version = ".".join(np.__version__.split(".")[:2])
    return cache_base() / "split_null" / f"draws{NULL_DRAWS}-numpy{version}"


@lru_cache(maxsize=512)
def _null_max(length: int, min_segment: int) -> np.ndarray:
    """Sorted largest |t| over the splits of NULL_DRAWS iid normal series of `length`: from the
    disk cache when it holds them, else simulated (and kept there)."""
    path = null_cache_dir() / f"L{length}-m{min_segment}.npy"
    try:
        cached = np.load(io.BytesIO(read_cache_file(path)), allow_pickle=False)
        if cached.shape == (NULL_DRAWS,) and cached.dtype == np.float64:
            return cached
    except (OSError, ValueError):
        pass
    null = _simulated_null_max(length, min_segment)
    _keep(path, null)
    return null


def _keep(path: Path, values: np.ndarray) -> None:
    """Write `values` to `path` whole or not at all (a temporary file renamed over it)."""
    keep_file(path, lambda out: np.save(out, values, allow_pickle=False))


def _simulated_null_max(length: int, min_segment: int) -> np.ndarray:
    """The null simulated: NULL_DRAWS seeded draws of `length` iid normal values."""
    rng = np.random.default_rng(length * 1_000 + min_segment)
    batch = max(1, _BATCH_VALUES // length)
    out = []
    for start in range(0, NULL_DRAWS, batch):
        draws = rng.standard_normal((min(batch, NULL_DRAWS - start), length))
        out.append(split_t(draws, min_segment)[1].max(axis=1))
    return np.sort(np.concatenate(out))


def split_pvalue(t: float, length: int, min_segment: int) -> float:
    """p of the best split's |t| in a segment of `length` values with no change in it."""
    splits = length - 2 * min_segment + 1
    if splits <= 0 or math.isnan(t):  # no split to search, or no t
        return 1.0
    if t == math.inf:  # a step between two constant segments
        return 0.0
    null = _null_max(length, min_segment)
    exceed = len(null) - int(np.searchsorted(null, t, side="left"))
    share = (exceed + 1) / (len(null) + 1)
    if exceed >= MIN_EXCEEDANCES:
        return share
    return float(min(1.0, splits * 2 * stats.t.sf(t, length - 2), share))
