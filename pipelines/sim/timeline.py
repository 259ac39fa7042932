"""Turn an evaluated plan into the SimResult task and request tables."""

from __future__ import annotations

import numpy as np
import polars as pl

from pipelines.sim.result import REQUEST_SCHEMA, TASK_SCHEMA
from pipelines.sim.task_order import COMPUTE, RECV, SEND, TRANSFER, Plan


def _rows(plan: Plan, select: np.ndarray, kind: str, rank, start, end) -> pl.DataFrame:
    ids = [plan.requests[i].request_id for i in range(len(plan.requests))]
    return pl.DataFrame(
        {
            "request_id": np.asarray(ids, dtype=object)[plan.request[select]],
            "chunk_idx": plan.chunk[select],
            "vstage": plan.stage[select],
            "rank": np.asarray(rank, dtype=np.int32),
            "kind": np.full(int(select.sum()), kind, dtype=object),
            "tokens": plan.tokens[select],
            "prefix_tokens": plan.prefix[select],
            "start_ns": np.asarray(start, dtype=np.int64),
            "end_ns": np.asarray(end, dtype=np.int64),
        },
        schema=TASK_SCHEMA,
    )


def task_table(
    plan: Plan,
    start: np.ndarray,
    end: np.ndarray,
    collectives: dict[str, np.ndarray] | None = None,
    blocking: bool = True,
) -> pl.DataFrame:
    """One row per compute task, send and receive, sorted by rank then start time.

    `collectives` (per node, ns: "allreduce" and "alltoall", zero off compute nodes) adds one row
    per collective kind and compute task. Blocking collectives end the call: the compute row
    stops where they start and they run back to back up to the task's end (the forward pass
    waits for them); overlapped ones start with the call, under its compute.

    Receive rows span the time the receiving rank has the receive outstanding: blocking mode from
    when the rank reaches it (or the sender starts, if later) until the data arrives; async mode
    from the pre-posted irecv until arrival. Send rows span the transfer on the sending rank.
    """
    arrivals = np.array([req.arrival_ns for req in plan.requests], dtype=np.int64)
    frames = []
    sel = plan.kind == COMPUTE
    compute_end = end[sel]
    if collectives:
        span = end[sel] - start[sel]
        parts = {k: np.rint(v[sel]).astype(np.int64) for k, v in collectives.items()}
        total = np.minimum(sum(parts.values()), span)
        offset = end[sel] - total if blocking else start[sel].copy()
        if blocking:
            compute_end = offset.copy()
        for kind, ns in parts.items():
            ns = np.minimum(ns, end[sel] - offset)
            keep = ns > 0
            if keep.any():
                rows = sel.copy()
                rows[sel] = keep
                frames.append(
                    _rows(plan, rows, kind, plan.rank[rows], offset[keep], offset[keep] + ns[keep])
                )
            offset = offset + ns
    frames.append(_rows(plan, sel, "compute", plan.rank[sel], start[sel], compute_end))
    sel = plan.kind == SEND
    frames.append(_rows(plan, sel, "send", plan.rank[sel], start[sel], end[sel]))
    sel = plan.kind == RECV
    if sel.any():
        prev = plan.prev_on_rank[sel]
        reached = np.where(prev >= 0, end[np.maximum(prev, 0)], 0)
        row_start = np.minimum(np.maximum(reached, start[plan.send_node[sel]]), end[sel])
        frames.append(_rows(plan, sel, "recv", plan.rank[sel], row_start, end[sel]))
    sel = plan.kind == TRANSFER
    if sel.any():
        frames.append(_rows(plan, sel, "send", plan.rank[sel], start[sel], end[sel]))
        post = plan.post_node[sel]
        arrival = arrivals[plan.release_request[sel]]
        posted = np.where(post >= 0, np.maximum(arrival, start[np.maximum(post, 0)]), arrival)
        recv = _rows(plan, sel, "recv", plan.peer[sel], np.minimum(posted, start[sel]), end[sel])
        # the receive belongs to the consuming stage
        frames.append(recv.with_columns(pl.col("vstage") + 1))
    return pl.concat(frames).sort(["rank", "start_ns", "end_ns"])


def request_table(plan: Plan, end: np.ndarray) -> pl.DataFrame:
    """Arrival, prompt length, first-token time (end of the last prefill task) and TTFT."""
    compute = plan.kind == COMPUTE
    last = np.full(len(plan.requests), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, plan.request[compute], end[compute])
    arrival = np.array([req.arrival_ns for req in plan.requests], dtype=np.int64)
    return pl.DataFrame(
        {
            "request_id": [req.request_id for req in plan.requests],
            "arrival_ns": arrival,
            "prompt_tokens": [req.prompt_tokens for req in plan.requests],
            "first_token_ns": last,
            "ttft_ns": last - arrival,
        },
        schema=REQUEST_SCHEMA,
    )
