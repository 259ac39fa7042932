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

From device intervals, where there are no Overlap Analysis lanes to sum (kernel_details alone,
Ascend SQLite exports, Kineto traces, and the simulator's trace writer, which draws these lanes):
one derivation, `overlap_lanes`, following the Ascend profiler (torch_npu trace step parser /
msprof overlap analysis). Per step: Computing = ∪ compute tasks, Communication = ∪ communication
ops, Communication(Not Overlapped) = Communication − Computing, overlapped = Communication ∩
Computing, Free = the gaps inside the step's device window [first start, last end);
bubble = Σ `hcom_receive*` durations, stage = window − bubble, preparing = first device start −
host step start (NULL without a host step). A device event belongs to the step whose host window
holds its start (`derive_breakdown`) or to its kernel_details `Step Id` (`from_kernels`).
Verified to reproduce analysis.db StepTraceTime exactly on the real SQLite export
(tests/ingest/test_ascend_db.py) and step_trace_time.csv from kernel_details (real set A).

`p2p_bubble_ns` (ours): the time of the step during which the rank is inside a point-to-point op
(`hcom_send*`, `hcom_receive*`, `hcom_*SendRecv*`, any case) and computes nothing:
|∪ p2p op intervals − ∪ compute intervals|. On a pipeline stage this is the time the stage sits
waiting for (or exposing the transfer of) activations from its neighbour — the pipeline bubble
as the rank experiences it — whatever the P2P API. The profiler's `Bubble` counts only
`hcom_receive*`, so it is 0 for `batch_isend_irecv` (`hcom_batchSendRecv`) pipelines (set A).
Compute intervals are the Overlap Analysis `Computing` slices (trace) or the compute tasks.

Completeness (`assess`, docs/step_breakdown.md): a derived row is only as good as its input. A
kernel_details.csv or trace that holds a fraction of the step's device work yields a breakdown
of that fraction. Each derived row is judged against what the rank folder (and, at assembly, the
run's cluster summary) offers for the same rank and step:
- kernel coverage: its device window (stage + bubble = last end - first start of its events)
  over the step window — the profiler's own window (its stage + bubble: the same definition)
  or, without profiler figures, the host ProfilerStep window; below COVERAGE_MIN it is
  incomplete;
- disagreement with the profiler's (else the cluster summary's) stage, computing or
  communication by more than REL_TOLERANCE of their figure and ABS_TOLERANCE_NS.
`complete` is true when judged and nothing failed, false with `incomplete_reason` (the failed
checks, '; '-joined) otherwise, null when there is nothing to judge against. Rows of every
other origin (profiler, cluster, sim) are complete = true.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
import polars as pl

from pipelines.vocabulary.intervals import assign_steps, difference
from pipelines.vocabulary.overlap import (
    breakdown_rows,
    lane_coverage,
    lane_totals,
    overlap_lanes,
)
from pipelines.vocabulary.profiler_names import OVERLAP_COLUMNS, P2P_REGEX, RECEIVE_REGEX

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
COPY_COLUMNS = ("memcpy_ns", "memset_ns")
"""Device memory copies and memsets (Kineto gpu_memcpy / gpu_memset): neither computing nor
communication; only the device-interval derivation (`derive_breakdown`) fills them."""
_SCHEMA = {
    c: (pl.String if c == "origin" else pl.Int32 if c == "step" else pl.Int64)
    for c in BREAKDOWN_COLUMNS
}
# Launch coverage: a derived row whose device work was attributed to the step by the start-time
# fallback for more than 1 % of its time (no launch link) cannot be trusted to hold the step's
# work when the device lags the host (docs/step_breakdown.md "Launch attribution").
LAUNCH_COVERAGE_MIN = 0.99


# Completeness thresholds (measured agreement of the complete real ranks: docs/step_breakdown.md).
# Below half of the step window the device events cannot be the whole step: complete real traces
# span 80-99 % of their host ProfilerStep (the rest is host-side preparing) and 100.000 % of the
# profiler's own window; set D's trimmed rank 1 spans 5.6 %.
COVERAGE_MIN = 0.5
# Complete ranks reproduce the profiler to within 0.12 us (float64 rounding of us timestamps);
# the smallest disagreement of an incomplete real rank is 8.2 % (set D rank 0 stage, 23.8 ms).
REL_TOLERANCE = 0.02
ABS_TOLERANCE_NS = 100_000
COMPARED_COLUMNS = {
    "stage_ns": "stage",
    "computing_ns": "computing",
    "communication_ns": "communication",
}
FLAG_SCHEMA = {"complete": pl.Boolean, "incomplete_reason": pl.String}


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


def derive_breakdown(
    device: pl.DataFrame,
    steps: pl.DataFrame,
    comm_ops: pl.DataFrame | None = None,
    *,
    copies: bool = False,
    unlinked: Literal["auto", "start"] = "auto",
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Overlap-lane slices and step_breakdown rows (origin='derived') of one rank, from its device
    intervals; for traces without Overlap Analysis lanes (Ascend SQLite exports, Kineto).

    `device`: columns kind ('compute' | 'comm' | 'memcpy' | 'memset'), start_ns, dur_ns and
    optionally anchor_ns (the start of the host slice that launched it, pipelines/ingest/
    launch_links.py; null: not linked). Each belongs to the step whose window holds its anchor
    (launch attribution), its own start when it has no anchor (the start-time fallback); events
    outside every window are left out. `steps`: step, start_ns, end_ns (may be empty: then the
    whole trace is one row with a null step). `comm_ops`: canonical comm_ops rows (op, is_p2p,
    start_ns, dur_ns, and anchor_ns when known) for the bubble columns. `copies`: the reader
    tells memory copies and memsets apart (memcpy_ns / memset_ns are null otherwise).
    `unlinked`: where work without a launch link goes: "auto" = by its start unless at least
    half the device time is linked, then in no step (Kineto: a kernel without a launch in the
    trace was launched before the capture began); "start" = always by its start (Ascend: the
    profiler's own rule, step_trace_time.csv; an HCCL op or task without a flow is still the
    step's work).

    Returns (`slices`: lane='overlap' rows with thread = lane name, category 'derived';
    `step_breakdown`: canonical columns without run_id/rank, `launch_coverage` = device time
    launched in the step over device time assigned to it, complete = false below
    LAUNCH_COVERAGE_MIN)."""

    linked_rule = launch_rule_applies(device, unlinked)

    def anchored(frame: pl.DataFrame) -> pl.DataFrame:
        anchor = pl.col("anchor_ns") if "anchor_ns" in frame.columns else pl.lit(None, pl.Int64)
        return frame.with_columns(
            anchor.cast(pl.Int64).is_not_null().alias("_linked"),
            attribution_time(linked_rule, anchor).alias("_at"),
        )

    def spans(frame: pl.DataFrame, kind: pl.Expr) -> pl.DataFrame:
        return anchored(frame).select(
            kind.alias("kind"),
            pl.col("start_ns").cast(pl.Int64),
            (pl.col("start_ns") + pl.col("dur_ns")).cast(pl.Int64).alias("end_ns"),
            "_at",
            "_linked",
        )

    device_spans = spans(device, pl.col("kind"))
    events = device_spans
    has_ops = comm_ops is not None and not comm_ops.is_empty()
    if has_ops:
        events = pl.concat([events, spans(comm_ops.filter(pl.col("is_p2p")), pl.lit("p2p"))])
    has_steps = not steps.is_empty()
    events = assign_steps(events, steps, at="_at")
    if has_steps:
        events = events.filter(pl.col("step").is_not_null())
    lanes, totals = overlap_lanes(events.drop("_at", "_linked").rename({"step": "group"}))
    slices = lanes.select(
        pl.lit("overlap").alias("lane"),
        pl.col("name").alias("thread"),
        pl.col("name"),
        pl.lit("derived").alias("category"),
        pl.col("start_ns"),
        pl.col("dur_ns"),
        pl.col("group").cast(pl.Int32).alias("step"),
    ).sort("start_ns", "thread")
    receive = None
    if has_ops:
        ops = assign_steps(
            anchored(comm_ops).select("op", "start_ns", "dur_ns", "_at"), steps, at="_at"
        )
        if has_steps:
            ops = ops.filter(pl.col("step").is_not_null())
        receive = ops.filter(_receive_names(ops["op"])).select(
            pl.col("step").alias("group"), "dur_ns"
        )
    host_start = steps.select(pl.col("step").alias("group"), "start_ns")
    breakdown = breakdown_rows(totals, receive, host_start).select(
        *BREAKDOWN_COLUMNS, *COPY_COLUMNS
    )
    if not copies:
        breakdown = breakdown.with_columns(pl.lit(None, pl.Int64).alias(c) for c in COPY_COLUMNS)
    if "anchor_ns" not in device.columns:  # the reader has no launch links: start-time rule
        return slices, breakdown.with_columns(pl.lit(None, pl.Float64).alias("launch_coverage"))
    work = assign_steps(device_spans, steps, at="_at").rename({"step": "_by_launch"})
    work = assign_steps(work, steps, at="start_ns").rename({"step": "_by_start"})
    return slices, _with_launch_coverage(breakdown, work, linked_rule)


def launch_rule_applies(device: pl.DataFrame, unlinked: Literal["auto", "start"] = "auto") -> bool:
    """Whether unlinked work of `device` (kind, start_ns, dur_ns, anchor_ns) belongs to no step
    (`derive_breakdown`'s `unlinked`: "auto" and at least half the device time linked)."""
    return unlinked == "auto" and "anchor_ns" in device.columns and _mostly_linked(device)


def attribution_time(linked_rule: bool, anchor: pl.Expr | None = None) -> pl.Expr:
    """The time whose step window a row of device work (start_ns, anchor_ns) belongs to: its
    launch anchor; without one its own start, unless `linked_rule` (then null: no step). The
    one rule of the derived breakdown and of the readers' per-row `step` (kernels, comm_ops)."""
    anchor = (pl.col("anchor_ns") if anchor is None else anchor).cast(pl.Int64)
    return anchor if linked_rule else pl.coalesce(anchor, pl.col("start_ns").cast(pl.Int64))


def steps_by_launch(rows: pl.DataFrame, steps: pl.DataFrame, linked_rule: bool) -> pl.DataFrame:
    """`rows` (start_ns, anchor_ns) with `step` by `attribution_time`, as `derive_breakdown`
    assigns the same work (`linked_rule` = `launch_rule_applies` of the reader's device work)."""
    at = rows.with_columns(attribution_time(linked_rule).alias("_at"))
    return assign_steps(at, steps, at="_at").drop("_at")


def _mostly_linked(device: pl.DataFrame) -> bool:
    """Whether at least half the device time has a launch link (then the launch rule applies and
    unlinked work, launched before the capture began, is left out of every step)."""
    dur = device.get_column("dur_ns").cast(pl.Float64)
    total = dur.sum()
    linked = dur.filter(device.get_column("anchor_ns").is_not_null()).sum()
    return bool(total) and linked >= 0.5 * total


def _with_launch_coverage(
    breakdown: pl.DataFrame, work: pl.DataFrame, linked_rule: bool
) -> pl.DataFrame:
    """`launch_coverage` per step: device time attributed to the step by its launch over that
    plus the unlinked device time the step holds (unlinked work starting in its window under the
    launch rule, left out of its figures; unlinked work assigned by its start under the
    start-time fallback). Below LAUNCH_COVERAGE_MIN the row is incomplete, with the reason."""
    dur = pl.col("end_ns") - pl.col("start_ns")
    unlinked_step = "_by_start" if linked_rule else "_by_launch"
    launched = (
        work.filter(pl.col("_linked"))
        .group_by(pl.col("_by_launch").alias("step"))
        .agg(dur.sum().alias("_launched"))
    )
    unlinked = (
        work.filter(~pl.col("_linked"))
        .group_by(pl.col(unlinked_step).alias("step"))
        .agg(dur.sum().alias("_unlinked"))
    )
    rows = (
        breakdown.join(launched, on="step", how="left", nulls_equal=True)
        .join(unlinked, on="step", how="left", nulls_equal=True)
        .with_columns(pl.col("_launched").fill_null(0), pl.col("_unlinked").fill_null(0))
        .with_columns(
            pl.when(pl.col("_launched") + pl.col("_unlinked") > 0)
            .then(pl.col("_launched") / (pl.col("_launched") + pl.col("_unlinked")))
            .alias("launch_coverage")
        )
    )
    short = pl.col("launch_coverage") < LAUNCH_COVERAGE_MIN
    what = (
        "starts in the step with no launch in the trace (launched before the capture began) "
        "and is left out"
        if linked_rule
        else "has no launch link and was assigned by its start time"
    )
    reason = pl.format(
        "launch_coverage {} %: {} ms of device work " + what,
        (pl.col("launch_coverage") * 100).round(1),
        (pl.col("_unlinked") / 1e6).round(3),
    )
    return rows.with_columns(
        pl.when(short).then(pl.lit(False)).alias("complete"),
        pl.when(short).then(reason).alias("incomplete_reason"),
    ).drop("_launched", "_unlinked")


def from_kernels(kernels: pl.DataFrame) -> pl.DataFrame:
    """Derived rows from kernel rows (name, start_ns, dur_ns, step, is_comm): each kernel belongs
    to its own `step` (null: a step of its own); preparing needs the host step start and stays
    NULL. Rows in order of each step's first kernel."""
    if kernels.is_empty():
        return _empty()
    comm = pl.col("is_comm")
    events = kernels.select(
        pl.col("step").alias("group"),
        "start_ns",
        (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
        "is_comm",
        (comm & pl.col("name").str.contains(P2P_REGEX)).alias("is_p2p"),
    )
    kinds = {"compute": ~comm, "comm": comm, "p2p": pl.col("is_p2p")}
    totals = lane_totals(*lane_coverage(events, kinds))
    receive = kernels.filter(comm & pl.col("name").str.contains(RECEIVE_REGEX)).select(
        pl.col("step").alias("group"), "dur_ns"
    )
    order = kernels.select(pl.col("step").cast(pl.Int32).unique(maintain_order=True))
    order = order.with_row_index("_first")
    return (
        breakdown_rows(totals, receive)
        .join(order, on="step", how="left", nulls_equal=True)
        .sort("_first")
        .select(BREAKDOWN_COLUMNS)
        .cast(_SCHEMA)
    )


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


def _with_flags(rows: pl.DataFrame) -> pl.DataFrame:
    """`complete` / `incomplete_reason` columns, added where absent: rows of every origin but
    'derived' are complete = true; a derived row not judged yet stays null."""
    for column, dtype in FLAG_SCHEMA.items():
        if column not in rows.columns:
            rows = rows.with_columns(pl.lit(None, dtype).alias(column))
    return rows.with_columns(
        pl.when(pl.col("origin") != "derived")
        .then(pl.col("complete").cast(pl.Boolean).fill_null(True))
        .otherwise(pl.col("complete").cast(pl.Boolean))
        .alias("complete"),
        pl.col("incomplete_reason").cast(pl.String),
    )


def _window(row: dict) -> int | None:
    """Device window of a breakdown row: stage + bubble (= last end - first start)."""
    if row.get("stage_ns") is None:
        return None
    return row["stage_ns"] + (row.get("bubble_ns") or 0)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %"


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.1f} ms"


def disagreements(derived: dict, reference: dict, origin: str) -> list[str]:
    """The compared columns on which `derived` and `reference` (breakdown rows) differ by more
    than REL_TOLERANCE of the reference and ABS_TOLERANCE_NS, as reasons."""
    out = []
    for column, label in COMPARED_COLUMNS.items():
        ours, theirs = derived.get(column), reference.get(column)
        if ours is None or theirs is None:
            continue
        gap = abs(ours - theirs)
        if gap > ABS_TOLERANCE_NS and gap > REL_TOLERANCE * abs(theirs):
            out.append(f"{label} {_ms(ours)} vs {origin} {_ms(theirs)}")
    return out


def _judge(
    derived: dict, reference: dict | None, origin: str, host_ns: int | None
) -> list[str] | None:
    """Reasons a derived row is incomplete ([] when it passes), None when nothing judges it."""
    window = _window(derived)
    if window is None or (reference is None and not host_ns):
        return None
    reasons = []
    if reference is not None:
        ref_window = _window(reference)
        if ref_window and window < COVERAGE_MIN * ref_window:
            reasons.append(
                f"kernel_coverage {_pct(window, ref_window)} of the {origin} step window"
            )
        reasons += disagreements(derived, reference, origin)
    elif host_ns and window < COVERAGE_MIN * host_ns:
        reasons.append(f"kernel_coverage {_pct(window, host_ns)} of the ProfilerStep window")
    return reasons


def assess(
    rows: pl.DataFrame, host_steps: pl.DataFrame | None = None, reference: str = "profiler"
) -> pl.DataFrame:
    """`rows` (step_breakdown rows of one rank, or of a run with a `rank` column) with
    `complete` and `incomplete_reason` set on the derived rows; see the module docstring.

    Each derived row is compared with the row of origin `reference` of the same rank and step;
    with reference='cluster' (the assembler's pass over a whole run) a derived row that has a
    profiler row was already judged against it and is left as it is. `host_steps` (step,
    start_ns, end_ns: ProfilerStep windows) judge the coverage of a derived row that has no
    reference row. A row judged before keeps its reasons; complete only stays true when the
    new checks pass too."""
    if rows.is_empty():
        return rows
    rows = _with_flags(rows)
    keys = ["rank", "step"] if "rank" in rows.columns else ["step"]
    records = rows.to_dicts()
    refs = {tuple(r[k] for k in keys): r for r in records if r["origin"] == reference}
    profiled = {tuple(r[k] for k in keys) for r in records if r["origin"] == "profiler"}
    hosts: dict[int, int] = {}
    if host_steps is not None and not host_steps.is_empty():
        hosts = {
            step: end - start
            for step, start, end in host_steps.select("step", "start_ns", "end_ns").iter_rows()
            if step is not None and start is not None and end is not None
        }
    complete, reason = [], []
    for row in records:
        key = tuple(row[k] for k in keys)
        judged = None
        if row["origin"] == "derived" and not (reference != "profiler" and key in profiled):
            host = hosts.get(row["step"]) if reference == "profiler" else None
            judged = _judge(row, refs.get(key), reference, host)
        if judged is None:
            complete.append(row["complete"])
            reason.append(row["incomplete_reason"])
            continue
        before = [row["incomplete_reason"]] if row["incomplete_reason"] else []
        complete.append(row["complete"] is not False and not judged)
        reason.append("; ".join(before + judged) or None)
    return rows.with_columns(
        pl.Series("complete", complete, pl.Boolean),
        pl.Series("incomplete_reason", reason, pl.String),
    )
