"""Interval-union lengths on integer nanoseconds (numpy, no Python loop per interval)."""

from __future__ import annotations

import numpy as np


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint, sorted [start, end) intervals covering the same points as the input.
    Intervals that touch (next start == previous end) merge."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if starts.size == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    e = np.maximum.accumulate(ends[order])
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > e[:-1]
    first = np.flatnonzero(new)
    last = np.append(first[1:] - 1, s.size - 1)
    return s[first], e[last]


def covered(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total length of the union of the intervals."""
    s, e = union(starts, ends)
    return int((e - s).sum())


def intersection(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    """Length of (union a) ∩ (union b): |A| + |B| - |A ∪ B|."""
    a_len = covered(*a)
    b_len = covered(*b)
    both = covered(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    return a_len + b_len - both


def difference(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    """Length of (union a) minus (union b)."""
    return covered(*a) - intersection(a, b)
