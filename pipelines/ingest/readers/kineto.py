"""Reader for PyTorch Kineto traces (torch.profiler chrome traces, .json / .json.gz) -> RankFrames.

Object form `{"traceEvents": [...], "distributedInfo": {"rank": ...}, ...}` (a bare event array is
accepted too). Read as a stream, 16 MiB at a time (a .gz inflated as read): traceEvents' entries
are found by their structure (json_entries.ArrayStream) and decoded EVENT_BATCH at a time with
msgspec typed structs (DuckDB's default object-size limit breaks on these files); everything after
decoding is columnar Polars, in memory, or over a Parquet spill once the event frames pass an
eighth of the ingest memory budget (docs/ingest_rules.md "Memory").

Every Kineto schema since 2021 (docs/device_work.md): categories are matched case-blind and the
2021 names are mapped to today's (`Operator` -> cpu_op, `Runtime` -> cuda_runtime, `Kernel` ->
kernel, `Memcpy` -> gpu_memcpy, `Memset` -> gpu_memset); `B`/`E` pairs become complete events.

Lanes: cpu_op / user_annotation / python_function / cuda_runtime / cuda_driver -> host;
kernel / gpu_memcpy / gpu_memset -> device work, classified by pipelines/vocabulary/device_work.py:
communication (collective or p2p: NCCL, custom all-reduce, DeepEP, NVSHMEM ... by name, or a
kernel launched inside `record_param_comms` / `nccl:*` / `c10d::*`) -> comm, the rest -> compute
(memcpy and memset stay on the compute lane but are their own columns of the breakdown);
gpu_user_annotation / cuda_sync -> other. Kineto has no overlap lane: the overlap lanes and step
breakdown are derived from device intervals (origin 'derived'), each attributed to the
ProfilerStep whose host window holds its launch (`correlation` / `External id`,
pipelines/ingest/steps/launch_links.py). A trace with no device events is quarantined
(`no_device_events`, or `unsupported_device` when it holds device kinds this reader does not know).
Times: `ts` int or float µs, absolute, or relative to `baseTimeNanoseconds` when present."""

from __future__ import annotations

import gzip
import math
import re
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import msgspec
import polars as pl

from pipelines import memory_budget
from pipelines.ingest import dropped as drop
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import Quarantined, RankFrames
from pipelines.ingest.lookups import left_lookup
from pipelines.ingest.readers import gz, json_entries, json_keys
from pipelines.ingest.readers.trace_view import (
    NESTED_TOO_DEEP,
    entries_not_json,
    lazy_steps,
    quote_constants,
)
from pipelines.ingest.steps.launch_links import launch_anchors
from pipelines.ingest.steps.step_breakdown import (
    assess,
    derive_breakdown,
    launch_rule_applies,
    steps_by_launch,
)
from pipelines.vocabulary.device_work import COMM_CLASSES, COMM_HOST_RANGE, P2P, classify
from pipelines.vocabulary.intervals import assign_steps
from pipelines.vocabulary.profiler_names import CONVENTION_KEYS

# reason codes (quarantine.reason)
EMPTY_FILE = "empty_file"
NOT_GZIP = "not_gzip"
TOO_LARGE = "too_large"  # past what the ingest memory budget can read in memory
TRUNCATED_JSON = "truncated_json"
INVALID_JSON = "invalid_json"
NO_TRACE_EVENTS = "no_trace_events"
NO_DEVICE_EVENTS = "no_device_events"
UNSUPPORTED_DEVICE = "unsupported_device"

HOST_CATEGORIES = ("cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver")
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")  # after OLD_CATEGORIES mapping
OTHER_CATEGORIES = ("gpu_user_annotation", "cuda_sync")
# the 2021 schema's capitalised categories (lower-cased) -> today's names
OLD_CATEGORIES = {
    "operator": "cpu_op",
    "runtime": "cuda_runtime",
    "driver": "cuda_driver",
    "memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
    "python": "python_function",
}
# device kinds Kineto writes for accelerators this reader does not read (MTIA, CUPTI range
# profiler, XPU / HPU back-ends): a trace holding only these is quarantined, not stored empty
UNSUPPORTED_DEVICE_CATEGORY = r"(?i)^(mtia|cuda_profiler_range|xpu_|hpu_|privateuse1)"
STEP_NAME = r"^ProfilerStep#(\d+)$"
# element sizes of the "dtype" arg of NCCL kernels (PyTorch scalar type names)
_DTYPE_BYTES = {
    "Byte": 1,
    "Char": 1,
    "Bool": 1,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
    "Short": 2,
    "Half": 2,
    "BFloat16": 2,
    "Int": 4,
    "Float": 4,
    "Long": 8,
    "Double": 8,
}


class _Event(msgspec.Struct):
    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: int | str = 0
    tid: int | str = 0
    # str: NaN / Infinity / -Infinity, quoted by _read_events so that msgspec reads the file
    ts: int | float | str | None = None
    dur: int | float | str | None = None
    args: msgspec.Raw = msgspec.Raw(b"")


class _RawTs(msgspec.Struct):
    """An event's `ts` as written (the other keys are not decoded)."""

    ts: msgspec.Raw = msgspec.Raw(b"")


# a float ts this large (µs; 2^40 ≈ 12.7 days) is epoch microseconds written with decimals (HTA's
# ns_resolution_trace: `1712195495519689.123`): a float64 holds it to 0.25 µs only. Below it a
# float is within 0.25 ns of any value written with 3 decimals, which rounds to its exact ns.
_FLOAT_TS_EXACT_BELOW = 2.0**40


def _keep_ts_digits(raw: list[msgspec.Raw], events: list[_Event]) -> None:
    """When an event of `raw` (decoded into `events`, one per entry) has a float `ts` past
    _FLOAT_TS_EXACT_BELOW, give every float ts of the batch its number's own digits, as a
    Decimal (_event_frame makes them exact ns). One pass over the events (~0.04 s per million
    for a trace without such a ts) and, for a trace with them, a second decode of the ts alone."""
    if not any(type(e.ts) is float and abs(e.ts) >= _FLOAT_TS_EXACT_BELOW for e in events):
        return
    stamps = msgspec.json.decode(b"[" + b",".join(raw) + b"]", type=list[_RawTs])
    for event, stamp in zip(events, stamps, strict=True):
        if type(event.ts) is float:
            event.ts = Decimal(bytes(stamp.ts).decode())


class _Trace(msgspec.Struct):
    traceEvents: list[_Event] | None = None  # JSON key names
    distributedInfo: dict[str, Any] | None = None
    deviceProperties: list[dict[str, Any]] | None = None
    baseTimeNanoseconds: int | None = None
    schemaVersion: int | None = None
    # run conventions (docs/tau_k.md §1) set with torch.profiler's prof.add_metadata(key, value)
    model: str | int | None = None
    schedule: str | int | None = None
    chunk_size: str | int | None = None
    seq_len: str | int | None = None
    tp: str | int | None = None
    pp: str | int | None = None
    vp: str | int | None = None
    hardware: str | None = None
    attention: str | None = None
    # "cpu": a CPU-only run (pipelines/workload): its outermost aten ops are the device work
    compute_device: str | None = None


FrameOrLazy = TypeVar("FrameOrLazy", pl.DataFrame, pl.LazyFrame)

_ENTRY_INDEX = re.compile(r"^traceEvents\[(\d+)\]")


def _entry_of(line: str) -> int:
    match = _ENTRY_INDEX.match(line)
    return int(match.group(1)) if match else -1


def read_trace(path: Path) -> RankFrames:
    """Read one Kineto trace file. Raises QuarantineError for unreadable input."""
    path = Path(path)
    trace, frame, bad_events, left_out = _read_events(path)
    if isinstance(frame, pl.LazyFrame):
        read = _read_spilled(path, trace, frame, bad_events)
    else:
        read = _read_in_memory(path, trace, frame, bad_events)
    tables, device_events, info, dropped, quarantined = read
    if left_out:
        detail = f"{path.name}: {'; '.join(left_out)}; every event read"
        quarantined = [*quarantined, Quarantined(str(path), INVALID_JSON, detail)]
    return RankFrames(
        rank=_rank(trace, path),
        device_id=_device_id(device_events),
        source_path=str(path),
        tables=tables,
        info=info,
        dropped=dropped,
        quarantined=quarantined,
    )


_Read = tuple[
    dict[str, pl.DataFrame | pl.LazyFrame],
    pl.DataFrame,
    dict[str, Any],
    dict[str, int],
    list[Quarantined],
]
"""What one read gives: the tables, the classified device events, info, dropped-row counts and
quarantine rows."""


def _read_in_memory(path: Path, trace: _Trace, frame: pl.DataFrame, bad_events: list[str]) -> _Read:
    frame = _mark_copies(frame)
    set_aside = sorted([*bad_events, *drop.positions(frame, "traceEvents")], key=_entry_of)
    events, dropped = drop.split(frame)
    del frame  # the events are held once from here (each frame costs about the file's size)
    events = events.drop(drop.ENTRY)
    dropped, quarantined = _set_aside(path, bad_events, set_aside, dropped)
    info = _info(trace, events)
    complete = _complete_events(events)
    categories = events.get_column("cat")  # for the quarantine line of _require_device_events
    del events
    steps = _steps(complete)
    quarantined += _step_problems(complete, path)
    complete = _with_lanes(complete)
    if trace.compute_device != "cpu":
        _require_device_events(complete, categories, path.name)
    del categories
    complete = _classified(complete.with_row_index("row_id"))
    if trace.compute_device == "cpu":
        complete = _cpu_compute_lane(complete)
    device_events = complete.filter(pl.col("lane").is_in(["compute", "comm"]))
    overlap_slices, tables = _device_tables(device_events, steps)
    slices = pl.concat(
        [_slice_columns(complete), overlap_slices.drop("step")], how="diagonal_relaxed"
    )
    tables["slices"] = assign_steps(slices, steps).sort("start_ns")
    return tables, device_events, info, dropped, quarantined


def _with_lanes(complete: FrameOrLazy) -> FrameOrLazy:
    """Complete events with their lane by category (device, host, other); the rest left out."""
    return complete.with_columns(
        pl.when(pl.col("cat").is_in(DEVICE_CATEGORIES))
        .then(pl.lit("device"))
        .when(pl.col("cat").is_in(HOST_CATEGORIES))
        .then(pl.lit("host"))
        .when(pl.col("cat").is_in(OTHER_CATEGORIES))
        .then(pl.lit("other"))
        .alias("lane")
    ).filter(pl.col("lane").is_not_null())


def _device_tables(
    device_events: pl.DataFrame, steps: pl.DataFrame
) -> tuple[pl.DataFrame, dict[str, pl.DataFrame | pl.LazyFrame]]:
    """The derived overlap slices of the classified device events, and their tables: kernels,
    comm_ops, step_breakdown."""
    device = device_events.select(
        pl.when(pl.col("lane") == "comm")
        .then(pl.lit("comm"))
        .when(pl.col("work_class").is_in(["memcpy", "memset"]))
        .then(pl.col("work_class"))
        .otherwise(pl.lit("compute"))
        .alias("kind"),
        pl.col("ts_ns").alias("start_ns"),
        "dur_ns",
        "anchor_ns",
    )
    # each kernel / op row in the step the breakdown counts it in (launch, docs/step_breakdown.md)
    linked_rule = launch_rule_applies(device)
    kernels = steps_by_launch(_kernels(device_events), steps, linked_rule).drop("anchor_ns")
    comm_ops = steps_by_launch(_comm_ops(device_events), steps, linked_rule)
    overlap_slices, breakdown = derive_breakdown(device, steps, comm_ops, copies=True)
    comm_ops = comm_ops.drop("anchor_ns")
    breakdown = breakdown.with_columns(
        # the Ascend profiler's Bubble (hcom_receive* ops) has no Kineto counterpart
        pl.lit(None, dtype=pl.Int64).alias("bubble_ns"),
        pl.lit(None, dtype=pl.Int64).alias("comm_not_overlapped_excl_receive_ns"),
    )
    breakdown = assess(breakdown, steps)  # coverage of the ProfilerStep windows
    return overlap_slices, {"kernels": kernels, "comm_ops": comm_ops, "step_breakdown": breakdown}


def _slice_columns(complete: FrameOrLazy) -> FrameOrLazy:
    """The slices table's columns of the complete events (with their final lane)."""
    thread = (
        pl.when(pl.col("lane").is_in(["compute", "comm", "other"]))
        .then(pl.format("stream {}", pl.col("tid")))
        .otherwise(pl.format("Thread {}", pl.col("tid")))
    )
    return complete.select(
        "lane",
        thread.alias("thread"),
        "name",
        pl.col("cat").alias("category"),
        pl.col("ts_ns").alias("start_ns"),
        "dur_ns",
        "args",
    )


_LINK_ARG_KEYS = ("correlation", "External id", "Collective name")
"""The args keys a host event is read by in the derivations (launch_anchors' link keys, the
collective of a communication range)."""


def _read_spilled(path: Path, trace: _Trace, events: pl.LazyFrame, bad_events: list[str]) -> _Read:
    """read_trace for events spilled to Parquet (their frames passed the budget's share): the
    same tables, with what the derivations read collected (the device events; the host events
    that carry a link key or open a communication range, their args cut to those keys; the
    B/E marks and the step windows) and the slices left a LazyFrame over the spill, which the
    store writes in batches (not sorted by start: the store keeps no row order)."""
    category = pl.col("cat").str.to_lowercase().replace(OLD_CATEGORIES)
    is_device = (pl.col("ph") == "X") & category.is_in(DEVICE_CATEGORIES)
    device_rows = events.filter(is_device).select(drop.ENTRY, *COPY_KEY).collect()
    copies = device_rows.filter(~pl.struct(COPY_KEY).is_first_distinct()).get_column(drop.ENTRY)
    del device_rows
    events = events.with_columns(
        pl.when(pl.col(drop.DROPPED).is_null() & pl.col(drop.ENTRY).is_in(copies.implode()))
        .then(pl.lit(drop.DUPLICATE_ROW))
        .otherwise(pl.col(drop.DROPPED))
        .alias(drop.DROPPED)
    )
    bad = events.filter(pl.col(drop.DROPPED).is_not_null()).select(drop.ENTRY, drop.DROPPED)
    bad = bad.collect()
    set_aside = sorted([*bad_events, *drop.positions(bad, "traceEvents")], key=_entry_of)
    dropped = {str(r): int(n) for r, n in bad.get_column(drop.DROPPED).value_counts().iter_rows()}
    dropped, quarantined = _set_aside(path, bad_events, set_aside, dropped)
    kept = events.filter(pl.col(drop.DROPPED).is_null()).drop(drop.DROPPED, drop.ENTRY)
    info = _info(trace, kept.select(pl.col("ts_ns").min()).collect())

    marks = kept.filter(pl.col("ph").is_in(["B", "E"])).collect()
    paired = _begin_end_pairs(marks)
    complete = kept.filter((pl.col("ph") == "X") & pl.col("ts_ns").is_not_null())
    if not paired.is_empty():
        complete = pl.concat([complete, paired.lazy()], how="vertical_relaxed")
    complete = complete.with_columns(
        pl.col("cat").str.to_lowercase().replace(OLD_CATEGORIES).alias("cat")
    )
    is_step = pl.col("cat").is_in(["user_annotation", "cpu_op"]) & pl.col("name").str.contains(
        STEP_NAME
    )
    step_events = complete.filter(is_step).collect()
    steps = _steps(step_events)
    quarantined += _step_problems(step_events, path)
    complete = _with_lanes(complete).with_row_index("row_id")
    if trace.compute_device == "cpu":  # a CPU-only run (it was collected whole: 4.1 GB at 1 GB)
        device_events = _cpu_device_events(complete)
    else:
        device_events = _device_events_of_spill(complete, kept, path)
    overlap_slices, tables = _device_tables(device_events, steps)
    lanes = device_events.select("row_id", pl.col("lane").alias("_lane"))
    slices = left_lookup(complete, lanes, "row_id").with_columns(
        pl.coalesce("_lane", "lane").alias("lane")
    )
    slices = pl.concat(
        [_slice_columns(slices), overlap_slices.drop("step").lazy()], how="diagonal_relaxed"
    )
    tables["slices"] = lazy_steps(slices, steps)
    return tables, device_events, info, dropped, quarantined


def _device_events_of_spill(complete: pl.LazyFrame, kept: pl.LazyFrame, path: Path) -> pl.DataFrame:
    """The device events of a spilled trace, classified, with the host events that carry a
    link key or open a communication range (their args cut to those keys) collected for it."""
    device = complete.filter(pl.col("lane") == "device").collect()
    if device.is_empty():
        cats = kept.select(pl.col("cat").unique()).collect().get_column("cat")
        _require_device_events(device, cats, path.name)
    keyed = pl.any_horizontal(
        pl.col("args").str.contains(f'"{key}"', literal=True) for key in _LINK_ARG_KEYS[:2]
    ).fill_null(False)
    host = (
        complete.filter(
            (pl.col("lane") == "host")
            & (keyed | pl.col("name").str.contains(COMM_HOST_RANGE).fill_null(False))
        )
        .with_columns(_cut_args(pl.col("args")).alias("args"))
        .collect()
    )
    return _classified_device(device, host)


def _cut_args(args: pl.Expr) -> pl.Expr:
    """A host event's args cut to _LINK_ARG_KEYS (each value as the text json_path_match gives,
    which is all the derivations read of it)."""
    return pl.struct(
        pl.when(args.str.contains(f'"{key}"', literal=True))
        .then(args.str.json_path_match(f"$['{key}']"))
        .alias(key)
        for key in _LINK_ARG_KEYS
    ).struct.json_encode()


def _set_aside(
    path: Path, bad_events: list[str], set_aside: list[str], dropped: dict[str, int]
) -> tuple[dict[str, int], list[Quarantined]]:
    """The dropped-row counts with the entries set aside whole (a key given twice, an entry past
    the size one may take, any other no event), and the file's quarantine row naming them."""
    twice = sum(1 for line in bad_events if json_keys.is_duplicate_line(line))
    large = sum(1 for line in bad_events if f": {drop.TOO_LARGE} (" in line)
    dropped = drop.merged(
        dropped,
        {
            drop.DUPLICATE_KEY: twice,
            drop.TOO_LARGE: large,
            drop.INVALID_EVENT: len(bad_events) - twice - large,
        },
    )
    if not set_aside:
        return dropped, []
    reason = drop.INVALID_EVENT if bad_events else "invalid_rows"
    return dropped, [Quarantined.entries_set_aside(path, set_aside, reason=reason)]


def _cpu_compute_lane(complete: pl.DataFrame) -> pl.DataFrame:
    """A run whose device is the CPU (metadata compute_device=cpu, docs/workload.md): the
    outermost cpu_op of each thread, c10d (communication) ops excepted, moves to lane compute,
    so chunk markers (user_annotation) hold device work; nested ops stay on the host lane."""
    rows = complete.with_row_index("_row")
    outer = _outer_cpu_ops(rows.filter(_CPU_OPS).select("_row", "tid", "ts_ns", "dur_ns"), "_row")
    moved = pl.col("_row").is_in(outer.implode())
    return rows.with_columns(
        pl.when(moved).then(pl.lit("compute")).otherwise(pl.col("lane")).alias("lane"),
        # a CPU op is its own launch
        pl.when(moved).then(pl.col("ts_ns")).otherwise(pl.col("anchor_ns")).alias("anchor_ns"),
        pl.when(moved).then(pl.lit("compute")).otherwise(pl.col("work_class")).alias("work_class"),
    ).drop("_row")


_CPU_OPS = pl.col("cat").eq("cpu_op") & ~pl.col("name").str.starts_with("c10d::")
"""The ops of a CPU-only run that may be its device work (c10d communication ops excepted)."""


def _outer_cpu_ops(ops: pl.DataFrame, index: str) -> pl.Series:
    """`index` of the outermost of `ops` (tid, ts_ns, dur_ns) on each thread."""
    end = pl.col("ts_ns") + pl.col("dur_ns")
    return (
        ops.sort(["tid", "ts_ns", "dur_ns"], descending=[False, False, True])
        .filter(pl.col("ts_ns") >= end.cum_max().shift(1).over("tid").fill_null(pl.col("ts_ns")))
        .get_column(index)
    )


def _cpu_device_events(complete: pl.LazyFrame) -> pl.DataFrame:
    """A spilled CPU-only run's device work (`_cpu_compute_lane` of the in-memory read): the
    outermost cpu_ops found from four columns of the spill, then only those rows collected, on
    the compute lane, each its own launch (`row_id` kept)."""
    ops = complete.filter(_CPU_OPS).select("row_id", "tid", "ts_ns", "dur_ns").collect()
    outer = _outer_cpu_ops(ops, "row_id")
    del ops
    moved = complete.filter(pl.col("row_id").is_in(outer.implode())).collect()
    return moved.with_columns(
        pl.lit("compute").alias("lane"),
        pl.lit("compute").alias("work_class"),
        pl.lit(None, pl.String).alias("op_type"),
        pl.col("ts_ns").alias("anchor_ns"),
    ).sort("row_id")


# --- events, device work and its launch -------------------------------------------------------


COPY_KEY = ("ph", "name", "cat", "pid", "tid", "ts_ns", "dur_ns", "args")


def _mark_copies(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with every device event (a kernel, memcpy or memset: one GPU stream is `tid`)
    that repeats an earlier one in every field marked `duplicate_row`: two kernels cannot start
    at one instant on one stream, so an event written twice is one kernel, counted once."""
    if frame.is_empty():
        return frame
    category = pl.col("cat").str.to_lowercase().replace(OLD_CATEGORIES)
    device = (pl.col("ph") == "X") & category.is_in(DEVICE_CATEGORIES)
    # hashed over the device events only (a third of a trace's events or fewer)
    copies = (
        frame.select(pl.int_range(pl.len()).alias("_row"), *COPY_KEY, device.alias("_device"))
        .filter("_device")
        .filter(~pl.struct(COPY_KEY).is_first_distinct())
        .get_column("_row")
    )
    if copies.is_empty():
        return frame
    repeated = pl.int_range(pl.len()).is_in(copies.implode())
    return frame.with_columns(
        pl.when(pl.col(drop.DROPPED).is_null() & repeated)
        .then(pl.lit(drop.DUPLICATE_ROW))
        .otherwise(pl.col(drop.DROPPED))
        .alias(drop.DROPPED)
    )


def _complete_events(events: pl.DataFrame) -> pl.DataFrame:
    """Complete events (`X`, and `B`/`E` pairs of one thread matched as a stack) with a known
    start, categories lower-cased and the 2021 names mapped to today's."""
    complete = events.filter((pl.col("ph") == "X") & pl.col("ts_ns").is_not_null())
    paired = _begin_end_pairs(events)
    if not paired.is_empty():
        complete = pl.concat([complete, paired.select(complete.columns)], how="vertical_relaxed")
    lowered = pl.col("cat").str.to_lowercase()
    return complete.with_columns(lowered.replace(OLD_CATEGORIES).alias("cat"))


def _begin_end_pairs(events: pl.DataFrame) -> pl.DataFrame:
    """`B`/`E` duration events of one pid/tid paired in file order as a stack -> `X` rows (an `E`
    without a `B`, or a `B` never closed, is left out)."""
    marks = events.filter(pl.col("ph").is_in(["B", "E"]) & pl.col("ts_ns").is_not_null())
    if marks.is_empty():
        return marks
    open_: dict[tuple[str, str], list[int]] = {}
    begin_rows, ends = [], []
    rows = marks.select("ph", "pid", "tid", "ts_ns").iter_rows()
    for index, (ph, pid, tid, ts) in enumerate(rows):
        stack = open_.setdefault((pid, tid), [])
        if ph == "B":
            stack.append(index)
        elif stack:
            begin = stack.pop()
            begin_rows.append(begin)
            ends.append(ts)
    if not begin_rows:
        return marks.clear()
    begins = marks[begin_rows]
    return begins.with_columns(
        pl.lit("X").alias("ph"),
        (pl.Series(ends, dtype=pl.Int64) - pl.col("ts_ns")).clip(lower_bound=0).alias("dur_ns"),
    )


def _require_device_events(complete: pl.DataFrame, categories: pl.Series, name: str) -> None:
    """Quarantine a trace without device events: `unsupported_device` when it holds device
    kinds this reader does not know (`categories`: every event's), else `no_device_events`."""
    if complete.filter(pl.col("lane") == "device").height:
        return
    cats = categories.drop_nulls()
    unknown = cats.filter(cats.str.contains(UNSUPPORTED_DEVICE_CATEGORY)).value_counts(sort=True)
    if unknown.height:
        kinds = ", ".join(f"{c} ({n})" for c, n in unknown.iter_rows())
        raise QuarantineError(
            UNSUPPORTED_DEVICE,
            f"{name}: device events of a kind this reader does not read: {kinds}",
        )
    seen = ", ".join(sorted(set(cats.to_list()))[:8]) or "none"
    raise QuarantineError(
        NO_DEVICE_EVENTS,
        f"{name}: no device events (kernel, gpu_memcpy, gpu_memset); categories seen: {seen}",
    )


def _classified(complete: pl.DataFrame) -> pl.DataFrame:
    """Device events classified (pipelines/vocabulary/device_work.py) onto the compute or comm
    lane, with `anchor_ns`: the start of the host slice that launched each (null when not
    linked)."""
    device = _classified_device(
        complete.filter(pl.col("lane") == "device"), complete.filter(pl.col("lane") == "host")
    )
    rest = complete.filter(pl.col("lane") != "device").with_columns(
        pl.lit(None, pl.String).alias("work_class"),
        pl.lit(None, pl.String).alias("op_type"),
        pl.lit(None, pl.Int64).alias("anchor_ns"),
    )
    return pl.concat([rest, device.select(rest.columns)]).sort("row_id").drop("row_id")


def _classified_device(device: pl.DataFrame, host: pl.DataFrame) -> pl.DataFrame:
    """The device events (`row_id` kept, in its order) on their compute or comm lane, with
    work_class, op_type and anchor_ns; `host`: the host events (those carrying a link key or
    opening a communication range suffice)."""
    anchors = launch_anchors(
        device.select("row_id", "args", pl.col("ts_ns").alias("start_ns")),
        host.select("row_id", "args", pl.col("ts_ns").alias("start_ns")),
        keys=_LINK_ARG_KEYS[:2],
        by=(),  # one rank per file
    ).rename({"host_ns": "anchor_ns"})
    device = _comm_range_of_launch(device, host).join(anchors, on="row_id", how="left")
    device = classify(device, category="cat", comm_range="_comm_range", collective="_coll")
    return (
        device.with_columns(
            pl.when(pl.col("work_class").is_in(COMM_CLASSES))
            .then(pl.lit("comm"))
            .otherwise(pl.lit("compute"))
            .alias("lane")
        )
        .drop("_comm_range", "_coll")
        .sort("row_id")
    )


# --- decoding ---------------------------------------------------------------------------------


STREAM_BLOCK = json_entries.BLOCK
"""Bytes of the (inflated) JSON read at a time: the file is never held whole."""
EVENT_BATCH = 100_000
"""Events decoded into msgspec structs, and laid out as columns, at a time: the structs of one
batch are freed before the next is decoded (a whole 300 MB trace held as structs, next to its
bytes and its frame, was the larger part of the reader's peak; docs/bench_ingest.md)."""
SPILL_SHARE = 8
"""The event frames are held in memory up to the budget / this (256 MiB of the 2 GiB default:
the frame of ~350 MB of JSON, 0.72 bytes of frame per byte of JSON); past it every batch's
frame is written to Parquet in a spill folder and the rank's events and slices are read from
there (`_read_spilled`)."""
ENTRY_SHARE = 8
"""One entry of traceEvents, and the text around the array, may take the budget / this (256 MiB
of the default): an entry past it is set aside as too_large at its position, a top-level text
past it (1.5 GiB of spaces) makes the file too_large."""


def _too_large(path: Path, detail: str) -> QuarantineError:
    return QuarantineError(
        TOO_LARGE,
        f"{path.name}: {detail}, past what the ingest memory budget"
        f" ({memory_budget.max_memory() / 2**30:.1f} GiB) lets one value take:"
        " raise --max-memory / $TRACEREPLAY_MAX_MEMORY to read it",
    )


class _LooseTrace(msgspec.Struct):
    """The trace's own fields as the file writes them (checked against _Trace's types by
    _checked_fields), its traceEvents left as raw JSON (the text around the array)."""

    traceEvents: list[msgspec.Raw] | None = None
    distributedInfo: Any = None
    deviceProperties: Any = None
    baseTimeNanoseconds: Any = None
    schemaVersion: Any = None
    model: Any = None
    schedule: Any = None
    chunk_size: Any = None
    seq_len: Any = None
    tp: Any = None
    pp: Any = None
    vp: Any = None
    hardware: Any = None
    attention: Any = None
    compute_device: Any = None


_INT64_MAX = (1 << 63) - 1


def _base_ns(value: Any, name: str) -> int | None:
    """baseTimeNanoseconds as a whole number of ns in int64 (issue 36 round seven): an integer,
    its digits as text (`"1767225600000000000"`) or a whole float (`1.7672256e18`) are read; a
    negative, fractional, huge or non-numeric one leaves the trace's times without a base (its
    ranks could not be lined up), so the file is refused by name (a negative base had placed
    every event before 1970 without a word, a text one refused the file as `invalid_json`)."""
    if value is None:
        return None
    digits = isinstance(value, str) and value.isascii() and value.isdigit()
    whole = isinstance(value, float) and math.isfinite(value) and value.is_integer()
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif digits or whole:
        number = int(value)
    if number is None or not 0 <= number <= _INT64_MAX:
        raise QuarantineError(
            INVALID_JSON,
            f"{name}: baseTimeNanoseconds {str(value)[:40]!r} is no time base (a whole number"
            " of ns from 0 to 2^63 - 1), so the trace's times cannot be placed",
        )
    return number


def _checked_fields(loose: _LooseTrace, name: str) -> tuple[_Trace, list[str]]:
    """_Trace from the loose fields, and one phrase per member left out for its type: a
    `deviceProperties` that is no list of objects or a `distributedInfo` that is no object costs
    that member, named, not the trace's events (issue 36 round seven: the whole file was
    `invalid_json`, every kernel lost)."""
    fields: dict[str, Any] = {}
    left_out: list[str] = []
    for info in msgspec.structs.fields(_Trace):
        if info.name == "traceEvents":
            continue
        value = getattr(loose, info.name)
        if info.name == "baseTimeNanoseconds":
            fields[info.name] = _base_ns(value, name)
            continue
        try:
            fields[info.name] = msgspec.convert(value, type=info.type)
        except msgspec.ValidationError as err:
            shown = msgspec.json.encode(value)[:40].decode(errors="replace")
            left_out.append(f'"{info.name}" left out ({shown}: {err})')
    return _Trace(**fields), left_out


def _members_twice(rest: bytes, name: str) -> None:
    """Refuse a trace object that gives a member the reader uses twice (`traceEvents`,
    `baseTimeNanoseconds`, ...): which one the writer meant is unknown (issue 36 round seven: a
    second traceEvents array was dropped without a word, half of the events stored)."""
    body = rest.strip()
    members = json_entries.split_array(b"[" + body[1:-1] + b"]") if body[:1] == b"{" else None
    used = set(_Trace.__struct_fields__)
    seen: dict[str, int] = {}
    for member in members or []:
        try:
            key = msgspec.json.decode(member[: member.find(b":")], type=str)
        except msgspec.DecodeError:
            continue
        seen[key] = seen.get(key, 0) + 1
    twice = sorted(key for key, count in seen.items() if count > 1 and key in used)
    if twice:
        raise QuarantineError(
            INVALID_JSON,
            f"{name}: {', '.join(twice)} given {seen[twice[0]]} times at the top level;"
            " which one the writer meant is unknown",
        )


@dataclass
class _Events:
    """The events of one read: `frames` in memory, or `spilled` Parquet files (in file order)
    once they passed the budget's share; `bad`: one line per entry set aside."""

    frames: list[pl.DataFrame] = field(default_factory=list)
    spilled: list[Path] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # trace members nested too deep
    held: int = 0
    spill_dir: Path | None = None

    def add(self, frame: pl.DataFrame, limit: int) -> None:
        self.frames.append(frame)
        self.held += frame.estimated_size()
        if self.held <= limit and not self.spilled:
            return
        if self.spill_dir is None:
            self.spill_dir = memory_budget.new_spill_dir()
        for one in self.frames:
            target = self.spill_dir / f"events-{len(self.spilled):06d}.parquet"
            one.write_parquet(target)
            self.spilled.append(target)
        self.frames, self.held = [], 0

    def result(self, base_ns: int | None) -> pl.DataFrame | pl.LazyFrame:
        if self.spilled:
            return pl.scan_parquet(self.spilled)
        if not self.frames:
            return _event_frame([], base_ns).with_columns(pl.lit(None, pl.Int64).alias(drop.ENTRY))
        return pl.concat(self.frames, how="vertical", rechunk=False)


def _open_json(path: Path) -> BinaryIO:
    """The trace's JSON as a binary stream (a .gz inflated as it is read)."""
    gzipped = _is_gzip(path)
    if path.suffix == ".gz" and not gzipped:
        raise QuarantineError(NOT_GZIP, f"{path.name} is named .gz but is not gzip data")
    return gzip.open(path, "rb") if gzipped else path.open("rb")


def _whole_gzip(path: Path, err: Exception) -> Path:
    """A copy of the .gz `path` without the bytes after its gzip data (zeros, stray bytes: the
    gzip module refuses them), or NOT_GZIP when its gzip data itself is broken."""
    try:
        found = gz.scan(path)
    except (OSError, EOFError, zlib.error, ValueError) as scan_err:
        raise QuarantineError(NOT_GZIP, f"{path.name}: broken gzip stream: {err}") from scan_err
    if not found.trailing:
        raise QuarantineError(NOT_GZIP, f"{path.name}: broken gzip stream: {err}") from err
    return gz.without_trailing(path, found.data_end)


def _read_events(
    path: Path,
) -> tuple[_Trace, pl.DataFrame | pl.LazyFrame, list[str], list[str]]:
    """The trace's own fields (its traceEvents left out), the frame of its events (_event_frame
    with their file positions in drop.ENTRY, in file order; a LazyFrame over the spill when
    they passed the budget's share) and the entries set aside (one line each: position and
    why). The file is read STREAM_BLOCK bytes at a time; traceEvents' entries are found by
    their structure (json_entries.ArrayStream) and decoded EVENT_BATCH at a time. Last: the
    members outside traceEvents left out as nested too deep to decode (_trace_fields)."""
    trace, events, base_ns = _stream_events(path, None)
    if trace.baseTimeNanoseconds != base_ns:
        # baseTimeNanoseconds written after traceEvents: read again with it (rare; never in
        # the real traces here, where it comes first)
        trace, events, _ = _stream_events(path, trace.baseTimeNanoseconds)
    return trace, events.result(trace.baseTimeNanoseconds), events.bad, events.left_out


def _stream_events(path: Path, known_base: int | None) -> tuple[_Trace, _Events, int | None]:
    budget = memory_budget.max_memory()
    stream = json_entries.ArrayStream(
        "traceEvents", max_entry=budget // ENTRY_SHARE, max_rest=budget // ENTRY_SHARE
    )
    events = _Events()
    batch: list[bytes | int] = []
    taken = 0  # entries taken from the stream so far
    base_ns: int | None = known_base
    base_known = known_base is not None
    first_error: list[str] = []

    def flush() -> None:
        nonlocal base_ns, base_known
        if not base_known:  # from the text before the array (the fields written first)
            base_ns, base_known = _base_before(stream), True
        offset = taken - len(batch)
        frame, bad = _decoded_batch(batch, offset, base_ns, first_error)
        events.bad.extend(bad)
        if frame is not None:
            events.add(frame, budget // SPILL_SHARE)
        batch.clear()

    try:
        with _open_json(path) as handle:
            for entry in json_entries.fed_entries(handle, stream, STREAM_BLOCK):
                batch.append(entry)
                taken += 1
                if len(batch) >= EVENT_BATCH:
                    flush()
    except gzip.BadGzipFile as err:
        # bytes that are no gzip member after a whole stream: read the stream alone
        return _stream_events(_whole_gzip(path, err), known_base)
    except (OSError, EOFError, zlib.error) as err:
        raise QuarantineError(NOT_GZIP, f"{path.name}: broken gzip stream: {err}") from err
    except json_entries.BrokenStructure as err:
        raise QuarantineError(INVALID_JSON, f"{path.name}: {err}") from err
    except json_entries.TooLarge as err:
        raise _too_large(path, str(err)) from err
    if batch:
        flush()
    if not stream.offset or (not stream.entries and not stream.rest.strip()):
        gzipped = path.suffix == ".gz" or _is_gzip(path)
        raise QuarantineError(
            EMPTY_FILE, f"{path.name} {'decompresses to nothing' if gzipped else 'is empty'}"
        )
    trace, events.left_out = _trace_fields(bytes(stream.rest), stream.level == 1, path.name)
    if not stream.finish():
        raise QuarantineError(TRUNCATED_JSON, f"{path.name}: the JSON text ends inside a value")
    bare = stream.level == 1
    if not bare and not stream.entries:
        raise QuarantineError(NO_TRACE_EVENTS, f"{path.name} has an empty traceEvents array")
    if events.bad and not events.frames and not events.spilled:
        raise QuarantineError(INVALID_JSON, f"{path.name}: not a chrome trace: {first_error[0]}")
    return trace, events, base_ns


def _is_gzip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(2) == gz.GZIP_MAGIC


def _base_before(stream: json_entries.ArrayStream) -> int | None:
    """baseTimeNanoseconds when the text before traceEvents gives it (an object's fields up to
    the array: closed here to decode)."""
    if stream.level != 2:
        return None
    text = bytes(stream.rest) + (b"]}" if stream.phase == "inside" else b"")
    try:
        return _base_ns(msgspec.json.decode(text, type=_LooseTrace).baseTimeNanoseconds, "")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, QuarantineError):
        return None


def _trace_fields(rest: bytes, bare: bool, name: str) -> tuple[_Trace, list[str]]:
    """The trace's own fields from the text around traceEvents (the array as `[]`), and the
    names of its members left out as nested past what the decoder takes (msgspec recurses once
    per level): such a member costs itself, not the trace's events."""
    too_deep = QuarantineError(
        INVALID_JSON, f"{name}: a value outside traceEvents is {NESTED_TOO_DEEP}"
    )
    try:
        return _decoded_fields(rest, bare, name)
    except RecursionError as err:
        body = rest.strip()
        members = json_entries.split_array(b"[" + body[1:-1] + b"]") if not bare else None
        if not members or not body.startswith(b"{") or not body.endswith(b"}"):
            raise too_deep from err
    # each member as an object of its own, judged as traceEvents' entries are
    unreadable = entries_not_json([b"{" + member + b"}" for member in members])
    deep = {i for i, why in unreadable.items() if why == NESTED_TOO_DEEP}
    kept = [member for i, member in enumerate(members) if i not in deep]
    deep_names = ", ".join(
        members[i][: members[i].find(b":")].strip().decode(errors="replace")[:80]
        for i in sorted(deep)
    )
    try:
        trace, wrong = _decoded_fields(b"{" + b",".join(kept) + b"}", bare, name)
    except RecursionError as err:
        raise too_deep from err
    return trace, [f"{deep_names} left out, {NESTED_TOO_DEEP}", *wrong]


def _decoded_fields(rest: bytes, bare: bool, name: str) -> tuple[_Trace, list[str]]:
    """The trace's fields and the members left out for their type (_checked_fields)."""
    try:
        if bare:
            msgspec.json.decode(rest, type=list[msgspec.Raw])
            return _Trace(), []
        _members_twice(rest, name)
        try:
            loose = msgspec.json.decode(rest, type=_LooseTrace)
        except msgspec.DecodeError:
            quoted = quote_constants(rest)
            if quoted == rest:
                raise
            loose = msgspec.json.decode(quoted, type=_LooseTrace)
    except msgspec.ValidationError as err:
        raise QuarantineError(INVALID_JSON, f"{name}: not a chrome trace: {err}") from err
    except msgspec.DecodeError as err:
        reason = TRUNCATED_JSON if "truncated" in str(err).lower() else INVALID_JSON
        raise QuarantineError(reason, f"{name}: {err}") from err
    if loose.traceEvents is None:
        raise QuarantineError(NO_TRACE_EVENTS, f"{name} has no traceEvents array")
    return _checked_fields(loose, name)


def _decoded_batch(
    entries: list[bytes | int], offset: int, base_ns: int | None, first_error: list[str]
) -> tuple[pl.DataFrame | None, list[str]]:
    """The frame of one batch of entries (the file's entries from position `offset` on; None
    when none is an event) and one line per entry set aside. An int is an entry past the size
    one entry may take (set aside as too_large); an entry that is no JSON (a raw control
    character, a lone surrogate escape) is set aside alone; bare NaN / Infinity are quoted so
    that their event is dropped with its reason."""
    not_json: dict[int, str] = {}
    texts = [b"null" if isinstance(e, int) else e for e in entries]
    for index, entry in enumerate(entries):
        if isinstance(entry, int):
            not_json[offset + index] = (
                f"{drop.TOO_LARGE} (an entry of {entry / 2**20:.1f} MiB, past the"
                f" {memory_budget.max_memory() // ENTRY_SHARE / 2**20:.0f} MiB one entry may take)"
            )
    unreadable = entries_not_json(texts)
    for index, why in unreadable.items():
        not_json[offset + index] = f"not JSON ({why})"
    raw = [
        msgspec.Raw(b"null" if index in unreadable else quote_constants(text))
        for index, text in enumerate(texts)
    ]
    decoded, bad = _batch_events(raw, offset, not_json)
    if bad and not first_error:
        first_error.append(bad[0])
    if not decoded:
        return None, bad
    skipped = {_entry_of(line) for line in bad}
    positions = [offset + i for i in range(len(entries)) if offset + i not in skipped]
    frame = _event_frame(decoded, base_ns).with_columns(
        pl.Series(drop.ENTRY, positions, dtype=pl.Int64)
    )
    return frame, bad


def _batch_events(
    raw: list[msgspec.Raw], offset: int, not_json: dict[int, str] | None = None
) -> tuple[list[_Event], list[str]]:
    """The events of `raw` (the file's entries from position `offset` on) that are objects of
    the Chrome trace fields, and one line per entry that is not (`traceEvents[i]: why`) or
    that gives one key twice (msgspec would keep the last value without a word): one bad
    value costs its own event, not the file. `not_json`: positions in the whole file of entries
    that are no JSON (_split_events: a `null` stands in for each), with why."""
    not_json = not_json or {}
    twice = json_keys.duplicate_keys(raw)
    if not twice:
        batch = b"[" + b",".join(raw) + b"]"
        try:
            decoded = msgspec.json.decode(batch, type=list[_Event])
        except msgspec.ValidationError:
            pass  # read entry by entry, below
        else:
            _keep_ts_digits(raw, decoded)
            return decoded, []
    events: list[_Event] = []
    bad: list[str] = []
    for index, item in enumerate(raw):
        if offset + index in not_json:
            bad.append(f"traceEvents[{offset + index}]: {not_json[offset + index]}")
            continue
        if index in twice:
            bad.append(json_keys.duplicate_line(offset + index, twice[index]))
            continue
        try:
            events.append(msgspec.json.decode(item, type=_Event))
        except msgspec.ValidationError as err:
            bad.append(f"traceEvents[{offset + index}]: {err}")
            continue
        _keep_ts_digits([item], events[-1:])
    return events, bad


_CONSTANTS = ("NaN", "Infinity", "-Infinity")


def _constant(value: str) -> float:
    """A NaN / Infinity / -Infinity that _read_events quoted; any other text (`"abc"`) is NaN here
    and its event is dropped as unparsable (the `_ts_text` / `_dur_text` columns say which)."""
    return float(value) if value in _CONSTANTS else float("nan")


def _event_frame(events: list[_Event], base_ns: int | None) -> pl.DataFrame:
    """Columns of `events`; ts -> absolute integer ns (exact for integer µs, and for a ts
    _keep_ts_digits kept as written), relative to `base_ns` (baseTimeNanoseconds) when given."""

    def column(attr: str) -> list[Any]:
        return list(map(attrgetter(attr), events))

    text: dict[str, pl.Series] = {}
    exact: list[int | None] | None = None  # ns of the ts kept as written (Decimal)

    def number(attr: str) -> pl.Series:
        nonlocal exact
        values = column(attr)
        is_text = [isinstance(v, str) and v not in _CONSTANTS for v in values]
        text[attr] = pl.Series(f"_{attr}_text", is_text, dtype=pl.Boolean)
        if any(isinstance(v, str) for v in values):
            values = [_constant(v) if isinstance(v, str) else v for v in values]
        if attr == "ts" and any(isinstance(v, Decimal) for v in values):
            exact = [
                int((v * 1000).to_integral_value(ROUND_HALF_UP)) if isinstance(v, Decimal) else None
                for v in values
            ]
            values = [float(v) if isinstance(v, Decimal) else v for v in values]
        return pl.Series(attr, values, dtype=pl.Float64, strict=False)

    ts, dur = number("ts"), number("dur")
    base = base_ns or 0
    ts_ok = ts.is_finite() & ((ts.abs() * 1000 + abs(base)) < drop.MAX_END_NS)
    whole = ts.floor()
    exact_ns = pl.Series("exact", exact, dtype=pl.Int64) if exact else pl.lit(None, pl.Int64)
    ts_ns = (
        pl.DataFrame({"ts": ts, "whole": whole, "ok": ts_ok})
        .select(
            pl.when("ok").then(
                pl.coalesce(
                    exact_ns,
                    pl.col("whole").cast(pl.Int64, strict=False) * 1000
                    + ((pl.col("ts") - pl.col("whole")) * 1000)
                    .round(0)
                    .cast(pl.Int64, strict=False),
                )
                + base
            )
        )
        .to_series()
    )
    dur_ok = dur.is_finite() & (dur >= 0) & (dur * 1000 < drop.MAX_END_NS)
    dur_ns = pl.DataFrame({"dur": dur, "ok": dur_ok}).select(
        pl.when("ok").then((pl.col("dur") * 1000).round(0).cast(pl.Int64, strict=False))
    )
    args = pl.Series("args", list(map(bytes, column("args"))), dtype=pl.Binary).cast(pl.String)
    frame = pl.DataFrame(
        {
            "ph": column("ph"),
            "name": column("name"),
            "cat": column("cat"),
            "pid": list(map(str, column("pid"))),
            "tid": list(map(str, column("tid"))),
            "ts_ns": ts_ns,
            "dur_ns": dur_ns.to_series(),
            "args": args.replace("", None),
            "_ts": ts,
            "_dur": dur,
            "_ts_text": text["ts"],
            "_dur_text": text["dur"],
        }
    )
    ts_us, dur_us = pl.col("_ts"), pl.col("_dur")
    device = pl.col("cat").str.to_lowercase().replace(OLD_CATEGORIES).is_in(DEVICE_CATEGORIES)
    reason = (
        # a kernel / memcpy / memset is a complete event in every real trace (46,000+ device
        # events of the public Kineto sets, all `X`): one of another phase (B with no E, an
        # unknown letter) is a device work item that cannot be placed, named like a bad value
        pl.when((pl.col("ph") != "X") & device)
        .then(pl.lit(drop.INVALID_EVENT))
        .when(pl.col("ph") != "X")
        .then(None)
        # args that are no object (a string, a number): the event's fields cannot be read
        .when(pl.col("args").is_not_null() & ~pl.col("args").str.starts_with("{"))
        .then(pl.lit(drop.INVALID_EVENT))
        .when(pl.col("_ts_text"))
        .then(pl.lit(drop.UNPARSABLE_TIMESTAMP))
        .when(ts_us.is_null())
        .then(pl.lit(drop.MISSING_TIMESTAMP))
        .when(~ts_us.is_finite())
        .then(pl.lit(drop.UNPARSABLE_TIMESTAMP))
        .when(pl.col("ts_ns").is_null())
        .then(pl.lit(drop.TIMESTAMP_OUT_OF_RANGE))
        .when(pl.col("_dur_text"))
        .then(pl.lit(drop.UNPARSABLE_DURATION))
        .when(dur_us.is_null())
        .then(pl.lit(drop.MISSING_DURATION))
        .when(~dur_us.is_finite())
        .then(pl.lit(drop.NON_FINITE_DURATION))
        .when(dur_us < 0)
        .then(pl.lit(drop.NEGATIVE_DURATION))
        .when(pl.col("ts_ns").cast(pl.Float64) + dur_us * 1000 >= drop.MAX_END_NS)
        .then(pl.lit(drop.DURATION_OUT_OF_RANGE))
    )
    return frame.with_columns(
        reason.alias(drop.DROPPED),
        # events that are not complete ones keep the old meaning of a missing dur: 0
        pl.when(pl.col("ph") != "X")
        .then(pl.col("dur_ns").fill_null(0))
        .otherwise(pl.col("dur_ns"))
        .alias("dur_ns"),
    ).drop("_ts", "_dur", "_ts_text", "_dur_text")


# --- identity and metadata --------------------------------------------------------------------


def _rank(trace: _Trace, path: Path) -> int | None:
    info = trace.distributedInfo or {}
    value = info.get("rank")
    # a rank past INTEGER is no rank (issue 36 round seven: 2^40 failed the whole run with a
    # Polars overflow, `read_error`); the file name's N is used, as for profiler_info
    if value is not None and str(value).isdigit() and int(value) <= 2**31 - 1:
        return int(value)
    m = re.search(r"rank[-_]?(\d+)", path.name)
    return int(m.group(1)) if m else None


def _device_id(device_events: pl.DataFrame) -> int | None:
    devices = (
        device_events.get_column("args")
        .str.json_path_match("$.device")
        .cast(pl.Int32, strict=False)
    ).drop_nulls()
    if devices.is_empty():
        return None
    return int(devices.mode().sort()[0])


def _info(trace: _Trace, events: pl.DataFrame) -> dict[str, Any]:
    info: dict[str, Any] = {"export_type": "kineto"}
    dist = trace.distributedInfo or {}
    if dist:
        info["distributed_info"] = dist
        if str(dist.get("world_size", "")).isdigit():
            # same key the Ascend readers use (MindSpeed distributed_args), read by the assembler
            info["distributed_args"] = {"world_size": int(dist["world_size"])}
    names = sorted({str(d.get("name")) for d in trace.deviceProperties or [] if d.get("name")})
    if names:
        info["hardware"] = ", ".join(names)
    software = {}
    if trace.schemaVersion is not None:
        software["kineto_schema"] = str(trace.schemaVersion)
    if dist.get("backend"):
        software["backend"] = str(dist["backend"])
    info["software"] = software
    conventions = {k: getattr(trace, k) for k in CONVENTION_KEYS}
    info["conventions"] = {k: str(v) for k, v in conventions.items() if v not in (None, "")}
    first = events.get_column("ts_ns").min()
    if first is not None:
        info["collected_at"] = datetime.fromtimestamp(first / 1e9, tz=UTC).replace(tzinfo=None)
    return info


def _steps(complete: pl.DataFrame) -> pl.DataFrame:
    """ProfilerStep#N ranges (cat user_annotation in current torch, cpu_op in older ones)."""
    return (
        complete.filter(
            pl.col("cat").is_in(["user_annotation", "cpu_op"])
            & pl.col("name").str.contains(STEP_NAME)
        )
        .select(
            pl.col("name").str.extract(STEP_NAME, 1).cast(pl.Int32).alias("step"),
            pl.col("ts_ns").alias("start_ns"),
            (pl.col("ts_ns") + pl.col("dur_ns")).alias("end_ns"),
        )
        .unique("step", keep="first")
        .sort("start_ns")
    )


def _step_problems(complete: pl.DataFrame, path: Path) -> list[Quarantined]:
    """One `repaired_rows` row naming ProfilerStep windows that overlap or a step number given
    twice (issue 36 round seven: both were read without a word, exit 0). torch.profiler's steps
    follow each other on one thread, so such a trace was edited or merged; the windows are used
    as _steps makes them (the first of a number kept; a step ends where the next begins, so each
    kernel counts in one step)."""
    events = complete.filter(
        pl.col("cat").is_in(["user_annotation", "cpu_op"]) & pl.col("name").str.contains(STEP_NAME)
    ).sort("ts_ns")
    lines = [
        f"ProfilerStep#{step} is given {count} times (the first kept)"
        for step, count in events.group_by(pl.col("name").str.extract(STEP_NAME, 1))
        .len()
        .filter(pl.col("len") > 1)
        .sort("name")
        .iter_rows()
    ]
    windows = _steps(complete)
    ends = windows.get_column("end_ns").to_list()
    for i, (step, start) in enumerate(windows.select("step", "start_ns").iter_rows()):
        if i and ends[i - 1] > start:
            before = windows.get_column("step")[i - 1]
            overlap_us = (ends[i - 1] - start) / 1000
            lines.append(
                f"ProfilerStep#{before} and ProfilerStep#{step} overlap by {overlap_us:.3f} µs"
                " (a step ends where the next begins)"
            )
    return [Quarantined.entries_repaired(path, lines)] if lines else []


# --- kernels and communication ----------------------------------------------------------------


def _kernels(device_events: pl.DataFrame) -> pl.DataFrame:
    """One row per device kernel / memcpy / memset (work_class says which); wait = gap since the
    previous one on the same stream (the kernel_details definition), 0 for the first."""
    gap = (
        (pl.col("start_ns") - (pl.col("start_ns") + pl.col("dur_ns")).shift(1))
        .over("tid", order_by="start_ns")
        .fill_null(0)
        .clip(lower_bound=0)
    )
    is_comm = pl.col("lane") == "comm"
    return (
        device_events.select(
            "name",
            pl.col("cat").alias("type"),
            pl.when(is_comm).then(pl.lit("NCCL")).otherwise(pl.lit("GPU")).alias("core"),
            pl.col("ts_ns").alias("start_ns"),
            "dur_ns",
            "tid",
            is_comm.alias("is_comm"),
            pl.col("work_class").fill_null("compute"),
            "anchor_ns",
        )
        .with_columns(gap.alias("wait_ns"))
        .drop("tid")
        .sort("start_ns")
    )


def _comm_ops(device_events: pl.DataFrame) -> pl.DataFrame:
    """One op per communication kernel (NCCL, custom all-reduce, DeepEP ...: device_work.py).
    The collective comes from the kernel's own args ("Collective name", newer torch), else the
    name table, else the communication host range around the launching runtime call (linked by
    correlation id); `SendRecv` / `send` / `recv` are point-to-point. `anchor_ns` is kept for
    the step attribution (dropped before the table is stored)."""
    comm = device_events.filter(pl.col("lane") == "comm")
    args = pl.col("args")
    elements = args.str.json_path_match("$['In msg nelems']").cast(pl.Int64, strict=False)
    dtype_bytes = args.str.json_path_match("$.dtype").replace_strict(
        _DTYPE_BYTES, default=None, return_dtype=pl.Int64
    )
    return comm.select(
        # the kernel without its argument list (`void ns::kernel<...>(args)` -> `ns::kernel<...>`)
        pl.col("name")
        .str.replace(r"^void ", "")
        .str.replace(r"\((?:[^()]|\([^()]*\))*\)$", "")
        .alias("op"),
        pl.col("op_type"),
        args.str.json_path_match("$['Process Group Name']").alias("group_name"),
        args.str.json_path_match("$['Process Group Description']").alias("group_kind"),
        (pl.col("work_class") == P2P).alias("is_p2p"),
        pl.lit(None, dtype=pl.Int32).alias("peer"),
        (elements * dtype_bytes).alias("bytes"),
        pl.col("ts_ns").alias("start_ns"),
        "dur_ns",
        pl.lit(None, dtype=pl.Int64).alias("wait_ns"),
        pl.lit(None, dtype=pl.Int64).alias("transit_ns"),
        pl.lit(None, dtype=pl.Int64).alias("sync_ns"),
        "anchor_ns",
    ).sort("start_ns")


def _comm_range_of_launch(device: pl.DataFrame, host: pl.DataFrame) -> pl.DataFrame:
    """Add `_comm_range` (the name of the communication host range — record_param_comms,
    nccl:*, c10d::* — holding the runtime call that launched each device event, same thread, by
    time; null when none) and `_coll` (the collective's name from the event's own args)."""
    named = pl.col("args").str.contains('"Collective name"', literal=True)
    device = device.with_columns(
        pl.when(named)
        .then(pl.col("args").str.json_path_match("$['Collective name']"))
        .alias("_coll")
    )
    ranges = (
        host.filter(pl.col("name").str.contains(COMM_HOST_RANGE))
        .select(
            pl.col("pid").alias("_pid"),
            pl.col("tid").alias("_tid"),
            pl.col("ts_ns").alias("_range_start"),
            (pl.col("ts_ns") + pl.col("dur_ns")).alias("_range_end"),
            pl.coalesce(
                pl.format("nccl:{}", pl.col("args").str.json_path_match("$['Collective name']")),
                pl.col("name"),
            ).alias("_comm_range"),
        )
        .sort("_range_start")
    )
    if ranges.is_empty():  # no communication range: nothing to look up
        return device.with_columns(pl.lit(None, dtype=pl.String).alias("_comm_range"))
    corr = pl.col("args").str.json_path_match("$.correlation").cast(pl.Int64, strict=False)
    device = device.with_columns(corr.alias("_corr"))
    runtime = host.filter(pl.col("cat").is_in(["cuda_runtime", "cuda_driver"])).select(
        corr.alias("_corr"),
        pl.col("pid").alias("_pid"),
        pl.col("tid").alias("_tid"),
        pl.col("ts_ns").alias("_launch_ns"),
    )
    launches = (
        device.select("_corr")
        .drop_nulls()
        .unique()
        .join(runtime.drop_nulls("_corr").unique("_corr"), on="_corr", how="inner")
        .sort("_launch_ns")
    )
    if launches.is_empty():
        return device.with_columns(pl.lit(None, dtype=pl.String).alias("_comm_range")).drop("_corr")
    matched = launches.join_asof(
        ranges,
        left_on="_launch_ns",
        right_on="_range_start",
        by=["_pid", "_tid"],
        strategy="backward",
        check_sortedness=False,
    ).select(
        "_corr",
        pl.when(pl.col("_launch_ns") < pl.col("_range_end"))
        .then(pl.col("_comm_range"))
        .alias("_comm_range"),
    )
    return device.join(matched, on="_corr", how="left").drop("_corr")
