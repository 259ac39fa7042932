"""pipelines/vocabulary/intervals.py against a one-point-per-ns bitmap on random interval sets."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipelines.vocabulary.intervals import (
    assign_steps,
    coverage,
    difference,
    length_by,
    union,
    union_by,
)


def _bitmap(starts: np.ndarray, ends: np.ndarray, size: int) -> np.ndarray:
    mask = np.zeros(size, dtype=bool)
    for s, e in zip(starts, ends, strict=True):
        mask[s:e] = True
    return mask


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True))


@pytest.mark.parametrize("seed", range(6))
def test_coverage_runs_and_totals_match_a_bitmap_per_group(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 40
    group = rng.choice([3, 5, 9], n)
    starts = rng.integers(0, 150, n)
    ends = starts + rng.integers(0, 25, n)  # empty intervals included
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.4
    cov = coverage(group, starts, ends, {"a": a, "b": b})
    assert cov.groups.tolist() == sorted(set(group.tolist()))
    for i, g in enumerate(cov.groups):
        own = group == g
        bits_a = _bitmap(starts[own & a], ends[own & a], 200)
        bits_b = _bitmap(starts[own & b], ends[own & b], 200)
        lo, hi = starts[own].min(), ends[own].max()
        assert (cov.window_start[i], cov.window_end[i]) == (lo, hi)
        inside = np.zeros(200, dtype=bool)
        inside[lo:hi] = True
        only_a = cov.kinds["a"] & ~cov.kinds["b"]
        gap = ~cov.kinds["a"] & ~cov.kinds["b"]
        assert cov.totals(only_a)[i] == (bits_a & ~bits_b).sum()
        assert cov.totals(gap)[i] == (inside & ~bits_a & ~bits_b).sum()
        g_runs, s_runs, e_runs = cov.runs(only_a)
        mine = g_runs == g
        assert list(zip(s_runs[mine].tolist(), e_runs[mine].tolist(), strict=True)) == _runs(
            bits_a & ~bits_b
        )
    s, e = union(starts[a], ends[a])
    assert list(zip(s.tolist(), e.tolist(), strict=True)) == _runs(_bitmap(starts[a], ends[a], 200))
    assert (
        difference((starts[a], ends[a]), (starts[b], ends[b]))
        == (_bitmap(starts[a], ends[a], 200) & ~_bitmap(starts[b], ends[b], 200)).sum()
    )


def test_keyed_union_and_length_keep_null_keys_and_empty_groups() -> None:
    frame = pl.DataFrame(
        {
            "rank": [0, 0, 0, 1, 1, None],
            "req": ["a", "a", "b", "a", "a", "a"],
            "start_ns": [0, 5, 3, 7, 9, 1],
            "end_ns": [5, 8, 3, 7, None, 4],  # touching, empty, empty, null end
        },
        schema_overrides={"rank": pl.Int32},
    )
    lengths = length_by(frame, ["rank", "req"]).sort("rank", "req", nulls_last=True)
    assert lengths.rows() == [(0, "a", 8), (0, "b", 0), (1, "a", 0), (None, "a", 3)]
    assert union_by(frame, ["rank", "req"]).rows() == [(None, "a", 1, 4), (0, "a", 0, 8)]


def test_assign_steps_leaves_null_times_and_gaps_without_a_step() -> None:
    steps = pl.DataFrame({"step": [2, 1], "start_ns": [10, 0], "end_ns": [20, 8]})
    frame = pl.DataFrame({"step": [7, 7, 7, 7], "start_ns": [0, 8, None, 19], "x": [1, 2, 3, 4]})
    out = assign_steps(frame, steps)
    assert out.columns == ["start_ns", "x", "step"]
    assert out.get_column("step").to_list() == [1, None, None, 2]
