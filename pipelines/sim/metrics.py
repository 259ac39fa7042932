"""Per-request, per-rank and per-run metrics of a SimResult.

Accounting (per rank, over the run's window [first arrival or first task start, whichever is
earlier, last task end], the same window for every rank, so the fill and drain of the pipeline
and the host's set-up of the first request (run.host_ready_ns) count):

    compute      union of its compute intervals
    comm         union of its send and receive intervals (a receive lasts while it is
                 outstanding: a rank waiting inside a posted receive is in communication, as the
                 profiler reports it)
    overlapped   comm that coincides with compute;  exposed_comm = comm - overlapped
    bubble       window - compute - exposed_comm   (idle with nothing outstanding)

so window = compute + bubble + exposed_comm on every rank (the paper's breakdown). Table 2's
accounting (`posted_edges=True`, docs/fidelity.md §1) adds one rule: with async transfers
(vpp_async, vpp_pack) a rank posts the receive for its next input ahead, so the time before its
first and after its last operation (host set-up, fill, drain) is spent inside a posted receive,
communication as a profiler shows it. Then

    bubble_ratio  = sum of bubble / (ranks * window)
    overlap_ratio = sum of overlapped / sum of comm

A profiler instead measures each device over its own step window, from its first to its last
operation: `profiler_bubble_ratio` leaves each rank's edge idle (pipeline fill before its first
operation, drain after its last) out of numerator and denominator.

With τ_k = (k+1) t per virtual stage and free transfers this gives CPP 2/(N+3) and single-request
VPP 1/(N+1) (docs/schedules.md §4.5).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl

from pipelines.sim.result import SimResult
from pipelines.vocabulary.intervals import coverage

RANK_COLUMNS = (
    "rank",
    "window_ns",
    "compute_ns",
    "comm_ns",
    "overlapped_ns",
    "exposed_comm_ns",
    "bubble_ns",
    "edge_idle_ns",
    "tasks",
)


def ranks_frame(result: SimResult, posted_edges: bool = False) -> pl.DataFrame:
    """One row per rank: window, compute, comm, overlapped, exposed comm, bubble, edge idle (the
    part of the bubble before the rank's first or after its last operation), tasks (ns).
    `posted_edges` (table 2's accounting, docs/fidelity.md §1): in a run with async transfers
    the edge idle is a wait inside a receive posted ahead, so communication."""
    tasks = result.tasks
    first = min(int(tasks["start_ns"].min()), int(result.requests["arrival_ns"].min()))
    window = int(tasks["end_ns"].max()) - first
    is_compute = (tasks["kind"] == "compute").to_numpy()
    rank = tasks["rank"].to_numpy()
    cov = coverage(
        rank,
        tasks["start_ns"].to_numpy(),
        tasks["end_ns"].to_numpy(),
        {"compute": is_compute, "comm": ~is_compute},
    )
    compute, comm = cov.kinds["compute"], cov.kinds["comm"]
    compute_ns = cov.totals(compute)
    overlapped = cov.totals(compute & comm)
    edge = window - (cov.window_end - cov.window_start)
    # async transfers: a rank posts the receive for its next input ahead, so before its first
    # and after its last operation it waits inside a posted receive (communication, not bubble)
    is_async = posted_edges and result.meta.get("comm_mode") == "async"
    posted = edge if is_async else np.zeros_like(edge)
    comm_ns = cov.totals(comm) + posted
    exposed = comm_ns - overlapped
    frame = pl.DataFrame(
        {
            "rank": cov.groups,
            "window_ns": np.full(cov.groups.size, window),
            "compute_ns": compute_ns,
            "comm_ns": comm_ns,
            "overlapped_ns": overlapped,
            "exposed_comm_ns": exposed,
            "bubble_ns": window - compute_ns - exposed,
            "edge_idle_ns": edge - posted,
            "tasks": np.bincount(
                np.searchsorted(cov.groups, rank[is_compute]), minlength=cov.groups.size
            ),
        }
    )
    return frame.cast({c: pl.Int64 for c in RANK_COLUMNS}).sort("rank")


def bubble_ratio_exact(result: SimResult) -> Fraction:
    """Sum of bubble over ranks / (ranks x window), as an exact fraction of integer ns."""
    ranks = ranks_frame(result)
    return Fraction(int(ranks["bubble_ns"].sum()), int(ranks["window_ns"].sum()))


def ttft_percentile(ttft: pl.Series, q: float) -> float:
    """q-th percentile of the requests' TTFT (ns), linear interpolation between order statistics
    (numpy's default; the median equals `ttft_p50_ns`)."""
    return float(np.percentile(ttft.to_numpy(), q))


def summarize(result: SimResult, posted_edges: bool = False) -> dict[str, Any]:
    """Run-level metrics: makespan, throughput, scheduling steps, compute/bubble/exposed comm
    (mean over ranks, ns) with ratios, overlap ratio, TTFT mean / p50 / p90 / p99 / max, plus the
    run's meta (`posted_edges`: ranks_frame); with decode streams, their ITL p50 / p90 / p99 /
    max and decode tokens/s."""
    ranks = ranks_frame(result, posted_edges)
    n_ranks = ranks.height
    window = int(ranks["window_ns"][0])
    requests = result.requests
    compute = result.tasks.filter(pl.col("kind") == "compute")
    steps = compute.select(["request_id", "chunk_idx"]).unique().height
    total = {
        c: int(ranks[c].sum())
        for c in (
            "compute_ns",
            "comm_ns",
            "overlapped_ns",
            "exposed_comm_ns",
            "bubble_ns",
            "edge_idle_ns",
        )
    }
    active = n_ranks * window - total["edge_idle_ns"]
    ttft = requests["ttft_ns"]
    out = {
        k: result.meta.get(k)
        for k in (
            "model",
            "schedule",
            "chunk_size",
            "seq_len",
            "pp",
            "vp",
            "hardware",
            "seed",
            "noise",
        )
    }
    out.update(
        {
            "requests": requests.height,
            "prompt_tokens": int(requests["prompt_tokens"].sum()),
            "ranks": n_ranks,
            "scheduling_steps": steps,
            "makespan_ns": window,
            "throughput_tok_s": float(requests["prompt_tokens"].sum()) / (window / 1e9),
            "compute_ns": total["compute_ns"] / n_ranks,
            "bubble_ns": total["bubble_ns"] / n_ranks,
            "exposed_comm_ns": total["exposed_comm_ns"] / n_ranks,
            "comm_ns": total["comm_ns"] / n_ranks,
            "bubble_ratio": total["bubble_ns"] / (n_ranks * window),
            "profiler_bubble_ratio": (total["bubble_ns"] - total["edge_idle_ns"]) / active,
            "exposed_comm_ratio": total["exposed_comm_ns"] / (n_ranks * window),
            "compute_ratio": total["compute_ns"] / (n_ranks * window),
            "overlap_ratio": total["overlapped_ns"] / total["comm_ns"] if total["comm_ns"] else 0.0,
            "ttft_mean_ns": float(ttft.mean()),
            "ttft_p50_ns": float(ttft.median()),
            "ttft_p90_ns": ttft_percentile(ttft, 90),
            "ttft_p99_ns": ttft_percentile(ttft, 99),
            "ttft_max_ns": int(ttft.max()),
        }
    )
    if "decode_tokens" in result.meta:  # decode streams rode along (pipelines.sim.decode)
        for key in DECODE_KEYS:
            out[key] = result.meta.get(key)
        out["decode_tok_s"] = result.meta["decode_tokens"] / (window / 1e9)
    return out


DECODE_KEYS = (
    "decode_streams",
    "decode_context",
    "decode_groups",
    "decode_tokens",
    "itl_p50_ns",
    "itl_p90_ns",
    "itl_p99_ns",
    "itl_max_ns",
)
