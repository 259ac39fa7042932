"""The bounded-memory (streamed) trace_view path gives the same rows as the in-memory one, on
real exports; the budget setting parses and is honoured."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines import memory_budget
from pipelines.ingest.load import ingest_paths
from pipelines.ingest.readers.trace_view import read_trace_view, streams
from pipelines.store import open_store

B1_RANK0 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
TRACE = "ASCEND_PROFILER_OUTPUT/trace_view.json"
TINY = 1  # one byte: every array-form trace streams


def _sorted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(frame.columns, nulls_last=True)


def test_parse_size() -> None:
    assert memory_budget.parse_size("2GiB") == 2 << 30
    assert memory_budget.parse_size("1500MB") == 1_500_000_000
    assert memory_budget.parse_size("512 mib") == 512 << 20
    assert memory_budget.parse_size("4096") == 4096
    for bad in ("two gigs", "-1GB", "0", "3 parsecs"):
        with pytest.raises(ValueError):
            memory_budget.parse_size(bad)


def test_budget_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(memory_budget.ENV_MAX_MEMORY, raising=False)
    assert memory_budget.max_memory() == memory_budget.DEFAULT_MAX_MEMORY
    monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, "300MB")
    assert memory_budget.max_memory() == 300_000_000
    assert memory_budget.max_memory("1GiB") == 1 << 30


def test_streamed_read_equals_in_memory_read(real_dir: Path) -> None:
    path = real_dir / B1_RANK0 / TRACE
    assert not streams(path, memory_budget.DEFAULT_MAX_MEMORY)
    assert streams(path, TINY)
    eager = read_trace_view(path)
    streamed = read_trace_view(path, max_memory=TINY)
    try:
        assert isinstance(eager.slices, pl.DataFrame)
        assert isinstance(streamed.slices, pl.LazyFrame)
        lazy_rows = streamed.slices.collect()
        assert lazy_rows.height == eager.slices.height > 4_000
        assert lazy_rows.schema == eager.slices.schema
        assert _sorted(lazy_rows).equals(_sorted(eager.slices))
        assert streamed.steps.equals(eager.steps)
        assert streamed.dropped == eager.dropped
        assert streamed.device_id == eager.device_id
        assert streamed.process_lanes == eager.process_lanes
        for lane in ("comm", "overlap"):
            assert _sorted(streamed.lane(lane)).equals(_sorted(eager.lane(lane).drop("args")))
    finally:
        memory_budget.release_spills()


# Polars' physical-plan graph colours a node that its streaming engine hands to the in-memory
# engine (which holds all of that node's input: every row of the trace, args included)
FALLBACK = 'fillcolor="0.0 0.3 1.0"'


def _fallbacks(plan: pl.LazyFrame) -> int:
    graph = plan.show_graph(engine="streaming", plan_stage="physical", raw_output=True)
    return graph.count(FALLBACK)


def test_streamed_slices_plan_has_no_in_memory_fallback(real_dir: Path) -> None:
    streamed = read_trace_view(real_dir / B1_RANK0 / TRACE, max_memory=TINY)
    try:
        assert _fallbacks(streamed.slices) == 0
        # the check can fail: a lookup by replace_strict, as the plan once had, is a fallback
        lookup = pl.col("lane").replace_strict({"host": "h"}, default="other")
        assert _fallbacks(streamed.slices.with_columns(lookup.alias("lane_code"))) == 1
    finally:
        memory_budget.release_spills()


def _counts(path: Path) -> dict[str, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = ("slices", "kernels", "comm_ops", "step_breakdown", "ranks")
        return {t: con.execute(f"select count(*) from {t}").fetchone()[0] for t in tables}
    finally:
        con.close()


def test_streamed_ingest_stores_the_same_rows(
    real_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rank = tmp_path / "run" / "rank0_ascend_pt"
    shutil.copytree(real_dir / B1_RANK0, rank)
    spill = tmp_path / "spill"
    monkeypatch.setenv(memory_budget.ENV_SPILL_DIR, str(spill))
    results = {}
    for label, budget in (("in_memory", "2GiB"), ("streamed", str(TINY))):
        monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, budget)
        db = tmp_path / f"{label}.duckdb"
        con = open_store(db).open()
        report = ingest_paths([rank], con, progress=False)
        con.close()
        assert report.ok, report.quarantined
        results[label] = _counts(db)
    assert results["streamed"] == results["in_memory"]
    assert results["streamed"]["slices"] > 4_000
    assert list(spill.iterdir()) == []  # the spill is gone once the run is written


def _with_long_string(real_dir: Path, tmp_path: Path, mib: int) -> Path:
    """The real Level1 trace_view.json with one event's args holding a string of `mib` MiB."""
    import json

    events = json.loads((real_dir / B1_RANK0 / TRACE).read_text())
    target = next(e for e in events if e.get("ph") == "X")
    target["args"] = {**target.get("args", {}), "Input Dims": "x" * (mib << 20)}
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps(events))
    return path


def test_a_value_too_large_for_the_budget_is_left_out_by_name(real_dir, tmp_path) -> None:
    """A 20 MiB string in one entry's args: read whole under a budget that holds it (same events
    as without it); under one that does not, the string alone is left out and named by byte and
    key, and every event loads (before: the file was quarantined too_large; earlier still, the
    retry read any entry up to 1 GiB whatever the budget: a 768 MiB string took 3.3 GB)."""
    from pipelines.ingest.readers.json_long_strings import LEFT_OUT
    from pipelines.ingest.readers.trace_view import big_entry_peak_bytes

    path = _with_long_string(real_dir, tmp_path, 20)
    small = 160 << 20
    assert big_entry_peak_bytes(path) > small  # the retry cannot fit: refused before reading
    plain = read_trace_view(real_dir / B1_RANK0 / TRACE, max_memory="2GiB")
    cut = read_trace_view(path, max_memory=small)
    slices = cut.slices.collect() if isinstance(cut.slices, pl.LazyFrame) else cut.slices
    assert slices.height == plain.slices.height > 0 and not cut.dropped
    assert "20.0 MiB (key 'Input Dims')" in cut.set_aside[0] and "--max-memory" in cut.set_aside[0]
    assert slices.filter(pl.col("args").str.contains(LEFT_OUT, literal=True)).height == 1
    view = read_trace_view(path, max_memory="2GiB")
    assert view.slices.height == plain.slices.height and not view.set_aside


def test_the_budget_is_per_run_each_rank_gets_what_the_others_left(
    real_dir, tmp_path, monkeypatch
) -> None:
    """Ranks read one after another: the second rank's trace is read under the budget minus
    what the first rank's frames hold, not under the whole budget again."""
    import pipelines.ingest.assemble as assemble
    import pipelines.ingest.readers.trace_view as trace_view

    monkeypatch.setattr(assemble, "RANK_READ_WORKERS", 1)  # one after another
    monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, "512MiB")
    seen: list[int] = []
    real_streams = trace_view.streams

    def recording(path, budget):
        seen.append(budget)
        return real_streams(path, budget)

    monkeypatch.setattr(trace_view, "streams", recording)
    folder = real_dir / "msinsight/test/data/pytorch/text/level1"
    (run,) = ingest_paths([folder], open_store(str(tmp_path / "w.duckdb")), progress=False).runs
    assert run.ranks == 2 and len(seen) == 2
    assert seen[0] == 512 << 20 and 0 < seen[0] - seen[1] < 256 << 20
    assert memory_budget.max_memory() == 512 << 20  # released once the run is written
