"""A run's later ranks under what the earlier ones left of the budget (docs/bench_ingest.md "A
late rank's streamed read"): the held bytes follow the process's growth, a streamed read fits
DuckDB's 64 MiB floor, and running out of memory is named as that, not as a large entry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipelines import memory_budget
from pipelines.bench.generate import generate_rank
from pipelines.ingest import assemble
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers import trace_view as tv
from pipelines.store import open_store

LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"


@pytest.fixture(scope="module")
def trace_36mb(real_dir: Path, tmp_path_factory) -> Path:
    """36 MB of the real level1 export's events: streamed under a 256 MB budget (its in-memory
    read is expected to need 1.6 x 36 MB + the interpreter)."""
    root = tmp_path_factory.mktemp("trace36")
    return generate_rank(root, 36, real_dir / LEVEL1).trace_path


def test_a_streamed_read_fits_duckdbs_floor(trace_36mb: Path) -> None:
    assert memory_budget.duckdb_limit_mib(256 * 10**6) == 64  # the floor
    memory = tv.read_trace_view(trace_36mb, max_memory="64GiB").slices
    streamed = tv.read_trace_view(trace_36mb, max_memory="256MB").slices
    assert isinstance(streamed, pl.LazyFrame)
    assert streamed.collect().equals(memory)  # every slice, in file order
    assert tv.spill_group_rows(64) == 12_710 and tv.spill_group_rows(512) == 100_000


def test_out_of_memory_is_named_as_such(trace_36mb: Path, monkeypatch) -> None:
    """Row groups of 100,000 rows (what the spill used) do not fit 64 MiB: DuckDB's Out of
    Memory was reported as 'one entry of the trace is larger than 16 MiB'."""
    monkeypatch.setattr(tv, "spill_group_rows", lambda share: 100_000)
    with pytest.raises(QuarantineError) as caught:
        tv.read_trace_view(trace_36mb, max_memory="256MB")
    assert caught.value.reason == "too_large"
    assert "DuckDB's share of the ingest memory budget (64 MiB" in caught.value.detail
    assert "larger than" not in caught.value.detail


def _ranks(real_dir: Path, root: Path, count: int) -> Path:
    """`count` rank folders of one run, each the real level1 rank 0 export under its own rank."""
    source = real_dir / LEVEL1
    run = root / "run"
    for rank in range(count):
        folder = run / f"rank{rank}_ascend_pt"
        shutil.copytree(source, folder)
        info = json.loads((folder / "profiler_info_0.json").read_text())
        info["rank_id"] = rank
        (folder / "profiler_info_0.json").unlink()
        (folder / f"profiler_info_{rank}.json").write_text(json.dumps(info))
    return run


def test_later_ranks_get_what_the_process_left(real_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """Three ranks read one after another under 400 MB, the process growing by 100 MB a rank
    (what 150 MB ranks did: +180 MB resident against 77 MB of estimated frame sizes): the third
    rank is left 200 MB, less than its in-memory read's expected peak, and streams. Counted by
    the frames' sizes alone (~2 MB a rank here) all three were read in memory."""
    from pipelines.ingest.load import ingest_paths

    run = _ranks(real_dir, tmp_path, 3)
    monkeypatch.setattr(assemble, "PARALLEL_RANKS_MAX_SHARE", 10**9)  # one rank at a time
    monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, "400MB")
    grown = iter(range(0, 10**4, 100))
    monkeypatch.setattr(memory_budget, "resident_bytes", lambda: next(grown) * 10**6)
    decisions: list[tuple[int, bool]] = []
    streams = tv.streams

    def spy(path: Path, budget: int) -> bool:
        decisions.append((budget // 10**6, streams(path, budget)))
        return decisions[-1][1]

    monkeypatch.setattr(tv, "streams", spy)
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        report = ingest_paths([run], con, progress=False)
    finally:
        con.close()
    assert not report.quarantined and report.runs[0].ranks == 3
    assert [d[1] for d in decisions] == [False, False, True]
    assert [d[0] for d in decisions] == [400, 300, 200]
    trace = real_dir / LEVEL1 / "ASCEND_PROFILER_OUTPUT/trace_view.json"
    complete = sum(1 for event in json.loads(trace.read_text()) if event.get("ph") == "X")
    assert report.runs[0].events == 3 * complete  # every rank whole, streamed or not


def test_a_runs_rows_are_written_under_duckdbs_share(
    real_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    """The in-memory frames' insert runs under DuckDB's share of the budget, as the streamed
    one did: 4 ranks of 150 MB at 1 GiB peaked at 1,440 MB in the write without it, 1,117 MB
    with it (docs/bench_ingest.md)."""
    from pipelines.ingest.load import ingest_paths
    from pipelines.store import catalog, duckdb_file

    limits: list[str] = []
    insert = duckdb_file.insert_frame

    def spy(con, table, frame):
        limits.append(catalog.setting(con, "memory_limit"))
        return insert(con, table, frame)

    monkeypatch.setattr(duckdb_file, "insert_frame", spy)
    monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, "1GiB")
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        report = ingest_paths([real_dir / LEVEL1], con, progress=False)
        after = catalog.setting(con, "memory_limit")
    finally:
        con.close()
    assert not report.quarantined and limits
    # a quarter of 1 GiB less what the run's frames hold
    assert all(limit.endswith(" MiB") and 200 < float(limit.split()[0]) <= 256 for limit in limits)
    assert after not in limits  # set back after the write
