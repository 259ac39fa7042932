"""One rank of a torch_npu text export (`*_ascend_pt` folder) -> RankFrames.

Reads whichever of these exist (each file on its own: a bad file is quarantined, the rest still
load): profiler_info_N.json, profiler_metadata.json and, in ASCEND_PROFILER_OUTPUT/ (or the
folder itself for a lone file), trace_view.json, kernel_details.csv, step_trace_time.csv,
communication.json, communication_matrix.json.

comm_ops: the top-level `hcom_*` ops of the trace's comm lane (exact ns) when the trace has them,
else kernel_details communication rows (exact ns); joined by op name with communication.json
(group hash, P2P/collective, wait/transit/sync times, bytes), whose ops missing from both are
added with its own (µs-float) times. Group kind (pp, tp, dp, ...) comes from
profiler_metadata.json `parallel_group_info` via double_hash; an op without `@hash` is matched by
the 3-digit group suffix in its name when that suffix is unique among the known groups.
Peer of a P2P op: the other member of a two-rank group, else the other end of the op's non-local
links in communication_matrix.json (group ranks, mapped to global ranks when the group is known).

step_breakdown: the profiler's rows (step_trace_time.csv, origin='profiler') and ours
(origin='derived': by launch from the trace's device tasks, HCCL ops and flows,
pipelines/ingest/steps/ascend_launch.py, with `launch_coverage`, a streamed trace too; else, for one
without flows, step_breakdown.from_trace over its Overlap Analysis lane; else from
kernel_details intervals by their Step Id, launch_coverage null), the derived rows judged
complete or not against the profiler's rows and the trace's ProfilerStep windows
(step_breakdown.assess).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from pipelines import stop
from pipelines.ingest import dropped as drop
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import SCHEMAS, Quarantined, RankFrames
from pipelines.ingest.readers.communication import (
    peer_from_links,
    read_communication_matrix_rows,
    read_communication_rows,
)
from pipelines.ingest.readers.hccl import is_p2p_op, op_group_suffix, op_type
from pipelines.ingest.readers.kernel_details import KernelDetails, read_kernel_details
from pipelines.ingest.readers.profiler_info import (
    ParallelGroup,
    ProfilerInfo,
    ProfilerMetadata,
    collected_at_from_names,
    find_profiler_info,
    group_by_suffix,
    groups_by_hash,
    read_profiler_info,
    read_profiler_metadata,
)
from pipelines.ingest.readers.step_trace import StepTrace, read_step_trace_time
from pipelines.ingest.readers.trace_view import TraceView, read_trace_view
from pipelines.ingest.steps import step_breakdown
from pipelines.ingest.steps.ascend_launch import (
    has_launch_links,
    launch_breakdown,
    launch_device_work,
    restep_by_launch,
)
from pipelines.vocabulary.profiler_names import (
    COMMUNICATION,
    COMMUNICATION_MATRIX,
    KERNEL_DETAILS,
    METADATA,
    OUTPUT_DIR,
    STEP_TRACE_TIME,
    TRACE_VIEW,
)

TEXT_FILES = (TRACE_VIEW, KERNEL_DETAILS, STEP_TRACE_TIME, COMMUNICATION, COMMUNICATION_MATRIX)
TRACE_VIEW_GZ = TRACE_VIEW + ".gz"  # read when there is no plain trace_view.json
TEXT_INPUTS = (*TEXT_FILES, TRACE_VIEW_GZ)

T = TypeVar("T")


def output_dir(rank_dir: Path) -> Path:
    """Where the exported files of a rank folder are."""
    child = rank_dir / OUTPUT_DIR
    return child if child.is_dir() else rank_dir


class _Attempts:
    """Runs each file reader, turning failures into quarantine records."""

    def __init__(self) -> None:
        self.quarantined: list[Quarantined] = []

    def read(self, path: Path, reader: Callable[[Path], T]) -> T | None:
        if not path.is_file():
            return None
        try:
            return reader(path)
        except QuarantineError as exc:
            self.quarantined.append(exc.quarantined(path))
        except Exception as exc:  # a reader bug must not stop the other files
            stop.raise_if_requested()  # a stop DuckDB surfaced as an error is no file's fault
            self.quarantined.append(
                Quarantined(str(path), "read_error", f"{type(exc).__name__}: {exc}"[:300])
            )
        return None

    def read_rows(
        self, path: Path, reader: Callable[[Path], tuple[pl.DataFrame, list[str]]]
    ) -> pl.DataFrame | None:
        """`read` of a reader that returns (rows, one `where: why` line per row left out); the
        lines become the file's `invalid_rows` quarantine row."""
        read = self.read(path, reader)
        if read is None:
            return None
        rows, set_aside = read
        if set_aside:
            self.quarantined.append(
                Quarantined.entries_set_aside(path, set_aside, reason="invalid_rows")
            )
        return rows


def _exact_comm(trace: TraceView | None, kernels: KernelDetails | None) -> pl.DataFrame:
    """Top-level comm ops with exact times: trace comm lane, else kernel_details comm rows."""
    schema = {
        "op": pl.String,
        "start_ns": pl.Int64,
        "dur_ns": pl.Int64,
        "step": pl.Int32,
        "thread_group": pl.String,
    }
    if trace is not None:
        ops = trace.lane("comm").filter(pl.col("name").str.to_lowercase().str.starts_with("hcom_"))
        if ops.height:
            return ops.select(
                pl.col("name").alias("op"),
                "start_ns",
                "dur_ns",
                "step",
                pl.col("thread")
                .str.strip_prefix("Group ")
                .str.replace(r"( Aicpu)? Communication$", "")
                .alias("thread_group"),
            ).cast(schema)
    if kernels is not None:
        rows = kernels.kernels.filter(pl.col("is_comm"))
        return rows.select(
            pl.col("name").alias("op"),
            "start_ns",
            "dur_ns",
            "step",
            pl.lit(None).alias("thread_group"),
        ).cast(schema)
    return pl.DataFrame(schema=schema)


def _peer(
    rank: int | None, op: str, group: ParallelGroup | None, links: pl.DataFrame | None
) -> int | None:
    if group is not None and len(group.global_ranks) == 2 and rank in group.global_ranks:
        return next(r for r in group.global_ranks if r != rank)
    if links is None or links.is_empty():
        return None
    me = rank
    if group is not None and rank in group.global_ranks:
        me = group.global_ranks.index(rank)
    if me is None:
        return None
    local = peer_from_links(links, op, me)
    if local is None or group is None:
        return local
    return group.global_ranks[local] if 0 <= local < len(group.global_ranks) else None


def build_comm_ops(
    rank: int | None,
    trace: TraceView | None,
    kernels: KernelDetails | None,
    communication: pl.DataFrame | None,
    matrix: pl.DataFrame | None,
    groups: list[ParallelGroup],
) -> pl.DataFrame:
    """Canonical comm_ops rows (without run_id/rank) of one rank; see the module docstring."""
    exact = _exact_comm(trace, kernels).unique("op", keep="first", maintain_order=True)
    if communication is not None and communication.height:
        info = communication.unique("op", keep="first", maintain_order=True).rename(
            {"start_ns": "json_start_ns", "dur_ns": "json_dur_ns", "step": "json_step"}
        )
        ops = exact.join(info, on="op", how="full", coalesce=True, maintain_order="left_right")
        ops = ops.with_columns(
            pl.coalesce("start_ns", "json_start_ns").alias("start_ns"),
            pl.coalesce("dur_ns", "json_dur_ns").alias("dur_ns"),
            pl.coalesce("step", "json_step").alias("step"),
        )
    else:
        ops = exact.with_columns(
            pl.lit(None, pl.String).alias("group_name"),
            pl.lit(None, pl.String).alias("kind"),
            *(pl.lit(None, pl.Int64).alias(c) for c in ("wait_ns", "transit_ns", "sync_ns")),
            pl.lit(None, pl.Int64).alias("bytes"),
        )
    by_hash = groups_by_hash(groups)
    rows: list[dict[str, Any]] = []
    for row in ops.iter_rows(named=True):
        name = row["op"]
        group_name = row.get("group_name")
        group = by_hash.get(group_name) if group_name else None
        if group_name is None:
            suffix = op_group_suffix(name)
            group = group_by_suffix(groups, suffix) if suffix else None
            group_name = group.hash if group else row.get("thread_group")
        p2p = row.get("kind") == "p2p" or is_p2p_op(name)
        rows.append(
            {
                "step": row["step"],
                "op": name,
                "op_type": op_type(name),
                "group_name": group_name,
                "group_kind": group.kind if group else None,
                "is_p2p": p2p,
                "peer": _peer(rank, name, group, matrix) if p2p else None,
                "bytes": row.get("bytes"),
                "start_ns": row["start_ns"],
                "dur_ns": row["dur_ns"],
                "wait_ns": row.get("wait_ns"),
                "transit_ns": row.get("transit_ns"),
                "sync_ns": row.get("sync_ns"),
            }
        )
    schema = {k: v for k, v in SCHEMAS["comm_ops"].items() if k not in ("run_id", "rank")}
    return pl.DataFrame(rows, schema=schema).filter(pl.col("start_ns").is_not_null())


def _breakdown(
    trace: TraceView | None,
    kernels: KernelDetails | None,
    profiler: StepTrace | None,
    launch: tuple[pl.DataFrame, pl.DataFrame] | None,
) -> pl.DataFrame:
    frames = []
    if profiler is not None:
        frames.append(profiler.rows)
    derived = None
    if trace is not None and launch is not None:
        derived = launch_breakdown(None, trace.steps, work=launch)[1]
    if (derived is None or derived.is_empty()) and trace is not None:
        # no launch link in the trace: the profiler's own
        # rule, Overlap Analysis slices by the step their start lies in (launch_coverage null)
        derived = step_breakdown.from_trace(trace.for_derivations(), trace.steps)
    if (derived is None or derived.is_empty()) and kernels is not None:
        derived = step_breakdown.from_kernels(kernels.kernels)
    if derived is not None and derived.height:
        frames.append(derived)
    if not frames:
        return pl.DataFrame()
    rows = pl.concat(frames, how="diagonal_relaxed")
    return step_breakdown.assess(rows, trace.steps if trace is not None else None)


def _launch_work(trace: TraceView | None) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """The trace's device work with its launch anchors
    (pipelines/ingest/steps/ascend_launch.py: device tasks, HCCL ops and their flows `async_npu`,
    `HostToDevice`), None without a trace or when no device work has a flow. A streamed read
    gives the rows it kept for this in memory (`TraceView.launch`, args cut to the link keys).
    The derived rows by launch come from it; the trace's own Overlap Analysis lane stays the
    timeline's overlap lane."""
    if trace is None:
        return None
    if trace.launch is not None:
        rows = trace.launch
    elif isinstance(trace.slices, pl.DataFrame) and "args" in trace.slices.columns:
        rows = trace.slices.filter(pl.col("lane").is_in(["compute", "comm", "host"]))
    else:
        return None
    work = launch_device_work(rows)
    return work if has_launch_links(work[0]) else None


def _restep(
    rows: pl.DataFrame,
    trace: TraceView | None,
    launch: tuple[pl.DataFrame, pl.DataFrame] | None,
    name: str = "name",
) -> pl.DataFrame:
    """Rows stepped by launch (ascend_launch.restep_by_launch) when the trace has launch links."""
    if trace is None or launch is None:
        return rows
    return restep_by_launch(rows, launch[0], trace.steps, name=name)


def _info(info: ProfilerInfo | None, metadata: ProfilerMetadata | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if info is not None:
        if info.software:
            out["software"] = info.software
        if info.collected_at:
            out["collected_at"] = info.collected_at
        if info.profiler_level:
            out["profiler_level"] = info.profiler_level
        if info.export_type:
            out["export_type"] = info.export_type
    if metadata is not None:
        out["groups"] = [g.as_json() for g in metadata.groups]
        out["distributed_args"] = metadata.distributed_args
        out["conventions"] = metadata.conventions
    return out


def read_rank(rank_dir: Path) -> RankFrames:
    """Read one rank folder of a text export; never raises for bad files (they are quarantined)."""
    attempts = _Attempts()
    info_path = find_profiler_info(rank_dir)
    info = attempts.read(info_path, read_profiler_info) if info_path else None
    if info is not None and info.rank_problem:
        fallback = "file-name rank" if info.rank is not None else "no rank"
        attempts.quarantined.append(
            Quarantined(str(info_path), "unparsable_rank", f"{info.rank_problem}; using {fallback}")
        )
    metadata = attempts.read(rank_dir / METADATA, read_profiler_metadata)
    out = output_dir(rank_dir)
    trace_path = out / TRACE_VIEW if (out / TRACE_VIEW).is_file() else out / TRACE_VIEW_GZ
    trace = attempts.read(trace_path, read_trace_view)
    if trace is not None and trace.set_aside:
        invalid = any(line.startswith("traceEvents[") for line in trace.set_aside)
        attempts.quarantined.append(
            Quarantined.entries_set_aside(
                trace_path,
                trace.set_aside,
                trace.set_aside_count,
                reason="invalid_event" if invalid else "invalid_rows",
            )
        )
    kernels = attempts.read(out / KERNEL_DETAILS, read_kernel_details)
    if kernels is not None and kernels.set_aside:
        attempts.quarantined.append(
            Quarantined.entries_set_aside(
                out / KERNEL_DETAILS, kernels.set_aside, kernels.unusable, reason="invalid_rows"
            )
        )
    if kernels is not None and kernels.repaired:
        attempts.quarantined.append(
            Quarantined.entries_repaired(out / KERNEL_DETAILS, kernels.repaired)
        )
    steps = attempts.read(out / STEP_TRACE_TIME, read_step_trace_time)
    if steps is not None and steps.set_aside:
        attempts.quarantined.append(
            Quarantined.entries_set_aside(
                out / STEP_TRACE_TIME, steps.set_aside, reason="invalid_rows"
            )
        )
    communication = attempts.read_rows(out / COMMUNICATION, read_communication_rows)
    matrix = attempts.read_rows(out / COMMUNICATION_MATRIX, read_communication_matrix_rows)

    rank = info.rank if info is not None else None
    if rank is None and metadata is not None:
        candidate = metadata.distributed_args.get("rank")
        rank = candidate if isinstance(candidate, int) and candidate >= 0 else None
    device_id = next(
        (
            source.device_id
            for source in (kernels, steps, trace)
            if source is not None and source.device_id is not None
        ),
        None,
    )
    groups = metadata.groups if metadata is not None else []
    tables: dict[str, pl.DataFrame] = {}
    if trace is not None:
        tables["slices"] = trace.slices
    # kernels and comm ops in the step that launched them, as the derived breakdown counts them
    launch = _launch_work(trace)
    if kernels is not None:
        tables["kernels"] = _restep(kernels.kernels, trace, launch)
    comm_ops = build_comm_ops(rank, trace, kernels, communication, matrix, groups)
    if comm_ops.height:
        tables["comm_ops"] = _restep(comm_ops, trace, launch, name="op")
    breakdown = _breakdown(trace, kernels, steps, launch)
    if breakdown.height:
        tables["step_breakdown"] = breakdown
    run_info = _info(info, metadata)
    if "collected_at" not in run_info and (named := collected_at_from_names(rank_dir)):
        run_info["collected_at"] = named
    dropped = drop.merged(*(r.dropped for r in (trace, kernels) if r is not None))
    return RankFrames(
        rank=rank,
        device_id=device_id,
        source_path=str(rank_dir),
        tables=tables,
        info=run_info,
        quarantined=attempts.quarantined,
        dropped=dropped,
    )
