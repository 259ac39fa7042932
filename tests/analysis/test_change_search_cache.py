"""The per-series change-point search cache (pipelines/analysis/changes/search_cache.py) and the
fit's skip of the whole-warehouse scan (segments.may_split): the same output with and without
them, and a cached search never reused for a series (or parameters, or switches) it was not
computed for."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from pipelines.analysis.changes import history, search_cache, split_null
from pipelines.analysis.changes.history import find_changes, search_series
from pipelines.analysis.changes.segments import (
    change_segments,
    may_split,
    segment_points,
    with_segments,
)
from pipelines.store import open_store
from tests.analysis.synthetic_runs import write_run


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(split_null.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(search_cache.CACHE_SWITCH_ENV, raising=False)
    return tmp_path / "cache"


def _stepped(n: int = 60, at: int = 40, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 1e8 * np.where(np.arange(n) >= at, 1.08, 1.0) * rng.normal(1, 0.01, n)


def _entries(kind: str) -> list:
    folder = search_cache.cache_dir(kind)
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _scan_text(scan) -> str:
    """A scan as text, NaN included (a dataclass with a NaN field never equals itself)."""
    return json.dumps(
        {
            "series": scan.series,
            "changes": [c.as_dict() for c in scan.changes],
            "spikes": [s.as_dict() for s in scan.spikes],
            "withdrawn": [w.as_dict() for w in scan.withdrawn],
            "untagged": scan.untagged_runs,
        },
        sort_keys=True,
        default=str,
    )


def test_a_cached_search_is_the_search(cache_dir, monkeypatch) -> None:
    y = _stepped()
    monkeypatch.setenv(search_cache.CACHE_SWITCH_ENV, "0")
    fresh = search_series(y, 0.03)
    assert not _entries("points")  # off: nothing written
    monkeypatch.delenv(search_cache.CACHE_SWITCH_ENV)
    cold = search_series(y, 0.03)
    assert len(_entries("points")) == 1
    assert fresh[0] and [p.as_dict() for p in cold[0]] == [p.as_dict() for p in fresh[0]]

    def searched(*_args, **_kwargs):
        raise AssertionError("searched again: the cached entry was not used")

    monkeypatch.setattr(history, "detect_change_points", searched)
    warm = search_series(y.copy(), 0.03)
    assert [p.as_dict() for p in warm[0]] == [p.as_dict() for p in fresh[0]]
    assert (np.isnan(warm[1]) and np.isnan(fresh[1])) or warm[1] == fresh[1]


@pytest.mark.parametrize(
    "change",
    ["one value", "one more night", "first night gone", "nights swapped", "magnitude", "switch"],
)
def test_a_cached_search_is_not_reused_once_the_series_changed(
    cache_dir, monkeypatch, change
) -> None:
    y = _stepped()
    search_series(y, 0.03)  # cached
    z, magnitude = y.copy(), 0.03
    if change == "one value":
        z[7] = np.nextafter(z[7], np.inf)  # one ulp
    elif change == "one more night":
        z = np.append(z, z[-1])
    elif change == "first night gone":
        z = z[1:]
    elif change == "nights swapped":
        z[[3, 4]] = z[[4, 3]]
    elif change == "magnitude":
        magnitude = 0.05
    else:  # a run-time switch of the search (say a dating trial) is part of the key
        monkeypatch.setenv("TRACEREPLAY_DATING_TRIAL", "1")
    calls = []

    def recorded(values, **kwargs):
        calls.append(len(values))
        return []

    monkeypatch.setattr(history, "detect_change_points", recorded)
    monkeypatch.setattr(history, "series_pvalue", lambda values: 0.5)
    assert search_series(z, magnitude) == ([], 0.5)
    assert calls == [len(z)]


def test_a_damaged_entry_is_searched_again(cache_dir) -> None:
    y = _stepped()
    first = search_series(y, 0.03)
    (entry,) = _entries("points")
    entry.write_text('{"points": [{"index": ')
    again = search_series(y, 0.03)
    assert [p.as_dict() for p in again[0]] == [p.as_dict() for p in first[0]]
    assert json.loads(entry.read_text())["points"]  # rewritten whole


@pytest.fixture(scope="module")
def nightly(tmp_path_factory):
    """30 nights of two configurations (b's slope 20 % higher from night 20) and three runs of a
    third, young one."""
    path = tmp_path_factory.mktemp("nightly") / "w.duckdb"
    con = open_store(path).open()
    rng = np.random.default_rng(2026)
    for night in range(30):
        b_ns = 20e6 * (1.2 if night >= 20 else 1.0)
        write_run(con, f"b-n{night:02d}", night, model="b", b_ns=b_ns, rng=rng, noise=0.01)
        write_run(con, f"a-n{night:02d}", night, model="a", rng=rng, noise=0.01)
    for night in range(3):
        write_run(con, f"c-n{night:02d}", night, model="c", rng=rng, noise=0.01)
    con.close()
    return path


def test_find_changes_is_the_same_without_cold_and_warm_cache(nightly, cache_dir, monkeypatch):
    with open_store(nightly).session(read_only=True) as con:
        monkeypatch.setenv(search_cache.CACHE_SWITCH_ENV, "0")
        off = _scan_text(find_changes(con))
        monkeypatch.delenv(search_cache.CACHE_SWITCH_ENV)
        cold = _scan_text(find_changes(con))
        assert _entries("points") and _entries("withdrawn")
        warm = _scan_text(find_changes(con))
    assert json.loads(off)["changes"]  # the step is found
    assert off == cold == warm


def test_the_fit_skips_the_scan_only_where_no_point_can_split(nightly, cache_dir) -> None:
    with open_store(nightly).session(read_only=True) as con:
        full = change_segments(con, find_changes(con, build=False, withdrawn=False).changes)
        assert full.height == 30  # b's runs, split at its change
        for model, splittable in (("a", True), ("b", True), ("c", False)):
            points = pl.DataFrame({"run_id": [f"{model}-n00", f"{model}-n02"], "x": [1, 2]})
            assert may_split(con, points) is splittable
            assert segment_points(con, points).equals(with_segments(points, full))
        assert not may_split(con, pl.DataFrame({"x": [1]}))  # table points: no runs
