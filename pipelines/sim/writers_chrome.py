"""Write a SimResult as one Chrome / Perfetto trace (JSON object form, numeric µs timestamps).

`{"traceEvents": [...], "displayTimeUnit": "ns"}` with `ts`/`dur` as float microseconds from the
run's t=0 (exact to the ns at any run length a simulation produces). One process per rank
(pid = rank, named `rank <r>`), threads: 0 `steps` (scheduling steps, when the simulator has
them), 1 `compute` (one slice per compute task), 2 `send`, 3 `recv` (communication tasks; sends
and receives may overlap, so they get a thread each). Slice args carry request_id, chunk_idx,
vstage, tokens and prefix_tokens; each transfer is drawn as a flow arrow from send to recv.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.sim.result import SimResult
from pipelines.sim.trace_layout import (
    comm_ops,
    compute_tasks,
    rank_ids,
    step_windows,
    tp_ranks_of,
)

STEPS_TID, COMPUTE_TID, SEND_TID, RECV_TID = 0, 1, 2, 3
THREAD_NAMES = {STEPS_TID: "steps", COMPUTE_TID: "compute", SEND_TID: "send", RECV_TID: "recv"}
TASK_ARGS = ("request_id", "chunk_idx", "vstage", "tokens", "prefix_tokens")


def _us(ns: int) -> float:
    return ns / 1000


def chrome_events(result: SimResult) -> list[dict[str, Any]]:
    """Every trace event of `result` (metadata first, then slices and flows)."""
    events: list[dict[str, Any]] = []
    has_steps = bool(result.meta.get("steps_ns"))
    steps = step_windows(result)
    comm = comm_ops(result)
    for rank in rank_ids(result):
        events.append(_meta(rank, "process_name", {"name": f"rank {rank}"}))
        events.append(_meta(rank, "process_sort_index", {"sort_index": rank}))
        for tid, name in THREAD_NAMES.items():
            if tid == STEPS_TID and not has_steps:
                continue
            events.append(_meta(rank, "thread_name", {"name": name}, tid))
            events.append(_meta(rank, "thread_sort_index", {"sort_index": tid}, tid))
        if has_steps:
            for step, start, end in steps.iter_rows():
                events.append(_slice(rank, STEPS_TID, f"step {step}", "step", start, end, {}))
        for row in compute_tasks(result, rank).iter_rows(named=True):
            args = {k: row[k] for k in TASK_ARGS} | {"step": row["step"]}
            cat = "chunk" if row["is_chunk"] else "background"
            events.append(
                _slice(rank, COMPUTE_TID, row["marker"], cat, row["start_ns"], row["end_ns"], args)
            )
    for row in comm.iter_rows(named=True):
        tid = SEND_TID if row["kind"] == "send" else RECV_TID
        args = {k: row[k] for k in TASK_ARGS} | {"peer": row["peer"], "op": row["op"]}
        name = f"{row['kind']} {row['request_id']} k={row['chunk_idx']}"
        events.append(
            _slice(row["rank"], tid, name, row["kind"], row["start_ns"], row["end_ns"], args)
        )
    events.extend(_flows(comm, tp_ranks_of(result)))
    return events


def _meta(pid: int, name: str, args: dict[str, Any], tid: int = 0) -> dict[str, Any]:
    return {"ph": "M", "name": name, "pid": pid, "tid": tid, "args": args}


def _slice(
    pid: int, tid: int, name: str, cat: str, start: int, end: int, args: dict[str, Any]
) -> dict[str, Any]:
    return {
        "ph": "X",
        "name": name,
        "cat": cat,
        "pid": pid,
        "tid": tid,
        "ts": _us(start),
        "dur": _us(end - start),
        "args": args,
    }


def _flows(comm: pl.DataFrame, tp: int = 1) -> list[dict[str, Any]]:
    """A flow arrow per transfer with both ends: from the send's start to the recv's end
    (transfers are numbered per pipeline group: with `tp` groups the id is transfer x tp + t)."""
    sends = comm.filter(pl.col("kind") == "send").select(
        "transfer", "rank", "start_ns", pl.col("peer").alias("dst")
    )
    recvs = comm.filter(pl.col("kind") == "recv").select(
        "transfer", pl.col("rank").alias("dst"), pl.col("peer").alias("rank"), pl.col("end_ns")
    )
    out: list[dict[str, Any]] = []
    pairs = sends.join(recvs, on=["transfer", "rank", "dst"]).select(
        "transfer", "rank", "start_ns", "dst", "end_ns"
    )
    for transfer, src, start, dst, end in pairs.iter_rows():
        common = {"name": "p2p", "cat": "p2p", "id": transfer * tp + src % tp}
        out.append({"ph": "s", **common, "pid": src, "tid": SEND_TID, "ts": _us(start)})
        out.append(
            {"ph": "f", "bp": "e", **common, "pid": dst, "tid": RECV_TID, "ts": _us(end - 1)}
        )
    return out


def write_chrome_trace(result: SimResult, path: Path | str) -> Path:
    """Write `result` as a Chrome/Perfetto JSON trace at `path`; return the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    trace = {"traceEvents": chrome_events(result), "displayTimeUnit": "ns"}
    with out.open("w", encoding="utf-8") as f:
        json.dump(trace, f)
    return out
