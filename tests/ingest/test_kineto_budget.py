"""A Kineto trace is read as a stream (issue 36 item 6): the file is never held whole, its event
frames spill to Parquet past the memory budget's share, and only what cannot fit is refused:
one entry past the size one entry may take (set aside alone, at its position), or text outside
traceEvents past it (a .gz that inflates to gigabytes of spaces)."""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines import memory_budget
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.readers import kineto
from pipelines.ingest.readers.kineto import read_trace

SAMPLED = "kineto/HolisticTraceAnalysis/tests/data/trace_filter/sampled_rank-0.json.gz"
EVENT = b'{"ph":"X","name":"k","cat":"kernel","pid":0,"tid":7,"ts":1,"dur":2}'


def _sorted(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    frame = frame.collect() if isinstance(frame, pl.LazyFrame) else frame
    return frame.sort(frame.columns, nulls_last=True)


def test_spilled_events_read_as_the_trace_in_memory(
    real_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTA's sampled trace with its frames spilled after every batch of 997 events: every table
    holds the rows of the in-memory read (the slices a LazyFrame over the spill)."""
    path = real_dir / SAMPLED
    whole = read_trace(path)
    assert isinstance(whole.tables["slices"], pl.DataFrame)
    monkeypatch.setattr(kineto, "EVENT_BATCH", 997)
    monkeypatch.setattr(kineto, "SPILL_SHARE", 1 << 40)  # a limit of 0 bytes: spill at once
    spilled = read_trace(path)
    for name, table in whole.tables.items():
        assert table.height > 0 or name == "comm_ops", name
    _same_read(spilled, whole)


def _same_read(spilled, whole) -> None:
    """A spilled read (slices a LazyFrame over the spill) holds every table's rows of the
    in-memory read, and the same info, rank, device and drop counts."""
    assert isinstance(spilled.tables["slices"], pl.LazyFrame)
    assert sorted(spilled.tables) == sorted(whole.tables)
    for name, table in whole.tables.items():
        assert_frame_equal(_sorted(spilled.tables[name]), _sorted(table), check_row_order=True)
    assert (spilled.info, spilled.rank, spilled.device_id, spilled.dropped) == (
        whole.info,
        whole.rank,
        whole.device_id,
        whole.dropped,
    )


DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver"}


def test_a_spilled_cpu_only_trace_reads_as_in_memory(
    real_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CPU-only trace (metadata compute_device=cpu: a `tracereplay workload` rank, a gloo
    rank) that spills is read from the spill like a GPU trace: its outermost cpu_ops found from
    four columns, only they collected. The spill was collected whole before (a 1,000 MB CPU-only
    trace peaked at 4.1 GB under the 2 GiB budget, docs/bench_ingest.md). The trace: HTA's
    sampled trace (a real PyTorch profile) with its device events left out and its metadata
    saying compute_device=cpu, the host side of a real run as a CPU-only rank."""
    with gzip.open(real_dir / SAMPLED) as stream:
        trace = msgspec.json.decode(stream.read())
    trace["traceEvents"] = [
        e for e in trace["traceEvents"] if str(e.get("cat", "")).lower() not in DEVICE_CATEGORIES
    ]
    trace["compute_device"] = "cpu"
    path = tmp_path / "rank0.pt.trace.json"
    path.write_bytes(msgspec.json.encode(trace))
    whole = read_trace(path)
    assert isinstance(whole.tables["slices"], pl.DataFrame)
    compute = whole.tables["slices"].filter(pl.col("lane") == "compute").height
    assert compute > 0 and whole.tables["kernels"].height == compute
    monkeypatch.setattr(kineto, "EVENT_BATCH", 997)
    monkeypatch.setattr(kineto, "SPILL_SHARE", 1 << 40)  # a limit of 0 bytes: spill at once
    _same_read(read_trace(path), whole)


def test_spilled_events_keep_the_bad_entries_positions(
    real_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sampled trace with a null entry, a null name, a copy of a kernel, a negative duration
    and a B/E pair: spilled or not, the same rows are kept, dropped and named by position."""
    with gzip.open(real_dir / SAMPLED) as stream:
        trace = msgspec.json.decode(stream.read())
    events = trace["traceEvents"]
    host = next(i for i in range(100, len(events)) if events[i].get("cat") == "cpu_op")
    begin = {k: v for k, v in events[host].items() if k != "dur"} | {"ph": "B"}
    end = {"ph": "E", "pid": begin["pid"], "tid": begin["tid"], "ts": begin["ts"] + 3}
    events[host : host + 1] = [begin, end]  # a B/E pair: a complete event of 3 us
    kernel = next(i for i in range(2000, len(events)) if events[i].get("cat") == "kernel")
    events.insert(kernel + 1, dict(events[kernel]))
    events[1000]["name"] = None
    slow = next(i for i in range(3000, len(events)) if events[i].get("ph") == "X")
    events[slow]["dur"] = -5
    entries = [msgspec.json.encode(e) for e in events]
    entries[7] = b"null"
    trace["traceEvents"] = []
    head = msgspec.json.encode(trace)[: -len(b"[]}")]
    path = tmp_path / "rank-0.json"
    path.write_bytes(head + b"[" + b",".join(entries) + b"]}")
    whole = read_trace(path)
    monkeypatch.setattr(kineto, "EVENT_BATCH", 1500)
    monkeypatch.setattr(kineto, "SPILL_SHARE", 1 << 40)
    spilled = read_trace(path)
    assert isinstance(spilled.tables["slices"], pl.LazyFrame)
    assert (
        spilled.dropped
        == whole.dropped
        == {
            "duplicate_row": 1,
            "invalid_event": 2,
            "negative_duration": 1,
        }
    )
    assert spilled.quarantined == whole.quarantined
    detail = spilled.quarantined[0].detail
    assert "traceEvents[7]: Expected `object`, got `null`" in detail
    assert "traceEvents[1000]:" in detail
    for name, table in whole.tables.items():
        assert_frame_equal(_sorted(spilled.tables[name]), _sorted(table))
    paired = whole.tables["slices"].filter(
        (pl.col("name") == begin["name"]) & (pl.col("dur_ns") == 3000)
    )
    assert paired.height == 1


def test_a_gz_inflating_past_the_old_cap_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a 220 MiB budget the reader refused (too_large) any trace past ~6 MB of JSON; a
    gzip that inflates to 12 MB of kernels is now read whole, in blocks, its frames spilled."""
    monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, "220MiB")
    monkeypatch.setattr(kineto, "STREAM_BLOCK", 1 << 20)
    count = 12_000_000 // len(EVENT)
    events = [EVENT.replace(b'"ts":1,', f'"ts":{1 + 3 * i},'.encode()) for i in range(count)]
    body = b'{"traceEvents": [' + b",".join(events) + b'], "baseTimeNanoseconds": 0}'
    bomb = tmp_path / "rank0.pt.trace.json.gz"
    bomb.write_bytes(gzip.compress(body, compresslevel=9))
    monkeypatch.setattr(kineto, "SPILL_SHARE", 64)  # frames past 3.4 MiB spill
    frames = read_trace(bomb)
    assert frames.tables["kernels"].height == count
    slices = frames.tables["slices"]
    assert isinstance(slices, pl.LazyFrame)
    assert slices.filter(pl.col("lane") == "compute").select(pl.len()).collect().item() == count


def test_an_entry_past_the_size_one_may_take_costs_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One kernel whose name is 40 MiB, under a 256 MiB budget (32 MiB per entry): that entry is
    set aside as too_large at its position, without being held, and the 1,000 others load."""
    monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, "256MiB")
    monkeypatch.setattr(kineto, "STREAM_BLOCK", 1 << 20)
    events = [EVENT.replace(b'"ts":1,', f'"ts":{1 + 3 * i},'.encode()) for i in range(1001)]
    events[500] = events[500].replace(b'"name":"k"', b'"name":"' + b"x" * (40 << 20) + b'"')
    path = tmp_path / "rank0.pt.trace.json"
    path.write_bytes(b'{"traceEvents": [' + b",".join(events) + b"]}")
    frames = read_trace(path)
    assert frames.tables["kernels"].height == 1000
    assert frames.dropped == {"too_large": 1}
    [row] = frames.quarantined
    assert row.reason == "invalid_event"
    assert row.detail.startswith("1 entry set aside, the rest loaded: traceEvents[500]: too_large")


def test_text_outside_the_events_past_the_budget_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1.5 GiB of spaces after the object's `{` (a 1.5 MB .gz) cannot be held as the trace's
    own fields: the file is too_large, read only up to the share (32 MiB of a 256 MiB budget)."""
    monkeypatch.setenv(memory_budget.ENV_MAX_MEMORY, "256MiB")
    bomb = tmp_path / "rank0.pt.trace.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        out.write(b"{")
        spaces = b" " * (64 << 20)
        for _ in range(24):
            out.write(spaces)
        out.write(b'"traceEvents": [' + EVENT + b"]}")
    with pytest.raises(QuarantineError) as err:
        read_trace(bomb)
    assert err.value.reason == "too_large" and "--max-memory" in err.value.detail


def test_a_trace_inside_the_budget_is_read(tmp_path: Path) -> None:
    # 1,000 kernels one after another on one stream (an exact copy would be counted once)
    events = [EVENT.replace(b'"ts":1,', f'"ts":{1 + 3 * i},'.encode()) for i in range(1000)]
    path = tmp_path / "rank0.pt.trace.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": [' + b",".join(events) + b"]}"))
    frames = read_trace(path)
    assert frames.tables["kernels"].height == 1000
    slices = frames.tables["slices"]
    assert slices.filter(slices["lane"] == "compute").height == 1000
