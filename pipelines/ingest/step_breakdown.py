"""Our own per-rank, per-step time breakdown (step_breakdown rows, origin='derived').

From a trace_view (the profiler's algorithm, torch_npu `TraceStepTimeParser`, ascend_formats §4):
every device event (compute, comm and overlap lanes) named Computing, Communication,
Communication(Not Overlapped) or Free adds its duration to that column; every event whose name
starts with `hcom_receive` adds to `bubble`. An event belongs to step N when it starts inside
ProfilerStep#N. Then overlapped = communication - comm_not_overlapped;
stage = (last end - first start over those events) - bubble;
comm_not_overlapped_excl_receive = comm_not_overlapped - bubble;
preparing = first Computing/Communication start - ProfilerStep#N start.
On the real exports this reproduces step_trace_time.csv: the sums to the nanosecond, stage and
preparing to within the profiler's float64 rounding of microsecond timestamps (< 1 µs).

From kernel_details alone (no trace): the same columns by interval-union arithmetic over the
kernel rows of each `Step Id`: computing = |∪ compute kernels|, communication = |∪ comm ops|,
comm_not_overlapped = |∪ comm − ∪ compute|, free = device window − |∪ all|, bubble = Σ hcom_receive
durations, stage = window − bubble. preparing needs the host step start and stays NULL.

`p2p_bubble_ns` (ours): the time of the step during which the rank is inside a point-to-point op
(`hcom_send*`, `hcom_receive*`, `hcom_*SendRecv*`, any case) and computes nothing:
|∪ p2p op intervals − ∪ compute intervals|. On a pipeline stage this is the time the stage sits
waiting for (or exposing the transfer of) activations from its neighbour — the pipeline bubble
as the rank experiences it — whatever the P2P API. The profiler's `Bubble` counts only
`hcom_receive*`, so it is 0 for `batch_isend_irecv` (`hcom_batchSendRecv`) pipelines (set A).
Compute intervals are the Overlap Analysis `Computing` slices (trace) or the non-communication
kernel rows (kernel_details).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

from pipelines.ingest.hccl import P2P_REGEX, RECEIVE_REGEX
from pipelines.intervals import difference, intersection, length

OVERLAP_COLUMNS = {
    "Computing": "computing_ns",
    "Communication": "communication_ns",
    "Communication(Not Overlapped)": "comm_not_overlapped_ns",
    "Free": "free_ns",
}
DEVICE_LANES = ("compute", "comm", "overlap")
BREAKDOWN_COLUMNS = (
    "step",
    "origin",
    "computing_ns",
    "communication_ns",
    "comm_not_overlapped_ns",
    "overlapped_ns",
    "free_ns",
    "stage_ns",
    "bubble_ns",
    "comm_not_overlapped_excl_receive_ns",
    "preparing_ns",
    "p2p_bubble_ns",
)
_SCHEMA = {
    c: (pl.String if c == "origin" else pl.Int32 if c == "step" else pl.Int64)
    for c in BREAKDOWN_COLUMNS
}


def _spans(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    starts = frame["start_ns"].to_numpy().astype(np.int64)
    return starts, starts + frame["dur_ns"].to_numpy().astype(np.int64)


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=_SCHEMA)


def _groups(frame: pl.DataFrame, steps_known: bool) -> Iterable[tuple[int | None, pl.DataFrame]]:
    if steps_known:
        frame = frame.filter(pl.col("step").is_not_null())
    for (step,), part in frame.group_by(["step"], maintain_order=True):
        yield step, part


def _p2p_names(names: pl.Series) -> pl.Series:
    return names.str.contains(P2P_REGEX)


def _receive_names(names: pl.Series) -> pl.Series:
    return names.str.contains(RECEIVE_REGEX)


def from_trace(slices: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """Derived rows from trace slices (lane, name, start_ns, dur_ns, step) and the ProfilerStep
    windows (step, start_ns, end_ns); empty when the trace has no Overlap Analysis lane."""
    device = slices.filter(pl.col("lane").is_in(DEVICE_LANES))
    overlap = device.filter(
        (pl.col("lane") == "overlap") & pl.col("name").is_in(list(OVERLAP_COLUMNS))
    )
    if overlap.is_empty():
        return _empty()
    receive = device.filter(_receive_names(device["name"]))
    comm = slices.filter(pl.col("lane") == "comm")
    p2p = comm.filter(_p2p_names(comm["name"]))
    step_start = dict(zip(steps["step"].to_list(), steps["start_ns"].to_list(), strict=True))
    steps_known = not steps.is_empty()
    rows = []
    for step, part in _groups(pl.concat([overlap, receive]), steps_known):
        sums = {
            column: int(part.filter(pl.col("name") == name)["dur_ns"].sum())
            for name, column in OVERLAP_COLUMNS.items()
        }
        bubble = int(part.filter(_receive_names(part["name"]))["dur_ns"].sum())
        starts, ends = _spans(part)
        tasks = part.filter(pl.col("name").is_in(["Computing", "Communication"]))
        first_task = tasks["start_ns"].min() if tasks.height else None
        computing = part.filter(pl.col("name") == "Computing")
        step_p2p = p2p.filter(pl.col("step").is_null() if step is None else pl.col("step") == step)
        rows.append(
            _row(
                step,
                sums,
                window=int(ends.max() - starts.min()),
                bubble=bubble,
                preparing=(
                    first_task - step_start[step]
                    if first_task is not None and step in step_start
                    else None
                ),
                p2p_bubble=difference(_spans(step_p2p), _spans(computing)),
            )
        )
    return pl.DataFrame(rows, schema=_SCHEMA)


def from_kernels(kernels: pl.DataFrame) -> pl.DataFrame:
    """Derived rows from kernel rows (name, start_ns, dur_ns, step, is_comm) by union arithmetic."""
    if kernels.is_empty():
        return _empty()
    rows = []
    for step, part in _groups(kernels, steps_known=False):
        compute = _spans(part.filter(~pl.col("is_comm")))
        comm_rows = part.filter(pl.col("is_comm"))
        comm = _spans(comm_rows)
        p2p = _spans(comm_rows.filter(_p2p_names(comm_rows["name"])))
        bubble = int(comm_rows.filter(_receive_names(comm_rows["name"]))["dur_ns"].sum())
        starts, ends = _spans(part)
        window = int(ends.max() - starts.min())
        communication = length(*comm)
        not_overlapped = communication - intersection(comm, compute)
        sums = {
            "computing_ns": length(*compute),
            "communication_ns": communication,
            "comm_not_overlapped_ns": not_overlapped,
            "free_ns": window - length(starts, ends),
        }
        rows.append(
            _row(step, sums, window, bubble, preparing=None, p2p_bubble=difference(p2p, compute))
        )
    return pl.DataFrame(rows, schema=_SCHEMA)


def _row(
    step: int | None,
    sums: dict[str, int],
    window: int,
    bubble: int,
    preparing: int | None,
    p2p_bubble: int,
) -> dict[str, int | str | None]:
    return {
        "step": step,
        "origin": "derived",
        **sums,
        "overlapped_ns": sums["communication_ns"] - sums["comm_not_overlapped_ns"],
        "stage_ns": window - bubble,
        "bubble_ns": bubble,
        "comm_not_overlapped_excl_receive_ns": sums["comm_not_overlapped_ns"] - bubble,
        "preparing_ns": preparing,
        "p2p_bubble_ns": p2p_bubble,
    }
