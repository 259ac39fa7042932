"""Change points in one metric's nightly history (docs/regressions.md).

Candidates come from ruptures' binary segmentation (l2 cost, minimum segment `min_segment` runs,
penalty 2*log(n)*sigma^2 with sigma from the median absolute first difference, so one odd night
does not inflate it), and only when the best single split of the whole series is significant
(the gate: a series without a change raises nothing with probability 1 - max_pvalue). Each
candidate is then tested against the whole segments on either side, as Otava re-tests its
points: its pooled t on log values, taken as the best of every split of the joined segments
(p from the simulated largest t of a segment without a change,
pipelines.analysis.changes.split_null),
must give p <= max_pvalue, and the segments' medians must differ by at least min_magnitude; the
weakest failing point is dropped and the rest re-tested until all pass, and each survivor is
moved to the best single split between its neighbours, where it is tested, then dated by the
posterior window of its split (pipelines.analysis.changes.break_date). Each point carries the
95 % set of its date (break_date.posterior_date_set, from the same posterior): the runs among
which the first run after the change lies. A point with fewer than `confirm` runs after it is
`pending`, never a regression, until later nights confirm it; a last point that only stands in
for a change in the last runs (a segment keeps min_segment runs after its point) is left to the
tail test, which reports it as pending.

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

from pipelines.analysis.changes.break_date import (
    posterior_date_set,
    posterior_window_date,
    split_costs,
)
from pipelines.analysis.changes.changepoint_defaults import (
    CONFIRM_MIN_MAGNITUDE,
    DEFAULT_CONFIRM,
    DEFAULT_MAX_PVALUE,
    DEFAULT_MIN_MAGNITUDE,
    DEFAULT_MIN_SEGMENT,
    DEFAULT_PERSIST,
    DEFAULT_SPIKE_SIGMAS,
    FAST_CONFIRM_SHARE,
    PERSIST_MIN_BEFORE,
    PERSIST_PVALUE,
    PERSIST_WINDOW,
    SPIKE_WINDOW,
    TAIL_PVALUE,
)
from pipelines.analysis.changes.split_null import split_pvalue, split_t
from pipelines.analysis.comparison.compare import effect_interval, point_effect


@dataclass(frozen=True)
class ChangePoint:
    """A change between index-1 and index of one series; magnitude relative (0.03 = +3 %)."""

    index: int  # first point after the change
    index_lo: int  # earliest the first point after the change may be (95 % posterior set)
    index_hi: int  # latest it may be
    n_before: int
    n_after: int
    mean_before: float
    mean_after: float
    magnitude: float  # ratio of geometric means - 1 (compare's estimand; its interval's)
    magnitude_lo: float
    magnitude_hi: float
    median_shift: float  # median_after / median_before - 1
    p_value: float
    status: str  # confirmed | pending

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _split_p(before: np.ndarray, after: np.ndarray, min_segment: int) -> float:
    """p of the split between `before` and `after` as the best of every split of the joined
    segment (pooled t on log values against the simulated largest t of a segment without a
    change, pipelines.analysis.changes.split_null)."""
    if len(before) < 2 or len(after) < 2:
        return 1.0
    z = _scale(np.concatenate([before, after]))
    shortest = min(min_segment, len(before), len(after))
    k, t = split_t(z[None, :], shortest)
    at = float(t[0, int(np.searchsorted(k, len(before)))])
    return split_pvalue(at, len(z), shortest)


def _passes(before, after, max_pvalue, min_magnitude, min_segment) -> tuple[bool, float, float]:
    p = _split_p(before, after, min_segment)
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
    if not sd > 0:  # the earlier runs do not vary at all (an exact, noise-free history)
        return 0.0 if not np.allclose(b, a.mean(), rtol=1e-12, atol=0.0) else 1.0
    t = (b.mean() - a.mean()) / (sd * math.sqrt(1 / len(a) + 1 / len(b)))
    return float(2 * stats.t.sf(abs(t), len(a) - 1))


def _best_split(
    y: np.ndarray, start: int, end: int, min_segment: int, min_after: int | None = None
) -> int | None:
    """The single split of y[start:end] with the least squared error (on logs), at least
    min_segment values before it and min_after (default min_segment) after it."""
    z = np.log(y[start:end]) if np.all(y[start:end] > 0) else y[start:end]
    after = min_segment if min_after is None else min_after
    k = np.arange(min_segment, len(z) - after + 1)
    if not len(k):
        return None
    return start + int(k[np.argmin(split_costs(z)[k - 1])])


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


def _date(y, points, min_segment) -> list[int]:
    """Date each point that passed its test anew between its neighbours: the centre of the 5-run
    window holding the most posterior probability of the split (break_date.posterior_window_date),
    at least min_segment runs from either neighbour. The test is taken at the least-squares
    split (the largest |t|, so its searched-split p is the segment's), the date from the
    posterior: within +-2 nights of the truth more often (docs/regressions.md)."""
    points = sorted(points)
    for i in range(len(points)):
        edges = [0, *points, len(y)]
        start, end = edges[i], edges[i + 2]
        if end - start >= 2 * min_segment:
            points[i] = start + posterior_window_date(_scale(y[start:end]), min_segment)
    return points


def _segments(points: list[int], n: int) -> list[tuple[int, int, int]]:
    """(start, point, end) for each point: the segments on either side."""
    edges = [0, *points, n]
    return [(edges[i], edges[i + 1], edges[i + 2]) for i in range(len(points))]


def _prune(y, points, max_pvalue, min_magnitude, min_segment) -> list[int]:
    points = sorted(points)
    while points:
        tests = [
            _passes(y[s:p], y[p:e], max_pvalue, min_magnitude, min_segment)
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


def _row_medians(rows: np.ndarray) -> np.ndarray:
    """The median of the values each row holds, NaN standing for none (np.nanmedian without its
    masked-array cost on short rows)."""
    ordered = np.sort(rows, axis=1)  # NaN sorts last
    count = np.sum(~np.isnan(rows), axis=1)
    at = np.arange(len(rows))
    return (ordered[at, (count - 1) // 2] + ordered[at, count // 2]) / 2


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
    # row j of `windows` is z[j - W : j] (NaN before the start): night i's left neighbours are
    # row i, its right ones row i + 1 + W; the median of those that exist
    pad = np.full(SPIKE_WINDOW, np.nan)
    windows = np.lib.stride_tricks.sliding_window_view(np.concatenate([pad, z, pad]), SPIKE_WINDOW)
    i = np.arange(1, len(z) - 1)
    left = z[i] - _row_medians(windows[i])
    right = z[i] - _row_medians(windows[i + 1 + SPIKE_WINDOW])
    mask[i] = (np.minimum(np.abs(left), np.abs(right)) > limit) & (left * right > 0)
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
        effect_interval(before, after)
        if len(before) >= 3 and len(after) >= 3
        else (math.nan, math.nan, "none")
    )
    z = _scale(y[start:end])
    first, last = posterior_date_set(z, point - start)
    return ChangePoint(
        index=point,
        index_lo=start + first,
        index_hi=start + last,
        n_before=len(before),
        n_after=len(after),
        mean_before=float(before.mean()),
        mean_after=float(after.mean()),
        magnitude=point_effect(before, after),
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
    persist: int = DEFAULT_PERSIST,
    persist_pvalue: float = PERSIST_PVALUE,
) -> list[ChangePoint]:
    """Change points of a series in run order (oldest first); ChangePoint.index counts every
    finite value, single-night spikes (`isolated_nights`) included, though they are not tested.

    A point is confirmed only when it has `confirm` runs after it and either its p is at most
    max_pvalue * FAST_CONFIRM_SHARE or it `persists` over the `persist` - 1 histories before
    this one (the same series without its last night, without its last two, ...): nightly use
    re-scans a growing history, and a point that stands in one scan only is mostly noise
    (docs/regressions.md §re-scans); otherwise it stays pending."""
    y = np.asarray(values, dtype=float)
    y = y[np.isfinite(y)]
    found = scan_once(y, min_magnitude, max_pvalue, min_segment, confirm, spike_sigmas)
    fast = max_pvalue * FAST_CONFIRM_SHARE
    return [
        replace(cp, status="pending")
        if cp.status == "confirmed"
        and not persists(y, cp, found, fast, persist, persist_pvalue, min_segment, spike_sigmas)
        else cp
        for cp in found
    ]


def persists(
    y: np.ndarray,
    point: ChangePoint,
    found: list[ChangePoint],
    fast: float,
    persist: int = DEFAULT_PERSIST,
    persist_pvalue: float = PERSIST_PVALUE,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    spike_sigmas: float = DEFAULT_SPIKE_SIGMAS,
) -> bool:
    """The persistence rule, shared by detect_change_points and the nightly re-scan replay
    (rescans.nightly_confirmations): a confirmed point of the scan of the finite values y
    (`found`: that scan's points) stands when its p is at most `fast`, or when in each of the
    `persist` - 1 histories one, two, ... nights shorter its segment (between its neighbours in
    `found`, spikes of y screened out, as the detector saw it) still has a split within
    PERSIST_WINDOW nights of it whose searched-split p is at most persist_pvalue, and it has at
    least PERSIST_MIN_BEFORE tested nights before it in its segment. The earlier
    histories are asked about this point only, at a looser level than the gate: a real change
    stays significant as nights are taken away, a false alarm of one scan mostly does not
    (docs/regressions.md §re-scans has the rules measured). Whatever its p, a point smaller
    than CONFIRM_MIN_MAGNITUDE either way does not stand (pending): the gate lets small false
    changes through where segments are long (docs/regressions.md, the ±2 nights target)."""
    if abs(point.magnitude) < CONFIRM_MIN_MAGNITUDE:
        return False
    if persist <= 1 or point.p_value <= fast:
        return True
    if point.n_before < PERSIST_MIN_BEFORE:
        return False
    kept = np.flatnonzero(~isolated_nights(y, spike_sigmas))
    z = _scale(y[kept])
    start = max((cp.index for cp in found if cp.index < point.index), default=0)
    end = min((cp.index for cp in found if cp.index > point.index), default=len(y))
    return all(
        _near_split_p(z, kept, start, min(end, len(y) - d), point.index, min_segment)
        <= persist_pvalue
        for d in range(1, persist)
    )


def _near_split_p(
    z: np.ndarray, at: np.ndarray, start: int, stop: int, index: int, min_segment: int
) -> float:
    """Searched-split p of the best split within PERSIST_WINDOW nights of `index` among the
    values z whose night `at` lies in [start, stop) (1 when no such split exists)."""
    inside = (at >= start) & (at < stop)
    seg, nights = z[inside], at[inside]
    if len(seg) < 2 * min_segment:
        return 1.0
    k, t = split_t(seg[None, :], min_segment)
    near = np.abs(nights[k] - index) <= PERSIST_WINDOW
    if not near.any():
        return 1.0
    return split_pvalue(float(t[0, near].max()), len(seg), min_segment)


def same_change(a: ChangePoint, b: ChangePoint) -> bool:
    """Whether two scans' points are one change: their 95 % date sets, widened by PERSIST_WINDOW
    nights, overlap (a later scan may date it a few nights apart)."""
    return max(a.index_lo, b.index_lo) - PERSIST_WINDOW <= min(a.index_hi, b.index_hi)


def scan_once(
    y: np.ndarray,
    min_magnitude: float = DEFAULT_MIN_MAGNITUDE,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    confirm: int = DEFAULT_CONFIRM,
    spike_sigmas: float = DEFAULT_SPIKE_SIGMAS,
) -> list[ChangePoint]:
    """One scan of the finite values y, without the persistence rule of detect_change_points."""
    kept = np.flatnonzero(~isolated_nights(y, spike_sigmas))
    return [
        replace(
            cp,
            index=int(kept[cp.index]),
            index_lo=int(kept[cp.index_lo]),
            index_hi=int(kept[cp.index_hi]),
        )
        for cp in _detect(y[kept], min_magnitude, max_pvalue, min_segment, confirm)
    ]


def searched_scan(y: np.ndarray, *args: float) -> list[ChangePoint]:
    """`scan_once` where the gate passes, else nothing: the points of one scan that the search
    found (what a later scan's point must have been seen among to persist); args as scan_once's
    after y."""
    max_pvalue, min_segment, spike_sigmas = args[1], int(args[2]), args[4]
    if len(y) < 2 * min_segment or not gate_passes(y, max_pvalue, min_segment, spike_sigmas):
        return []
    return scan_once(y, *args)


def series_pvalue(
    values: np.ndarray,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    spike_sigmas: float = DEFAULT_SPIKE_SIGMAS,
) -> float:
    """p of the best single split of a whole series (finite values, spikes screened out): the
    gate's p, which a series without a point brings to the q-values across series."""
    y = np.asarray(values, dtype=float)
    y = y[np.isfinite(y)]
    return _global_p(y[~isolated_nights(y, spike_sigmas)], min_segment)


def gate_passes(
    y: np.ndarray,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_segment: int = DEFAULT_MIN_SEGMENT,
    spike_sigmas: float = DEFAULT_SPIKE_SIGMAS,
) -> bool:
    """Whether the best single split of the finite values y (spikes screened out) is significant:
    without it `scan_once` confirms nothing (only a pending change in the last runs)."""
    kept = ~isolated_nights(y, spike_sigmas)
    return _global_p(y[kept], min_segment) <= max_pvalue


def _global_p(y: np.ndarray, min_segment: int) -> float:
    """p of the best single split of the whole series (1 when it is too short to split)."""
    if len(y) < 2 * min_segment:
        return 1.0
    _, t = split_t(_scale(y)[None, :], min_segment)
    return split_pvalue(float(t.max()), len(y), min_segment)


def _belongs_to_tail(y: np.ndarray, points: list[int], min_segment: int, confirm: int) -> bool:
    """Whether the last point only stands in for a change in the last runs: a segment must keep
    min_segment runs after its point, so a step 2-4 runs before the end is found at the earliest
    allowed split, reported confirmed and dated too early; allowed a split 2 runs before the end,
    the segment's least-squares split lies in the last `confirm` runs."""
    start = points[-2] if len(points) > 1 else 0
    where = _best_split(y, start, len(y), min_segment, min_after=2)
    return where is not None and where > points[-1] and len(y) - where < confirm


def _detect(y, min_magnitude, max_pvalue, min_segment, confirm) -> list[ChangePoint]:
    candidates = _candidates(y, min_segment) if _global_p(y, min_segment) <= max_pvalue else []
    points = _prune(y, candidates, max_pvalue, min_magnitude, min_segment)
    points = _prune(y, _refine(y, points, min_segment), max_pvalue, min_magnitude, min_segment)
    if points and _belongs_to_tail(y, points, min_segment, confirm):
        points = points[:-1]  # the tail test below judges it, as pending
    out = []
    tests = [
        _passes(y[s:p], y[p:e], max_pvalue, min_magnitude, min_segment)[1]
        for s, p, e in _segments(points, len(y))
    ]
    for i, ((s, p, e), pval) in enumerate(
        zip(_segments(_date(y, points, min_segment), len(y)), tests, strict=True)
    ):
        shift = float(np.median(y[p:e]) / np.median(y[s:p]) - 1)
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
        moved = float(np.min(np.abs(shifts))) >= min_magnitude
        ok = pval <= TAIL_PVALUE and every and moved
        if ok and (best is None or pval < best[1]):
            best = (len(y) - tail, pval, shift)
    if best is not None:
        out.append(_describe(y, last, best[0], len(y), best[1], best[2], "pending", seed=len(out)))
    return out
