"""Launch-attributed step breakdown of one Ascend rank from its canonical slices (text export's
trace_view.json or the SQLite export), the rule docs/step_breakdown.md "Launch attribution"
states for every reader.

Device work is what chunk segmentation counts (`pipelines.vocabulary.device_work.work_slices`): the
compute lane's kernels without stream waits, DMA copies and the transfers of HCCL ops; communication
is the HCCL op slices (thread `Group <g> Communication`, one per hcom op). Each is anchored at the
earliest host slice that a link joins it to (`launch_links.launch_anchors`: the trace's flow
events `async_npu` / `HostToDevice` as the reader bound them, or the db's connection ids: TASK /
COMMUNICATION_OP.connectionId = CANN_API.connectionId and the PYTORCH_API op's CONNECTION_IDS),
and belongs to the ProfilerStep whose host window holds its anchor; work with no link belongs to
the step its own start lies in (the profiler's rule, the stated fallback) and `launch_coverage`
says how much of a step's device time was attributed by launch (below 99 %: complete = false,
with the reason)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import polars as pl

from pipelines.ingest.steps.launch_links import (
    ANCHOR_SCHEMA,
    LINK_BATCH_ROWS,
    LINK_KEYS,
    LIST_KEYS,
    anchors_from_starts,
    combine_link_starts,
    host_link_starts,
    launch_anchors,
)
from pipelines.ingest.steps.step_breakdown import derive_breakdown
from pipelines.vocabulary.device_work import COMM_LINK_KEY, work_slices
from pipelines.vocabulary.intervals import assign_steps
from pipelines.vocabulary.profiler_names import P2P_REGEX

COMM_OP_THREAD = r" Communication$"
"""Thread of the HCCL op slices on the comm lane (`Group <hash> Communication`; the text export's
HCCL lane and the SQLite reader name them so); `Plane N` threads hold their sub-tasks."""


LAUNCH_LANES = ("compute", "comm", "host")
LAUNCH_ARG_KEYS = tuple(
    dict.fromkeys(("Task Type", COMM_LINK_KEY, *LINK_KEYS, *LIST_KEYS.values()))
)
"""The args keys launch attribution reads: the task type (which tasks are work,
pipelines/vocabulary/device_work.py) and every launch link
(pipelines/ingest/steps/launch_links.py)."""
LAUNCH_COLUMNS = ("lane", "thread", "name", "category", "start_ns", "dur_ns", "args")
_NULL_KEYS = "|".join(f'"{key}":null,?' for key in LAUNCH_ARG_KEYS)


LINK_KEY_REGEX = '"(?:' + "|".join(re.escape(k) for k in (*LINK_KEYS, *LIST_KEYS.values())) + ')"'
"""args that name a launch link key (one pass over the args: an alternation of literals)."""


def compact_args(args: pl.Expr) -> pl.Expr:
    """`args` (JSON text) cut to the LAUNCH_ARG_KEYS it holds, as a JSON object of their values
    (each parsed only where its key occurs; absent keys cost nothing)."""
    return (
        pl.struct(
            pl.when(args.str.contains(f'"{key}"', literal=True))
            .then(args.str.json_path_match(f"$['{key}']"))
            .alias(key)
            for key in LAUNCH_ARG_KEYS
        )
        .struct.json_encode()
        .str.replace_all(_NULL_KEYS, "")
        .str.replace(r",\}$", "}")
    )


def launch_slices(slices: pl.LazyFrame | pl.DataFrame) -> pl.LazyFrame | pl.DataFrame:
    """The slices launch attribution reads, for a trace too big for memory (the streamed read,
    pipelines/ingest/readers/trace_view.py): the device lanes and the host slices that carry a link,
    each with its args cut to LAUNCH_ARG_KEYS (a host slice without a link key cannot be a
    launch anchor, and no other key is read) and without the columns no step reads (a host
    slice's thread, name and category, a compute task's thread). `launch_device_work` gives
    the same anchors and work from these rows as from the whole trace."""
    lane = pl.col("lane")
    has_link = pl.col("args").str.contains(LINK_KEY_REGEX).fill_null(False)
    kept = slices.filter(lane.is_in(LAUNCH_LANES[:2]) | ((lane == "host") & has_link))
    host = lane == "host"
    return kept.select(
        "lane",
        pl.when(~host & (lane != "compute")).then(pl.col("thread")).alias("thread"),
        pl.when(~host).then(pl.col("name")).alias("name"),
        pl.when(~host).then(pl.col("category")).alias("category"),
        "start_ns",
        "dur_ns",
        compact_args(pl.col("args")).alias("args"),
    )


def launch_device_work(
    slices: pl.DataFrame | pl.LazyFrame, batch_rows: int = LINK_BATCH_ROWS
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(device, comm_ops) of one rank for `derive_breakdown`: device = kind ('compute' | 'comm'),
    name, start_ns, dur_ns, anchor_ns (null: no link); comm_ops = op, is_p2p, start_ns, dur_ns,
    anchor_ns. `slices` are the rank's canonical slices with args, or a LazyFrame over the
    launch rows a streamed read spilled (`launch_slices`), which is read `batch_rows` at a time
    (`_batched_device_work`: the same rows, in memory that grows with the link ids and the
    device work, not with the rows and their args)."""
    if isinstance(slices, pl.LazyFrame):
        return _batched_device_work(slices, batch_rows)
    frame = _prepared(slices)
    compute = work_slices(frame).with_columns(pl.lit("compute").alias("kind"))
    ops = _comm_ops_rows(frame)
    work = pl.concat([compute, ops], how="vertical_relaxed")
    host = frame.filter(pl.col("lane") == "host")
    anchors = launch_anchors(work, host).rename({"host_ns": "anchor_ns"})
    return _device_and_ops(work.join(anchors, on="row_id", how="left"))


def _prepared(slices: pl.DataFrame) -> pl.DataFrame:
    return slices.with_columns(
        pl.lit(0, pl.Int32).alias("rank"), pl.col("start_ns").cast(pl.Int64)
    ).with_row_index("row_id")


def _comm_ops_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """The HCCL op slices of `frame` (thread `Group <g> Communication`), kind 'comm'."""
    return frame.filter(
        (pl.col("lane") == "comm") & pl.col("thread").str.contains(COMM_OP_THREAD)
    ).with_columns(pl.lit("comm").alias("kind"))


def _device_and_ops(work: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(device, comm_ops) of `launch_device_work` from the work rows with their anchor_ns."""
    device = work.select("kind", "name", "start_ns", pl.col("dur_ns").cast(pl.Int64), "anchor_ns")
    comm_ops = work.filter(pl.col("kind") == "comm").select(
        pl.col("name").alias("op"),
        pl.col("name").str.contains(P2P_REGEX).alias("is_p2p"),
        "start_ns",
        pl.col("dur_ns").cast(pl.Int64),
        "anchor_ns",
    )
    return device, comm_ops


def _batches(rows: pl.LazyFrame, batch_rows: int) -> Iterator[pl.DataFrame]:
    """`rows` read `batch_rows` rows at a time, in order."""
    total = rows.select(pl.len()).collect().item()
    for offset in range(0, total, batch_rows):
        yield rows.slice(offset, batch_rows).collect()


def _batched_device_work(rows: pl.LazyFrame, batch_rows: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`launch_device_work` of launch rows read in batches, with the same anchors and rows in
    the same order: each device slice is decided alone once the whole rank's earliest host
    start per link id (`host_link_starts`, combined over batches by their minimum) and its comm
    lane's connection ids (which compute tasks are HCCL transfers, `work_slices`) are known.
    So the rows are read twice: once for the host rows' link starts and the comm rows (few),
    then for the compute rows, a batch at a time (as chunk segmentation does,
    pipelines/analysis/chunks/segment_batches.py)."""
    lane = pl.col("lane")
    by = ("rank",)
    starts: dict[str, pl.DataFrame] = {}
    comm_parts = []
    for batch in _batches(rows, batch_rows):
        comm_parts.append(batch.filter(lane == "comm"))
        host = _prepared(batch.filter(lane == "host"))
        if host.is_empty():
            continue
        for key, part in host_link_starts(host, LINK_KEYS, by).items():
            starts[key] = combine_link_starts(starts.get(key), part, by)
    comm = _prepared(pl.concat(comm_parts) if comm_parts else rows.clear().collect())
    transfers = comm.filter(pl.col("args").str.contains(f'"{COMM_LINK_KEY}"', literal=True))
    work = [
        _anchored(_compute_work(_prepared(batch.filter(lane == "compute")), transfers), starts)
        for batch in _batches(rows, batch_rows)
    ]
    work.append(_anchored(_comm_ops_rows(comm), starts))
    return _device_and_ops(pl.concat(work, how="vertical_relaxed"))


def _compute_work(compute: pl.DataFrame, transfers: pl.DataFrame) -> pl.DataFrame:
    """The work slices of a batch of compute rows (`work_slices`), told the HCCL transfers by
    the comm rows that carry a connection id (`transfers`, the whole rank's)."""
    work = work_slices(pl.concat([compute, transfers]))
    return work.with_columns(pl.lit("compute").alias("kind"))


def _anchored(work: pl.DataFrame, starts: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """`work` with anchor_ns: the earliest start of the host slices it links to (`starts`)."""
    anchors = pl.DataFrame(schema=ANCHOR_SCHEMA)
    if starts and not work.is_empty():
        anchors = anchors_from_starts(work, starts, LINK_KEYS, ("rank",))
    anchors = anchors.rename({"host_ns": "anchor_ns"})
    return work.join(anchors, on="row_id", how="left", maintain_order="left")


def launch_steps(rows: pl.DataFrame, host: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """`rows` (device work: start_ns, args with its link keys) with its `step` by launch, the
    rule `launch_breakdown` applies to the same work: the step whose host window holds the start
    of the earliest host slice linked to the row (`host`: start_ns, args), else the step its own
    start lies in (no link: the profiler's rule, the stated fallback). So a kernel's or an HCCL
    op's row and the step breakdown put it in the same step."""
    frame = rows.with_row_index("row_id")
    anchors = launch_anchors(frame, host.with_row_index("row_id"))
    at = pl.coalesce(pl.col("host_ns"), pl.col("start_ns").cast(pl.Int64)).alias("_at")
    frame = frame.join(anchors, on="row_id", how="left", maintain_order="left")
    return assign_steps(frame.with_columns(at), steps, at="_at").drop("row_id", "host_ns", "_at")


def has_launch_links(device: pl.DataFrame) -> bool:
    """Whether any device work has a launch link (else the export carries no link to use)."""
    return device.height > 0 and device.get_column("anchor_ns").is_not_null().any()


def restep_by_launch(
    rows: pl.DataFrame, device: pl.DataFrame, steps: pl.DataFrame, name: str = "name"
) -> pl.DataFrame:
    """`rows` (a reader's kernels or comm_ops: `name`, start_ns, step) with the step of the
    device work they are (`device` of `launch_device_work`, matched on name and start): the step
    of its launch, else of its start, as `launch_breakdown` counts it. A row that is no work of
    the trace (a kernel_details.csv row the trace lacks) keeps its own step."""
    if rows.is_empty() or device.is_empty() or steps.is_empty():
        return rows
    at = pl.coalesce(pl.col("anchor_ns"), pl.col("start_ns")).alias("_at")
    key = device.select(pl.col("name").alias(name), "start_ns", at).unique(
        [name, "start_ns"], keep="first"
    )
    joined = rows.join(key, on=[name, "start_ns"], how="left", maintain_order="left")
    stepped = assign_steps(joined.rename({"step": "_own"}), steps, at="_at")
    step = pl.when(pl.col("_at").is_null()).then(pl.col("_own")).otherwise(pl.col("step"))
    return stepped.with_columns(step.cast(pl.Int32).alias("step")).select(rows.columns)


def launch_breakdown(
    slices: pl.DataFrame | None,
    steps: pl.DataFrame,
    work: tuple[pl.DataFrame, pl.DataFrame] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """(overlap slices, derived step_breakdown rows with launch_coverage) of one rank, None when
    no device work in `slices` has a launch link; `work`: `launch_device_work(slices)` when
    the caller has it already."""
    device, comm_ops = work if work is not None else launch_device_work(slices)
    if not has_launch_links(device):
        return None
    return derive_breakdown(device, steps, comm_ops, unlinked="start")
