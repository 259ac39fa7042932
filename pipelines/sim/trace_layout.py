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
  the consuming one, as pipelines/sim/schedules.py writes them);
- overlap lanes follow the Ascend profiler (ascend_formats §3.5, §4): device events belong to the
  step whose window holds their start; per step, Computing = union of compute tasks,
  Communication = union of comm ops, Communication(Not Overlapped) = Communication minus
  Computing, Free = the gaps inside [first event start, last event end) covered by neither.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.ingest.profiler_info import double_hash
from pipelines.intervals import assign_steps
from pipelines.sim.result import SimResult

DEFAULT_EPOCH_NS = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z: t=0 of a simulated run
BASE_OS_PID = 200_000
DEVICES_PER_HOST = 8
COMPUTING = "Computing"
COMMUNICATION = "Communication"
NOT_OVERLAPPED = "Communication(Not Overlapped)"
FREE = "Free"
OVERLAP_LANES = (COMPUTING, COMMUNICATION, NOT_OVERLAPPED, FREE)
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
    """The host range name of one chunk (DESIGN.md convention)."""
    fields = f"req={request_id},k={chunk_idx},vs={vstage},tokens={tokens},prefix={prefix_tokens}"
    return f"chunk[{fields}]"


def compute_tasks(result: SimResult, rank: int) -> pl.DataFrame:
    """Compute tasks of one rank in time order, with `is_chunk`, `marker` (host range name) and
    `step` columns."""
    chunk_ids = result.requests["request_id"]
    steps = step_windows(result)
    tasks = result.tasks.filter((pl.col("rank") == rank) & (pl.col("kind") == "compute")).sort(
        "start_ns", "end_ns"
    )
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
        return f"{self.hash % 1000:03d}"


def p2p_group(result: SimResult) -> P2PGroup:
    return P2PGroup(group_id="tracereplay-sim%pp_0", ranks=tuple(rank_ids(result)))


def comm_ops(result: SimResult) -> pl.DataFrame:
    """Every send/recv task with its transfer: `transfer` (index shared by both ends, in order of
    the transfer's first start), `peer` (rank at the other end, -1 when unpaired), `op`
    (`hcom_send__<G3>_<idx>_1` / `hcom_receive__<G3>_<idx>_1`) and `step`."""
    comm = result.tasks.filter(pl.col("kind").is_in(["send", "recv"]))
    if comm.is_empty():
        return comm.with_columns(
            pl.lit(0, pl.Int64).alias("transfer"),
            pl.lit(-1, pl.Int32).alias("peer"),
            pl.lit("").alias("op"),
            pl.lit(0, pl.Int32).alias("step"),
        )
    key = ["request_id", "chunk_idx", "_hop"]
    ordered = comm.with_columns(
        pl.when(pl.col("kind") == "send")
        .then(pl.col("vstage") + 1)
        .otherwise(pl.col("vstage"))
        .alias("_hop")
    )
    ends = ordered.group_by(key).agg(
        pl.col("rank").filter(pl.col("kind") == "send").first().alias("_src"),
        pl.col("rank").filter(pl.col("kind") == "recv").first().alias("_dst"),
        pl.col("start_ns").min().alias("_first"),
    )
    ends = ends.sort("_first", *key).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("transfer")
    )
    suffix = p2p_group(result).suffix
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
            pl.lit(suffix),
            "transfer",
        ).alias("op"),
    )
    out = out.drop("_hop", "_src", "_dst", "_first").sort("start_ns", "end_ns", "rank")
    return _with_step(out, steps)


@dataclass(frozen=True)
class OverlapLanes:
    """One rank's overlap lanes: `slices` (step, name, start_ns, end_ns) and `steps` (one row per
    step with device work: computing/communication/comm_not_overlapped/overlapped/free/bubble/
    stage/preparing in ns plus window_start_ns/window_end_ns)."""

    slices: pl.DataFrame
    steps: pl.DataFrame


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of intervals (touching ones merge) as sorted disjoint (starts, ends)."""
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new = np.concatenate(([True], s[1:] > reach[:-1]))
    first = np.flatnonzero(new)
    return s[first], np.maximum.reduceat(e, first)


def _covered(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Whether each point lies inside one of the disjoint sorted intervals [start, end)."""
    if len(starts) == 0:
        return np.zeros(len(points), dtype=bool)
    idx = np.searchsorted(starts, points, side="right") - 1
    return (idx >= 0) & (points < ends[np.clip(idx, 0, None)])


def _runs(left: np.ndarray, right: np.ndarray, mask: np.ndarray) -> list[tuple[int, int]]:
    """Merge the selected consecutive elementary segments into maximal intervals."""
    a, b = left[mask], right[mask]
    if len(a) == 0:
        return []
    new = np.concatenate(([True], a[1:] != b[:-1]))
    last = np.concatenate((new[1:], [True]))
    return list(zip(a[new].tolist(), b[last].tolist(), strict=True))


def overlap_lanes(compute: pl.DataFrame, comm: pl.DataFrame, steps: pl.DataFrame) -> OverlapLanes:
    """Overlap lanes of one rank. `compute` and `comm` have start_ns, end_ns (comm also `op`);
    `steps` has step, start_ns, end_ns (host windows)."""
    c_step = _with_step(compute, steps)["step"].to_numpy()
    m_step = _with_step(comm, steps)["step"].to_numpy()
    c_s, c_e = compute["start_ns"].to_numpy(), compute["end_ns"].to_numpy()
    m_s, m_e = comm["start_ns"].to_numpy(), comm["end_ns"].to_numpy()
    receive = (
        comm["op"].str.starts_with("hcom_receive").to_numpy()
        if comm.height
        else np.zeros(0, dtype=bool)
    )
    host_start = dict(zip(steps["step"].to_list(), steps["start_ns"].to_list(), strict=True))
    lane_rows: list[tuple[int, str, int, int]] = []
    step_rows: list[dict[str, int]] = []
    for step in np.unique(np.concatenate([c_step, m_step])):
        if step == 0:
            continue
        cs, ce = _union(c_s[c_step == step], c_e[c_step == step])
        ms, me = _union(m_s[m_step == step], m_e[m_step == step])
        points = np.unique(np.concatenate([cs, ce, ms, me]))
        left, right = points[:-1], points[1:]
        in_c, in_m = _covered(left, cs, ce), _covered(left, ms, me)
        lanes = {
            COMPUTING: _runs(left, right, in_c),
            COMMUNICATION: _runs(left, right, in_m),
            NOT_OVERLAPPED: _runs(left, right, in_m & ~in_c),
            FREE: _runs(left, right, ~in_m & ~in_c),
        }
        totals = {name: sum(b - a for a, b in iv) for name, iv in lanes.items()}
        for name, intervals in lanes.items():
            lane_rows.extend((int(step), name, a, b) for a, b in intervals)
        window_start, window_end = int(points[0]), int(points[-1])
        rec = m_step == step
        bubble = int((m_e[rec & receive] - m_s[rec & receive]).sum())
        step_rows.append(
            {
                "step": int(step),
                "computing_ns": totals[COMPUTING],
                "communication_ns": totals[COMMUNICATION],
                "comm_not_overlapped_ns": totals[NOT_OVERLAPPED],
                "overlapped_ns": totals[COMMUNICATION] - totals[NOT_OVERLAPPED],
                "free_ns": totals[FREE],
                "bubble_ns": bubble,
                "stage_ns": window_end - window_start - bubble,
                "comm_not_overlapped_excl_receive_ns": totals[NOT_OVERLAPPED] - bubble,
                "preparing_ns": window_start - int(host_start[int(step)]),
                "window_start_ns": window_start,
                "window_end_ns": window_end,
            }
        )
    slices = pl.DataFrame(
        lane_rows,
        schema={"step": pl.Int32, "name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64},
        orient="row",
    ).sort("start_ns", "name")
    columns = [
        "step",
        "computing_ns",
        "communication_ns",
        "comm_not_overlapped_ns",
        "overlapped_ns",
        "free_ns",
        "bubble_ns",
        "stage_ns",
        "comm_not_overlapped_excl_receive_ns",
        "preparing_ns",
        "window_start_ns",
        "window_end_ns",
    ]
    frame = pl.DataFrame(step_rows, schema=dict.fromkeys(columns, pl.Int64), orient="row")
    return OverlapLanes(slices=slices, steps=frame.with_columns(pl.col("step").cast(pl.Int32)))


def rank_overlap(result: SimResult, rank: int) -> OverlapLanes:
    """Overlap lanes of one rank of a simulated run."""
    compute = compute_tasks(result, rank)
    comm = comm_ops(result).filter(pl.col("rank") == rank)
    return overlap_lanes(compute, comm, step_windows(result))
