"""Interval primitives on integer nanoseconds: every interval is half-open, [start, end), int64.

Rules shared by every function here: intervals that touch (a start equal to the previous end)
merge; an interval with end <= start covers no time (end < start is read as end = start).
Everything is vectorised: no Python loop over intervals or groups.

One interval set (numpy arrays):
    union(starts, ends)            sorted, disjoint pieces of positive length, same time covered
    length(starts, ends)           total length of the union
    intersection(a, b)             |∪a ∩ ∪b|        (a, b: (starts, ends) pairs)
    difference(a, b)               |∪a − ∪b|

Many sets at once, one per integer group id (a step, a rank, a chunk):
    coverage(group, starts, ends, kinds)   each group's window [first start, last end) cut into
                                            elementary pieces, flagged by which kinds cover them;
                                            Coverage.runs / .totals turn flag combinations (unions,
                                            differences, gaps) into intervals or lengths per group
    union_by(frame, by), length_by(frame, by)   the same on a polars frame keyed by any columns

Windows:
    window_index(times, starts, ends)   which window [start, end) holds each time
    assign_steps(frame, steps)          (polars) the step whose window holds each row's start
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

Spans = tuple[np.ndarray, np.ndarray]
_NS = np.int64


def _spans(starts: np.ndarray, ends: np.ndarray) -> Spans:
    s = np.asarray(starts, dtype=_NS)
    return s, np.maximum(np.asarray(ends, dtype=_NS), s)


def union(starts: np.ndarray, ends: np.ndarray) -> Spans:
    """Sorted, disjoint pieces of positive length that cover the same time as the intervals."""
    s, e = _spans(starts, ends)
    keep = e > s
    s, e = s[keep], e[keep]
    if s.size == 0:
        return s, e
    order = np.argsort(s, kind="stable")
    s = s[order]
    reach = np.maximum.accumulate(e[order])
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return s[first], reach[last]


def length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of the union of the intervals."""
    s, e = union(starts, ends)
    return int((e - s).sum())


def intersection(a: Spans, b: Spans) -> int:
    """Length of (∪a) ∩ (∪b): |A| + |B| − |A ∪ B|."""
    both = length(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    return length(*a) + length(*b) - both


def difference(a: Spans, b: Spans) -> int:
    """Length of (∪a) − (∪b)."""
    return length(*a) - intersection(a, b)


def _by_group_then_time(groups: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An order that sorts by group, then time (ties in any order), and the groups in that order.
    Stable sorts: near-linear on the usual input, starts in time order followed by their ends."""
    low = groups.min()
    group = groups - low
    many = int(group.max()) + 1
    t_low = times.min()
    span = int(times.max()) - int(t_low) + 1
    half = group[: group.size // 2]  # the groups of the starts, in input order
    in_order = bool((half[1:] >= half[:-1]).all())
    if (many >= 2**16 or in_order) and many * span < 2**63:  # one int64 key: group, then time
        order = np.argsort(group * span + (times - t_low), kind="stable")
        return order, groups[order]
    order = np.argsort(times, kind="stable")
    key = group[order]
    if many < 2**16:
        key = key.astype(np.uint16)  # radix sort
    by_group = np.argsort(key, kind="stable")
    return order[by_group], key[by_group].astype(_NS) + low


@dataclass(frozen=True)
class Coverage:
    """Each group's window cut into maximal pieces of constant coverage, sorted by group then
    start.

    `groups` are the distinct group ids (ascending) with their windows [window_start,
    window_end) = [first start, last end) of the group's intervals, empty intervals included.
    Piece i is [start[i], end[i]) of group[i]; `kinds[name][i]` says whether an interval of that
    kind covers it. The pieces of a group tile its window: time covered by no interval (a gap)
    is a piece too."""

    groups: np.ndarray
    window_start: np.ndarray
    window_end: np.ndarray
    group: np.ndarray
    start: np.ndarray
    end: np.ndarray
    kinds: dict[str, np.ndarray]
    _firsts: np.ndarray = field(init=False, repr=False)  # first piece of each group with pieces
    _slots: np.ndarray = field(init=False, repr=False)  # ... and that group's index in `groups`

    def __post_init__(self) -> None:
        firsts = np.flatnonzero(np.r_[True, self.group[1:] != self.group[:-1]])
        firsts = firsts[: min(firsts.size, self.group.size)]
        object.__setattr__(self, "_firsts", firsts)
        object.__setattr__(self, "_slots", np.searchsorted(self.groups, self.group[firsts]))

    def runs(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pieces selected by `mask`, touching ones of a group merged: (group, start, end)."""
        g, s, e = self.group[mask], self.start[mask], self.end[mask]
        if g.size == 0:
            return g, s, e
        new = np.empty(g.size, dtype=bool)
        new[0] = True
        new[1:] = (s[1:] != e[:-1]) | (g[1:] != g[:-1])
        first = np.flatnonzero(new)
        last = np.append(first[1:] - 1, g.size - 1)
        return g[first], s[first], e[last]

    def totals(self, mask: np.ndarray) -> np.ndarray:
        """Length of the pieces selected by `mask`, per group (aligned with `groups`)."""
        out = np.zeros(self.groups.size, dtype=_NS)
        if self.group.size:
            lengths = np.where(mask, self.end - self.start, 0)
            out[self._slots] = np.add.reduceat(lengths, self._firsts)
        return out


def coverage(
    group: np.ndarray, starts: np.ndarray, ends: np.ndarray, kinds: Mapping[str, np.ndarray]
) -> Coverage:
    """Sweep every group's intervals at once. `group`: integer id per interval; `kinds`: name ->
    boolean mask over the intervals (an interval may belong to several kinds or none; it still
    shapes its group's window)."""
    s, e = _spans(starts, ends)
    g = np.asarray(group, dtype=_NS)
    n = g.size
    if n == 0:
        empty = np.zeros(0, dtype=_NS)
        return Coverage(empty, empty, empty, empty, empty, empty, {k: empty > 0 for k in kinds})
    times = np.concatenate([s, e])
    if g.min() == g.max():  # one group: sort by time only
        order = np.argsort(times, kind="stable")
        times = times[order]
        groups = np.full(2 * n, g[0])
        firsts = np.zeros(1, dtype=np.intp)
        keep = times[1:] > times[:-1]
    else:
        order, groups = _by_group_then_time(np.concatenate([g, g]), times)
        times = times[order]
        firsts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        keep = (groups[:-1] == groups[1:]) & (times[1:] > times[:-1])
    lasts = np.append(firsts[1:] - 1, 2 * n - 1)
    is_start = order < n
    item = np.where(is_start, order, order - n)
    sign = np.where(is_start, 1, -1).astype(np.int8)
    depth_type = np.int32 if 2 * n < 2**31 else _NS
    flags = []
    for member in kinds.values():
        # +1 at a start, -1 at an end: the deltas of every group sum to zero, so one running sum
        # restarts at 0 per group
        delta = np.asarray(member, dtype=bool)[item] * sign
        flags.append((np.cumsum(delta, dtype=depth_type)[:-1] > 0)[keep])
    group_of, start, end = groups[:-1][keep], times[:-1][keep], times[1:][keep]
    # elementary pieces of a group touch: merge neighbours with the same coverage
    # (none at all when every interval has zero length: the windows still count)
    new = np.r_[True, group_of[1:] != group_of[:-1]][: group_of.size]
    for flag in flags:
        new[1:] |= flag[1:] != flag[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, new.size - 1)[: first.size]
    return Coverage(
        groups=groups[firsts],
        window_start=times[firsts],
        window_end=times[lasts],
        group=group_of[first],
        start=start[first],
        end=end[last],
        kinds={name: flag[first] for name, flag in zip(kinds, flags, strict=True)},
    )


def group_ids(frame: pl.DataFrame, by: Sequence[str]) -> tuple[np.ndarray, pl.DataFrame]:
    """Dense group ids (in key order, null keys a group of their own) of the rows of `frame`
    keyed by the columns `by`, and the keys: one row per id, ascending."""
    if len(by) == 1:  # plain rank: faster than a struct's; nulls (rank null) first, as there
        column = pl.col(by[0])
        nulls = frame.get_column(by[0]).null_count() > 0
        rank = column.rank("dense").cast(pl.Int64) - (0 if nulls else 1)
        ids = frame.select(rank.fill_null(0).alias("_id"))
    else:
        ids = frame.select(pl.struct(list(by)).rank("dense").cast(pl.Int64).alias("_id") - 1)
    keys = (
        frame.select(*by)
        .with_columns(ids.to_series())
        .unique("_id", keep="any")
        .sort("_id")
        .drop("_id")
    )
    return ids.to_series().to_numpy(), keys


def _keyed(
    frame: pl.DataFrame, by: str | Sequence[str], start: str, end: str
) -> tuple[pl.DataFrame, Coverage]:
    ids, key_rows = group_ids(frame, [by] if isinstance(by, str) else list(by))
    # a row with a null start or end covers nothing (its key still counts)
    s = pl.col(start).cast(pl.Int64).fill_null(0)
    e = pl.col(end).cast(pl.Int64)
    missing = pl.col(start).is_null() | e.is_null()
    bounds = frame.select(s.alias("s"), pl.when(missing).then(s).otherwise(e).alias("e"))
    cov = coverage(
        ids,
        bounds.get_column("s").to_numpy(),
        bounds.get_column("e").to_numpy(),
        {"any": np.ones(frame.height, dtype=bool)},
    )
    return key_rows, cov


def union_by(
    frame: pl.DataFrame,
    by: str | Sequence[str] = "group",
    *,
    start: str = "start_ns",
    end: str = "end_ns",
) -> pl.DataFrame:
    """Union of the intervals of each key: columns `by`, start_ns, end_ns, sorted by key (nulls
    first) then start."""
    key_rows, cov = _keyed(frame, by, start, end)
    g, s, e = cov.runs(cov.kinds["any"])
    return key_rows.select(pl.all().gather(g)).with_columns(
        pl.Series("start_ns", s), pl.Series("end_ns", e)
    )


def length_by(
    frame: pl.DataFrame,
    by: str | Sequence[str],
    *,
    start: str = "start_ns",
    end: str = "end_ns",
    name: str = "busy_ns",
) -> pl.DataFrame:
    """Length of the union of the intervals of each key: columns `by` and `name` (every key of
    the frame has a row, 0 when its intervals are empty)."""
    key_rows, cov = _keyed(frame, by, start, end)
    busy = pl.Series(name, cov.totals(cov.kinds["any"]))
    return key_rows.select(pl.all().gather(cov.groups)).with_columns(busy)


def window_index(times: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the window holding each time: the latest window (`starts` ascending) that starts
    at or before it, if the time is before that window's end; -1 otherwise."""
    t = np.asarray(times, dtype=_NS)
    if len(starts) == 0:
        return np.full(t.size, -1, dtype=np.intp)
    index = np.searchsorted(np.asarray(starts, dtype=_NS), t, side="right") - 1
    inside = (index >= 0) & (t < np.asarray(ends, dtype=_NS)[np.clip(index, 0, None)])
    return np.where(inside, index, -1)


def assign_steps(frame: pl.DataFrame, steps: pl.DataFrame, *, at: str = "start_ns") -> pl.DataFrame:
    """`frame` with its Int32 `step` column (re)placed last: the step whose window [start_ns,
    end_ns) of `steps` holds `frame[at]`, null outside every window and where `at` is null.
    A binary search over the (few) windows; the big frame is never sorted."""
    base = frame.drop("step", strict=False)
    if steps.is_empty() or frame.is_empty():
        return base.with_columns(pl.lit(None, dtype=pl.Int32).alias("step"))
    windows = steps.sort("start_ns", maintain_order=True)
    times = base.get_column(at).cast(pl.Int64).fill_null(np.iinfo(np.int64).min).to_numpy()
    index = window_index(times, windows["start_ns"].to_numpy(), windows["end_ns"].to_numpy())
    numbers = windows.get_column("step").cast(pl.Int32).to_numpy()
    step = pl.Series("step", numbers[np.clip(index, 0, None)], dtype=pl.Int32)
    return base.with_columns(pl.when(pl.Series(index >= 0)).then(step).alias("step"))
