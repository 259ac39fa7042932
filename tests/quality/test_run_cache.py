"""Each run's GX verdicts kept on disk (pipelines/quality/run_cache.py): the same verdicts as
validating every suite whole, and never reused once the run's rows, the suite or the code
changed."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import duckdb
import pytest

from pipelines.quality import checks, run_cache
from pipelines.quality.check_catalog import Kind
from pipelines.quality.check_queries import select_runs
from pipelines.quality.checks import CheckReport, run_checks
from pipelines.quality.suite_files import suite_files
from pipelines.store import open_store

from .test_expectations import _clean

PER_RUN = {"runs", "run_inputs", "ranks", "slices", "kernels", "comm_ops", "step_breakdown"}
ENTRIES = 3 * 6 + 2
"""Runs with rows in a per-run suite's batch: r1, r2, r3 in six suites, r1 alone in run_inputs
and chunks (the three_runs fixture)."""
TABLES = sorted(PER_RUN | {"chunks"})


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TRACEREPLAY_CACHE_DIR", str(folder))
    monkeypatch.delenv(run_cache.CHECK_CACHE_ENV, raising=False)
    return folder


@pytest.fixture
def three_runs(tmp_path) -> duckdb.DuckDBPyConnection:
    con = open_store(tmp_path / "warehouse.duckdb").open()
    _clean(con)
    for shift, run in enumerate(("r2", "r3"), start=1):
        # each copy its own measurement: its own bytes, and kernels 1-2 ns later than r1's
        # (the same kernels under two content hashes fail runs.same_device_work_once)
        own = {
            "runs": f", sha256(content_hash || '{run}') as content_hash",
            "kernels": f", start_ns + {shift} as start_ns",
        }
        for table in ("runs", "ranks", "slices", "kernels", "comm_ops", "step_breakdown"):
            con.execute(
                f"insert into {table} select * replace ('{run}' as run_id{own.get(table, '')})"
                f" from {table} where run_id = 'r1'"
            )
    yield con
    con.close()


def _verdicts(report: CheckReport) -> list[tuple]:
    return [(r.expectation.key, r.passed, r.failing, r.example_dicts()) for r in report.results]


def _by_key(report: CheckReport) -> dict[str, checks.CheckResult]:
    return {r.expectation.key: r for r in report.results}


def _entries(folder: Path) -> set[Path]:
    return set(folder.rglob("*.json"))


def test_which_suites_are_judged_run_by_run() -> None:
    suites = {s.name: s for s in suite_files()}
    assert {n for n, s in suites.items() if run_cache.splits_by_run(s)} == PER_RUN | {"chunks"}
    slices = suites["slices"]
    for change, splits in (
        ({"mostly": 0.99}, False),  # a fraction of the whole batch
        ({"column_list": ["rank", "event_hash"]}, False),  # unique across runs
        ({}, True),
    ):
        data = json.loads(json.dumps(slices.data))
        item = next(e for e in data["expectations"] if e["meta"]["check"] == "no_duplicated_events")
        item["kwargs"].update(change)
        assert run_cache.splits_by_run(dataclasses.replace(slices, data=data)) is splits
    assert not run_cache.splits_by_run(suites["run_inputs_per_path"])  # across runs


def test_cached_verdicts_are_the_whole_validation_verdicts(three_runs, own_cache) -> None:
    """Breaks in two runs, several expectations of one check broken (step_breakdown's
    components): off, cold and warm give the same verdicts, counts and examples; warm validates
    none of the per-run suites again."""
    con = three_runs
    con.execute("update slices set dur_ns = -5 where run_id = 'r1' and rank = 1")
    con.execute("insert into slices select * from slices where run_id = 'r3' and rank = 0")
    con.execute("update kernels set wait_ns = -1 where run_id = 'r3'")
    con.execute(
        "update step_breakdown set computing_ns = -1, free_ns = -7 where run_id in ('r1', 'r3')"
    )
    off = run_checks(con, tables=TABLES, use_cache=False)
    cold = run_checks(con, tables=TABLES, use_cache=True)
    entries = _entries(own_cache)
    warm = run_checks(con, tables=TABLES, use_cache=True)
    assert not off.ok
    assert _verdicts(cold) == _verdicts(off) == _verdicts(warm)
    assert len(entries) == ENTRIES and _entries(own_cache) == entries
    validated = {r.meta["active_batch_definition"]["data_asset_name"] for r in warm.gx_results}
    assert not validated & (PER_RUN | {f"{n}-by-run" for n in PER_RUN})
    found = _by_key(warm)
    assert found["slices.no_duplicated_events"].failing == 2
    assert found["step_breakdown.non_negative_components"].failing == 4
    components = found["step_breakdown.non_negative_components"].example_dicts()
    assert {e["run_id"] for e in components} == {"r1", "r3"}


@pytest.mark.parametrize(
    "plant",
    [
        "insert into slices select * from slices where run_id = 'r2' and rank = 1",
        "update slices set dur_ns = -1 where run_id = 'r2' and rank = 0",
        "insert into kernels select * from kernels where run_id = 'r2'",
        "insert into ranks select * from ranks where run_id = 'r2' and rank = 0",
    ],
    ids=["duplicate slice", "negative duration", "kernel written twice", "rank twice"],
)
def test_a_row_planted_in_a_cached_run_still_fails(three_runs, own_cache, plant) -> None:
    """The cache holds every run's pass; a bad row planted afterwards in a cached run (the run's
    input bytes and content hash unchanged) is found: the key is the run's rows themselves."""
    con = three_runs
    assert run_checks(con, tables=TABLES, use_cache=True).ok
    assert len(_entries(own_cache)) == ENTRIES
    con.execute(plant)
    warm = run_checks(con, tables=TABLES, use_cache=True)
    off = run_checks(con, tables=TABLES, use_cache=False)
    assert _verdicts(warm) == _verdicts(off)
    assert not off.ok and not warm.ok
    broken = [r for r in warm.results if not r.passed]
    assert any(r.expectation.kind is Kind.GX and r.expectation.table in PER_RUN for r in broken)
    assert all({e.get("run_id") for e in r.example_dicts()} <= {"r2", None} for r in broken)


def test_a_changed_suite_is_not_served_from_the_cache(three_runs, monkeypatch) -> None:
    """The suites' verdicts kept, then the slices suite changed so that the same rows break it
    (the lane set without 'compute'): the check fails."""
    con = three_runs
    assert run_checks(con, tables=["slices"], use_cache=True).ok
    changed = []
    for suite in suite_files():
        if suite.name == "slices":
            data = json.loads(json.dumps(suite.data))
            lanes = next(e for e in data["expectations"] if e["meta"]["check"] == "lane_known")
            lanes["kwargs"]["value_set"].remove("compute")
            suite = dataclasses.replace(suite, data=data)
        changed.append(suite)
    monkeypatch.setattr(checks, "suite_files", lambda: tuple(changed))
    report = run_checks(con, tables=["slices"], use_cache=True)
    assert not _by_key(report)["slices.lane_known"].passed
    assert _by_key(report)["slices.lane_known"].failing == 6


def test_changed_code_or_sample_size_is_a_new_key(three_runs, own_cache, monkeypatch) -> None:
    con = three_runs
    run_checks(con, tables=TABLES, use_cache=True)
    first = _entries(own_cache)
    run_checks(con, tables=TABLES, use_cache=True, sample_rows=3)  # examples kept: a new key
    second = _entries(own_cache)
    assert len(second) == 2 * len(first)
    monkeypatch.setattr(run_cache, "check_code_signature", lambda: "another version")
    report = run_checks(con, tables=TABLES, use_cache=True)
    assert len(_entries(own_cache)) == 3 * len(first)
    validated = {r.meta["active_batch_definition"]["data_asset_name"] for r in report.gx_results}
    assert {f"{n}-by-run" for n in PER_RUN} <= validated


def test_the_cache_switch_turns_it_off(three_runs, own_cache, monkeypatch) -> None:
    monkeypatch.setenv(run_cache.CHECK_CACHE_ENV, "0")
    run_checks(three_runs, tables=["slices"])
    assert not _entries(own_cache)


def test_fingerprints_ignore_order_and_see_one_value(three_runs) -> None:
    con = three_runs
    select_runs(con, None)
    slices = next(s for s in suite_files() if s.name == "slices")
    assert "order by" not in run_cache._unordered(slices.batch_query()).lower()
    assert run_cache._unordered("select 1 as a order by a limit 1").endswith("limit 1")
    before = run_cache.run_fingerprints(con, slices)
    ordered = con.execute(
        "select b.run_id, count(*), sum(hash(b)::hugeint)::varchar, bit_xor(hash(b))"
        f" from ({slices.batch_query()}) b group by b.run_id"
    ).fetchall()
    assert before == {r: f"{n}:{s}:{x}" for r, n, s, x in ordered}
    con.execute("update slices set start_ns = start_ns + 1 where run_id = 'r2' and rank = 1")
    after = run_cache.run_fingerprints(con, slices)
    assert [r for r in before if before[r] != after[r]] == ["r2"]
