"""Change points in one metric's nightly history (docs/regressions.md).

Candidates come from ruptures' binary segmentation (l2 cost, minimum segment `min_segment` runs,
penalty 2*log(n)*sigma^2 with sigma from the median absolute first difference, so one odd night
does not inflate it). Each candidate is then tested against the whole segments on either side, as
Otava re-tests its points: Welch's t on log values must give p <= max_pvalue and the segments'
medians must differ by at least min_magnitude; the weakest failing point is dropped and the rest
re-tested until all pass, and each survivor is moved to the best single split between its
neighbours. A point with fewer than `confirm` runs after it is `pending`, never a regression,
until later nights confirm it.

Single-night spikes are screened out before any of this (`isolated_nights`): a night whose log
value lies more than `spike_sigmas` robust sigmas from the median of the nights on each side of
it (up to `SPIKE_WINDOW` each way, same direction on both) is left out of the segmentation and the
tests, so a slow night (a noisy neighbour, a throttled node) raises nothing and cannot drag a real
point. The first and last nights have one side only and are never screened; instead a pending
change in the last nights needs every one of them shifted by at least the minimum magnitude.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import ruptures
from scipy import stats

from pipelines.analysis.compare import bootstrap_effect

DEFAULT_MIN_MAGNITUDE = 0.015
DEFAULT_MAX_PVALUE = 1e-4
DEFAULT_MIN_SEGMENT = 5
DEFAULT_CONFIRM = 5
DEFAULT_SPIKE_SIGMAS = 3.5
SPIKE_WINDOW = 3


@dataclass(frozen=True)
class ChangePoint:
    """A change between index-1 and index of one series; magnitude relative (0.03 = +3 %)."""

    index: int  # first point after the change
    n_before: int
    n_after: int
    mean_before: float
    mean_after: float
    magnitude: float  # mean_after / mean_before - 1
    magnitude_lo: float
    magnitude_hi: float
    median_shift: float  # median_after / median_before - 1
    p_value: float
    status: str  # confirmed | pending

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _welch_log(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) < 2 or len(b) < 2:
        return 1.0
    if np.any(a <= 0) or np.any(b <= 0):
        p = stats.ttest_ind(b, a, equal_var=False).pvalue
    else:
        p = stats.ttest_ind(np.log(b), np.log(a), equal_var=False).pvalue
    return float(p) if math.isfinite(p) else 1.0


def _passes(before, after, max_pvalue, min_magnitude) -> tuple[bool, float, float]:
    p = _welch_log(before, after)
    shift = float(np.median(after) / np.median(before) - 1) if np.median(before) else math.nan
    ok = p <= max_pvalue and math.isfinite(shift) and abs(shift) >= min_magnitude
    return ok, p, shift


def _tail_test(rest: np.ndarray, tail: np.ndarray) -> float:
    """p that the last few runs come from the distribution of the runs before them: their mean
    against the earlier runs' mean with the earlier runs' own spread (t, n-1 df); Welch's own
    variance estimate from 2-4 points is too unstable for this."""
    a = np.log(rest) if np.all(rest > 0) and np.all(tail > 0) else rest
    b = np.log(tail) if a is not rest else tail
    sd = float(np.std(a, ddof=1))
    if not sd > 0:
        return 1.0
    t = (b.mean() - a.mean()) / (sd * math.sqrt(1 / len(a) + 1 / len(b)))
    return float(2 * stats.t.sf(abs(t), len(a) - 1))


def _best_split(y: np.ndarray, start: int, end: int, min_segment: int) -> int | None:
    """The single split of y[start:end] with the least squared error (on logs)."""
    z = np.log(y[start:end]) if np.all(y[start:end] > 0) else y[start:end]
    best, where = math.inf, None
    for k in range(min_segment, len(z) - min_segment + 1):
        cost = z[:k].var() * k + z[k:].var() * (len(z) - k)
        if cost < best:
            best, where = cost, start + k
    return where


def _refine(y, points, min_segment) -> list[int]:
    """Move each point to the best split between its neighbours (binary segmentation with a
    penalty can leave a point off by a few runs once others around it are pruned)."""
    points = sorted(points)
    for i in range(len(points)):
        edges = [0, *points, len(y)]
        best = _best_split(y, edges[i], edges[i + 2], min_segment)
        if best is not None:
            points[i] = best
    return points


def _segments(points: list[int], n: int) -> list[tuple[int, int, int]]:
    """(start, point, end) for each point: the segments on either side."""
    edges = [0, *points, n]
    return [(edges[i], edges[i + 1], edges[i + 2]) for i in range(len(points))]


def _prune(y, points, max_pvalue, min_magnitude) -> list[int]:
    points = sorted(points)
    while points:
        tests = [
            _passes(y[s:p], y[p:e], max_pvalue, min_magnitude)
            for s, p, e in _segments(points, len(y))
        ]
        failing = [(t[1], i) for i, t in enumerate(tests) if not t[0]]
        if not failing:
            break
        _, worst = max(failing)
        points.pop(worst)
    return points


def _scale(y: np.ndarray) -> np.ndarray:
    return np.log(y) if np.all(y > 0) else y / np.median(y)


def _robust_sigma(z: np.ndarray) -> float:
    """Noise sigma from the median absolute first difference: a step or a spike barely moves it."""
    sigma = float(np.median(np.abs(np.diff(z)))) / (math.sqrt(2) * 0.6745) if len(z) > 1 else 0.0
    return sigma if sigma > 0 else float(np.std(z)) or 1e-12


def isolated_nights(values: np.ndarray, spike_sigmas: float = DEFAULT_SPIKE_SIGMAS) -> np.ndarray:
    """Mask of single-night spikes: log value beyond spike_sigmas robust sigmas from the median of
    the up-to-SPIKE_WINDOW nights on its left AND of those on its right, on the same side of both.
    A step is never a spike (the nights after it agree with it); the first and last nights,
    having one side only, are never flagged."""
    y = np.asarray(values, dtype=float)
    mask = np.zeros(len(y), dtype=bool)
    if len(y) < 3:
        return mask
    z = _scale(y)
    limit = spike_sigmas * _robust_sigma(z)
    for i in range(1, len(z) - 1):
        left = z[i] - np.median(z[max(0, i - SPIKE_WINDOW) : i])
        right = z[i] - np.median(z[i + 1 : i + 1 + SPIKE_WINDOW])
        mask[i] = min(abs(left), abs(right)) > limit and left * right > 0
    return mask


def _candidates(y: np.ndarray, min_segment: int) -> list[int]:
    if len(y) < 2 * min_segment:
        return []
    z = _scale(y)
    sigma = _robust_sigma(z)
    algo = ruptures.Binseg(model="l2", min_size=min_segment, jump=1).fit(z.reshape(-1, 1))
    return [b for b in algo.predict(pen=2 * math.log(len(z)) * sigma**2) if b < len(z)]


def _describe(y, start, point, end, p, shift, status, seed) -> ChangePoint:
    before, after = y[start:point], y[point:end]
    lo, hi, _ = (
        bootstrap_effect(before, after, seed=seed)
        if len(before) >= 3 and len(after) >= 3
        else (math.nan, math.nan, "none")
    )
    return ChangePoint(
        index=point,
        n_before=len(before),
        n_after=len(after),
        mean_before=float(before.mean()),
        mean_after=float(after.mean()),
        magnitude=float(after.mean() / before.mean() - 1),
        magnitude_lo=lo,
        magnitude_hi=hi,
        median_shift=shift,
        p_value=p,
        status=status,
    )


def detect_change_points(
    values: np.ndarray,
    *,
    min_magnitude: float = DEFAULT_MIN_MAGNITUDE,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    confirm: int = DEFAULT_CONFIRM,
    spike_sigmas: float = DEFAULT_SPIKE_SIGMAS,
) -> list[ChangePoint]:
    """Change points of a series in run order (oldest first); ChangePoint.index counts every
    finite value, single-night spikes (`isolated_nights`) included, though they are not tested."""
    y = np.asarray(values, dtype=float)
    y = y[np.isfinite(y)]
    kept = np.flatnonzero(~isolated_nights(y, spike_sigmas))
    return [
        replace(cp, index=int(kept[cp.index]))
        for cp in _detect(y[kept], min_magnitude, max_pvalue, min_segment, confirm)
    ]


def _detect(y, min_magnitude, max_pvalue, min_segment, confirm) -> list[ChangePoint]:
    points = _prune(y, _candidates(y, min_segment), max_pvalue, min_magnitude)
    points = _prune(y, _refine(y, points, min_segment), max_pvalue, min_magnitude)
    out = []
    for i, (s, p, e) in enumerate(_segments(points, len(y))):
        _, pval, shift = _passes(y[s:p], y[p:e], max_pvalue, min_magnitude)
        status = "confirmed" if e - p >= confirm else "pending"
        out.append(_describe(y, s, p, e, pval, shift, status, seed=i))
    # the tail: a change in the last runs, too few to form a segment, is pending
    last = points[-1] if points else 0
    rest = y[last:]
    best = None
    for tail in range(2, min(confirm, len(rest) - min_segment + 1)):
        pval = _tail_test(rest[:-tail], rest[-tail:])
        shifts = rest[-tail:] / np.median(rest[:-tail]) - 1
        shift = float(np.median(shifts))
        # every one of the last runs must have moved, the same way: a lone slow last night is
        # not a change (yet), and the screen cannot judge it without a night after it
        every = bool(np.all(np.sign(shifts) == np.sign(shift)))
        ok = pval <= max_pvalue and every and float(np.min(np.abs(shifts))) >= min_magnitude
        if ok and (best is None or pval < best[1]):
            best = (len(y) - tail, pval, shift)
    if best is not None:
        out.append(_describe(y, last, best[0], len(y), best[1], best[2], "pending", seed=len(out)))
    return out
