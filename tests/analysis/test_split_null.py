"""The p of a change point found by searching every split
(pipelines.analysis.changes.split_null)."""

from __future__ import annotations

import itertools

import numpy as np
from scipy import stats

from pipelines.analysis.changes.split_null import split_pvalue, split_t


def test_split_t_is_the_pooled_two_sample_t_at_every_split() -> None:
    z = np.random.default_rng(0).normal(size=20)
    k, t = split_t(z[None, :], 5)
    assert list(k) == list(range(5, 16))
    for i, split in enumerate(k):
        want = stats.ttest_ind(z[split:], z[:split], equal_var=True).statistic
        assert np.isclose(t[0, i], abs(want))


def test_the_searched_p_holds_its_level_where_the_single_test_does_not() -> None:
    # fresh noise (other seeds than the simulated null): the share of 60-run series whose best
    # split reaches p <= 0.0025 is about 0.25 %; the single test's p <= 1e-4 at that split is
    # reached 20x more often than 1e-4
    z = np.random.default_rng(99).normal(size=(8000, 60))
    _, t = split_t(z, 5)
    best = t.max(axis=1)
    searched = sum(split_pvalue(float(b), 60, 5) <= 0.0025 for b in best)
    single = int((2 * stats.t.sf(best, 58) <= 1e-4).sum())
    assert 6 <= searched <= 40, searched  # measured: 23 of 8,000 (0.29 %)
    assert single >= 8, single  # >= 10x the nominal 0.8 at 1e-4; measured: 20 (25x)


def test_split_p_decreases_with_t_and_uses_the_bonferroni_bound_in_the_far_tail() -> None:
    ps = [split_pvalue(t, 60, 5) for t in (1.0, 2.5, 3.5, 4.1, 5.0, 8.0)]
    assert all(a >= b for a, b in itertools.pairwise(ps)) and ps[0] > 0.5
    assert ps[-1] <= 51 * 2 * stats.t.sf(8.0, 58)
    assert split_pvalue(3.0, 9, 5) == 1.0  # too short for any split with 5 runs a side


def test_the_null_is_kept_on_disk_and_read_back_identical(tmp_path, monkeypatch) -> None:
    from pipelines.analysis.changes import split_null

    monkeypatch.setenv(split_null.CACHE_ENV, str(tmp_path))
    split_null._null_max.cache_clear()
    first = split_null._null_max(30, 5)
    kept = split_null.null_cache_dir() / "L30-m5.npy"
    assert kept.is_file() and str(kept).startswith(str(tmp_path))
    assert np.array_equal(np.load(kept), split_null._simulated_null_max(30, 5))
    split_null._null_max.cache_clear()
    kept.write_bytes(b"\x93NUMPY damaged")  # not an array any more
    again = split_null._null_max(30, 5)
    assert np.array_equal(again, first)
    assert np.array_equal(np.load(kept), first)  # rewritten whole
    split_null._null_max.cache_clear()


def test_an_unwritable_cache_folder_costs_only_the_simulation(tmp_path, monkeypatch) -> None:
    from pipelines.analysis.changes import split_null

    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(split_null.CACHE_ENV, str(blocked))
    split_null._null_max.cache_clear()
    values = split_null._null_max(24, 5)
    assert np.array_equal(values, split_null._simulated_null_max(24, 5))
    assert split_pvalue(3.0, 24, 5) == split_pvalue(3.0, 24, 5)
    split_null._null_max.cache_clear()
