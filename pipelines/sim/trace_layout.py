"""What every trace writer derives from a SimResult: ranks and their devices, step windows,
chunk-marker names, point-to-point transfer pairs, and the profiler's overlap lanes.

Conventions shared by the Ascend, Kineto and Chrome writers:
- ranks are the distinct `rank` values of the task table; rank r sits on device r % 8 of a
  host process with OS pid `BASE_OS_PID + r`;
- step windows come from `meta["steps_ns"]` ([start_ns, end_ns] per scheduling step) when the
  simulator provides them, else one window spanning the whole run (all ranks); steps are numbered
  from 1 (ProfilerStep#1 ...);
- compute tasks of a request listed in `result.requests` are prefill chunks and get a
  `chunk[req=..,k=..,vs=..,tokens=..,prefix=..]` host range; other compute tasks (a single-device
  run's decode batches) are background work named `<request_id>[step=N,tokens=..]`, N being the
  ProfilerStep#N that holds them;
- a send and a recv are the two ends of one transfer when they belong to the same request and
  chunk and the recv's virtual stage follows the send's (sends carry the producing stage, recvs
  the consuming one, as pipelines/sim/task_order.py writes them);
- overlap lanes follow the Ascend profiler (ascend_formats §3.5, §4): device events belong to the
  step whose window holds their start; per step, Computing = union of compute tasks,
  Communication = union of comm ops, Communication(Not Overlapped) = Communication minus
  Computing, Free = the gaps inside [first event start, last event end) covered by neither
  (the readers' derivation, pipelines/overlap.overlap_lanes); p2p_bubble_ns is the time inside
  point-to-point ops (every simulated transfer is one) with no compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.sim.result import SimResult
from pipelines.sim.trace_shape import split_packed_steps
from pipelines.vocabulary.intervals import assign_steps
from pipelines.vocabulary.overlap import breakdown_rows
from pipelines.vocabulary.overlap import overlap_lanes as derive_lanes
from pipelines.vocabulary.profiler_names import P2P_REGEX, RECEIVE_REGEX, double_hash, group_suffix

DEFAULT_EPOCH_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z: t=0 of a simulated run
BASE_OS_PID = 200_000
DEVICES_PER_HOST = 8
P2P_GROUP_KIND = "pp"


def rank_ids(result: SimResult) -> list[int]:
    """Distinct ranks of the task table, ascending."""
    return sorted(int(r) for r in result.tasks["rank"].unique().to_list())


def device_of(rank: int) -> int:
    return rank % DEVICES_PER_HOST


def os_pid_of(rank: int) -> int:
    return BASE_OS_PID + rank


def epoch_of(result: SimResult, epoch_ns: int | None = None) -> int:
    """Absolute epoch (ns) of the simulated t=0."""
    if epoch_ns is not None:
        return int(epoch_ns)
    return int(result.meta.get("epoch_ns", DEFAULT_EPOCH_NS))


def step_windows(result: SimResult) -> pl.DataFrame:
    """step (1-based), start_ns, end_ns: the scheduling steps, or one window for the whole run."""
    steps = result.meta.get("steps_ns")
    if steps:
        bounds = np.asarray(steps, dtype=np.int64).reshape(-1, 2)
    else:
        bounds = np.array(
            [[int(result.tasks["start_ns"].min()), int(result.tasks["end_ns"].max())]],
            dtype=np.int64,
        )
    return pl.DataFrame(
        {
            "step": np.arange(1, len(bounds) + 1, dtype=np.int32),
            "start_ns": bounds[:, 0],
            "end_ns": bounds[:, 1],
        }
    )


def _with_step(frame: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """`frame` with an Int32 `step` column: the window holding its start, 0 outside all."""
    return assign_steps(frame, steps).with_columns(pl.col("step").fill_null(0))


def chunk_marker_name(
    request_id: str, chunk_idx: int, vstage: int, tokens: int, prefix_tokens: int
) -> str:
    """The host range name of one chunk (docs/tau_k.md §1 convention)."""
    fields = f"req={request_id},k={chunk_idx},vs={vstage},tokens={tokens},prefix={prefix_tokens}"
    return f"chunk[{fields}]"


def compute_tasks(result: SimResult, rank: int) -> pl.DataFrame:
    """Compute tasks of one rank in time order, with `is_chunk`, `marker` (host range name) and
    `step` columns; a packed scheduler step as one task per request piece."""
    chunk_ids = result.requests["request_id"]
    steps = step_windows(result)
    tasks = result.tasks.filter((pl.col("rank") == rank) & (pl.col("kind") == "compute")).sort(
        "start_ns", "end_ns"
    )
    # a packed step: one task per request piece, each with its own chunk marker
    tasks = split_packed_steps(tasks, result)
    is_chunk = pl.col("request_id").is_in(chunk_ids.implode())
    marker = (
        pl.when(is_chunk)
        .then(
            pl.format(
                "chunk[req={},k={},vs={},tokens={},prefix={}]",
                "request_id",
                "chunk_idx",
                "vstage",
                "tokens",
                "prefix_tokens",
            )
        )
        .otherwise(pl.format("{}[step={},tokens={}]", "request_id", "step", "tokens"))
    )
    tasks = _with_step(tasks, steps)
    return tasks.with_columns(is_chunk.alias("is_chunk"), marker.alias("marker"))


@dataclass(frozen=True)
class P2PGroup:
    """The pipeline communicator every simulated transfer uses."""

    group_id: str
    ranks: tuple[int, ...]

    @property
    def hash(self) -> int:
        return double_hash(self.group_id)

    @property
    def suffix(self) -> str:
        """Last three digits of the hash: the `<G3>` field of hcom op names."""
        return group_suffix(self.hash)


def tp_ranks_of(result: SimResult) -> int:
    """TP ranks written per pipeline stage: 1, or meta["tp_ranks"] when the run was expanded to
    one rank per TP rank (pipelines.sim.trace_shape.expand_tp_ranks: rank = stage * tp + t)."""
    return int(result.meta.get("tp_ranks") or 1)


def p2p_group(result: SimResult, rank: int = 0) -> P2PGroup:
    """The pipeline communicator of `rank`: one for the whole run, or with TP ranks written one
    per TP index t (the ranks with the same t in every stage, as Megatron / vLLM build them)."""
    tp = tp_ranks_of(result)
    if tp == 1:
        return P2PGroup(group_id="tracereplay-sim%pp_0", ranks=tuple(rank_ids(result)))
    t = rank % tp
    ranks = tuple(r for r in rank_ids(result) if r % tp == t)
    return P2PGroup(group_id=f"tracereplay-sim%pp_{t}", ranks=ranks)


def collective_group_id(result: SimResult, group: str, rank: int) -> str:
    """Communicator of a TP / EP collective: one per kind, or one per stage with TP ranks."""
    tp = tp_ranks_of(result)
    return f"tracereplay-sim%{group}_{rank // tp if tp > 1 else 0}"


COLLECTIVE_OPS = {"allreduce": ("allReduce", "tp"), "alltoall": ("alltoAll", "ep")}


def collective_ops(result: SimResult) -> pl.DataFrame:
    """Every TP / EP collective task as an HCCL op: `hcom_allReduce__<G3>_<idx>_1` on the TP group,
    `hcom_alltoAll__<G3>_<idx>_1` on the EP group (idx counts the rank's ops of that type in
    start order), with `transfer` -1, `peer` -1 and `step`."""
    frames = []
    for kind, (op_type, group) in COLLECTIVE_OPS.items():
        ops = result.tasks.filter(pl.col("kind") == kind).sort("rank", "start_ns")
        if ops.is_empty():
            continue
        suffix = {
            r: group_suffix(double_hash(collective_group_id(result, group, r)))
            for r in ops["rank"].unique().to_list()
        }
        frames.append(
            ops.with_columns(
                pl.lit(-1, pl.Int64).alias("transfer"),
                pl.lit(-1, pl.Int32).alias("peer"),
                pl.format(
                    "hcom_{}__{}_{}_1",
                    pl.lit(op_type),
                    pl.col("rank").replace_strict(suffix, return_dtype=pl.String),
                    pl.int_range(pl.len()).over("rank"),
                ).alias("op"),
            )
        )
    if not frames:
        return pl.DataFrame()
    return _with_step(pl.concat(frames), step_windows(result))


def comm_ops(result: SimResult) -> pl.DataFrame:
    """Every send/recv task with its transfer: `transfer` (index shared by both ends, in order of
    the transfer's first start), `peer` (rank at the other end, -1 when unpaired), `op`
    (`hcom_send__<G3>_<idx>_1` / `hcom_receive__<G3>_<idx>_1`) and `step`; then the TP / EP
    collectives (collective_ops), all in start order."""
    p2p = _p2p_ops(result)
    collectives = collective_ops(result)
    if collectives.is_empty():
        return p2p
    return pl.concat([p2p, collectives.select(p2p.columns)]).sort("start_ns", "end_ns", "rank")


def _p2p_ops(result: SimResult) -> pl.DataFrame:
    comm = result.tasks.filter(pl.col("kind").is_in(["send", "recv"]))
    if comm.is_empty():
        return comm.with_columns(
            pl.lit(0, pl.Int64).alias("transfer"),
            pl.lit(-1, pl.Int32).alias("peer"),
            pl.lit("").alias("op"),
            pl.lit(0, pl.Int32).alias("step"),
        )
    key = ["request_id", "chunk_idx", "_hop", "_t"]
    tp = tp_ranks_of(result)
    ordered = comm.with_columns(
        pl.when(pl.col("kind") == "send")
        .then(pl.col("vstage") + 1)
        .otherwise(pl.col("vstage"))
        .alias("_hop"),
        (pl.col("rank") % tp).alias("_t"),
    )
    ends = ordered.group_by(key).agg(
        pl.col("rank").filter(pl.col("kind") == "send").first().alias("_src"),
        pl.col("rank").filter(pl.col("kind") == "recv").first().alias("_dst"),
        pl.col("start_ns").min().alias("_first"),
    )
    ends = ends.sort("_first", *key).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).over("_t").alias("transfer")
    )
    suffix = {t: p2p_group(result, t).suffix for t in range(tp)}
    steps = step_windows(result)
    out = ordered.join(ends, on=key).with_columns(
        pl.when(pl.col("kind") == "send")
        .then(pl.col("_dst"))
        .otherwise(pl.col("_src"))
        .fill_null(-1)
        .cast(pl.Int32)
        .alias("peer"),
        pl.format(
            "hcom_{}__{}_{}_1",
            pl.when(pl.col("kind") == "send").then(pl.lit("send")).otherwise(pl.lit("receive")),
            pl.col("_t").replace_strict(suffix, return_dtype=pl.String),
            "transfer",
        ).alias("op"),
    )
    out = out.drop("_hop", "_src", "_dst", "_first", "_t").sort("start_ns", "end_ns", "rank")
    return _with_step(out, steps)


@dataclass(frozen=True)
class OverlapLanes:
    """One rank's overlap lanes: `slices` (step, name, start_ns, end_ns) and `steps` (one row per
    step with device work: the step_breakdown columns computing_ns ... p2p_bubble_ns, without
    origin, plus window_start_ns/window_end_ns and complete = true, incomplete_reason null)."""

    slices: pl.DataFrame
    steps: pl.DataFrame


def overlap_lanes(compute: pl.DataFrame, comm: pl.DataFrame, steps: pl.DataFrame) -> OverlapLanes:
    """Overlap lanes of one rank. `compute` and `comm` have start_ns, end_ns (comm also `op`);
    `steps` has step, start_ns, end_ns (host windows). Tasks outside every window are left out."""
    events = pl.concat(
        [
            compute.select(pl.lit("compute").alias("kind"), "start_ns", "end_ns"),
            comm.select(pl.lit("comm").alias("kind"), "start_ns", "end_ns"),
            comm.filter(pl.col("op").str.contains(P2P_REGEX)).select(
                pl.lit("p2p").alias("kind"), "start_ns", "end_ns"
            ),
        ]
    )
    events = assign_steps(events, steps).filter(pl.col("step").is_not_null())
    lanes, totals = derive_lanes(events.rename({"step": "group"}))
    receive = assign_steps(comm.filter(pl.col("op").str.contains(RECEIVE_REGEX)), steps)
    rows = breakdown_rows(
        totals,
        receive.select(
            pl.col("step").alias("group"), (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns")
        ),
        steps.select(pl.col("step").alias("group"), "start_ns"),
    )
    slices = lanes.select(
        pl.col("group").cast(pl.Int32).alias("step"),
        "name",
        "start_ns",
        (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
    ).sort("start_ns", "name")
    # exact and complete: the lanes are computed from every simulated task of the step
    rows = rows.drop("origin").with_columns(
        pl.lit(True).alias("complete"), pl.lit(None, pl.String).alias("incomplete_reason")
    )
    return OverlapLanes(slices=slices, steps=rows)


def rank_overlap(result: SimResult, rank: int) -> OverlapLanes:
    """Overlap lanes of one rank of a simulated run."""
    compute = compute_tasks(result, rank)
    comm = comm_ops(result).filter(pl.col("rank") == rank)
    return overlap_lanes(compute, comm, step_windows(result))
