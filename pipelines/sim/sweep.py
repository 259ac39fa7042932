"""Many configurations at once: points that share a task graph are evaluated together.

A point is (model, schedule, seq_len, chunk_size, pp, vp, requests back-to-back, seed, noise,
comm). The task graph depends only on the schedule, pp, vp, the chunk sizes and the comm mode,
so points differing in model, seed or noise share one graph and go through the engine as one
batch (engine.evaluate with durations of shape (nodes, B)). Each row equals
`metrics.summarize(run.simulate(...))` of that point (tests/sim/test_sweep.py); in async comm
mode, where receives overlap compute, only the exact total of bubble + exposed comm (`idle`) is
given and `bubble_ratio` is null.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import cache

import numpy as np
import polars as pl

from pipelines import schedule_kinds
from pipelines.sim import presets
from pipelines.sim.chunking import DcppConfig
from pipelines.sim.comm import CommModel
from pipelines.sim.event_graph import evaluate
from pipelines.sim.layout import StageLayout, fold_back_layout
from pipelines.sim.run import (
    _chunk_requests,
    _noisy,
    _release,
    _resolve_schedule,
    collective_parts,
    requests_frame,
    stage_durations,
)
from pipelines.sim.task_order import (
    COMPUTE,
    DEFAULT_PACK_WINDOW,
    RECV,
    SEND,
    ChunkedRequest,
    Plan,
    build_plan,
    rank_orders,
)


@dataclass(frozen=True)
class SweepPoint:
    """One configuration: `requests` prompts of `seq_len` tokens queued at t=0."""

    model: str
    schedule: str
    seq_len: int
    chunk_size: int
    pp: int = 2
    vp: int | None = None
    requests: int = 1
    seed: int = 0
    noise: float = 0.0
    comm: bool = True


@cache
def _cost(model: str):
    return presets.cost_model(model)


@cache
def _collectives(model: str):
    return presets.collective_model(model)


@cache
def _layout(model: str, pp: int, vp: int) -> StageLayout:
    return fold_back_layout(_cost(model).num_layers, pp, vp)


def _comm(point: SweepPoint, base: str) -> CommModel | None:
    if not point.comm:
        return None
    mode = "async" if schedule_kinds.is_async(base) else "blocking"
    return presets.comm_model(point.model).with_mode(mode)


@cache
def _chunks(
    model: str, base: str, rule: str | None, pp: int, vp: int, seq_len: int, chunk: int, comm: bool
):
    frame = requests_frame(seq_len)
    dcpp = DcppConfig(rule) if rule else None
    layout = _layout(model, pp, vp)
    coll = _collectives(model) if comm else None
    (req,) = _chunk_requests(frame, base, chunk, dcpp, _cost(model), layout, coll)
    return req.chunks


def _prepare(point: SweepPoint):
    base, dcpp = _resolve_schedule(point.schedule, None)
    vp = point.vp if point.vp is not None else schedule_kinds.default_vp(base)
    rule = dcpp.rule if dcpp else None
    chunks = _chunks(
        point.model, base, rule, point.pp, vp, point.seq_len, point.chunk_size, point.comm
    )
    comm = _comm(point, base)
    windows = (DEFAULT_PACK_WINDOW,) * (point.requests - 1) if schedule_kinds.packs(base) else ()
    key = (base, point.pp, vp, chunks, point.requests, comm and comm.mode, windows)
    return key, base, vp, chunks, comm, windows


def _plan(point: SweepPoint, vp: int, chunks, comm, windows) -> Plan:
    layout = _layout(point.model, point.pp, vp)
    requests = [ChunkedRequest(f"req-{i}", 0, chunks) for i in range(point.requests)]
    reorder = schedule_kinds.is_async(point.schedule)
    orders = rank_orders(requests, layout, windows, reorder)
    return build_plan(requests, layout, orders, comm and comm.mode)


def _metrics(
    plan: Plan, dur: np.ndarray, start: np.ndarray, end: np.ndarray, collective: np.ndarray
) -> dict:
    """Per-column (configuration) metrics of one evaluated batch; `collective` (int ns, same
    shape as `dur`) is the blocking collective time that ends each compute node."""
    n_ranks = plan.layout.pp
    makespan = end.max(axis=0) - start.min(axis=0)
    compute = plan.kind == COMPUTE
    by_rank = np.zeros((n_ranks, dur.shape[1]), dtype=np.int64)
    np.add.at(by_rank, plan.rank[compute], dur[compute] - collective[compute])
    compute_ns = by_rank.sum(axis=0)
    blocked = collective[compute].sum(axis=0)
    idle = n_ranks * makespan - compute_ns
    if plan.comm_mode == "async":
        exposed = np.full(dur.shape[1], np.nan)
    else:
        send = plan.kind == SEND
        recv = plan.kind == RECV
        exposed = dur[send].sum(axis=0).astype(np.float64) + blocked
        if recv.any():
            prev = plan.prev_on_rank[recv]
            reached = np.where((prev >= 0)[:, None], end[np.maximum(prev, 0)], 0)
            row_start = np.minimum(np.maximum(reached, start[plan.send_node[recv]]), end[recv])
            exposed += (end[recv] - row_start).sum(axis=0)
    last = np.full((len(plan.requests), dur.shape[1]), np.iinfo(np.int64).min)
    np.maximum.at(last, plan.request[compute], end[compute])
    tokens = sum(r.prompt_tokens for r in plan.requests)
    return {
        "scheduling_steps": np.full(dur.shape[1], int(compute.sum()) // plan.layout.num_stages),
        "makespan_ns": makespan,
        "throughput_tok_s": tokens / (makespan / 1e9),
        "compute_ratio": compute_ns / (n_ranks * makespan),
        "idle_ratio": idle / (n_ranks * makespan),
        "bubble_ratio": (idle - exposed) / (n_ranks * makespan),
        "exposed_comm_ratio": exposed / (n_ranks * makespan),
        "collective_ratio": blocked / (n_ranks * makespan),
        "ttft_mean_ns": last.mean(axis=0),
    }


def sweep(points: Iterable[SweepPoint]) -> pl.DataFrame:
    """Metrics of every point, one row each, in input order."""
    points = list(points)
    groups: dict[tuple, list[int]] = {}
    prepared = []
    for i, point in enumerate(points):
        key, *rest = _prepare(point)
        prepared.append(rest)
        groups.setdefault(key, []).append(i)
    rows: list[dict | None] = [None] * len(points)
    for members in groups.values():
        first = points[members[0]]
        _, vp, chunks, comm, windows = prepared[members[0]]
        plan = _plan(first, vp, chunks, comm, windows)
        columns, blocked = [], []
        for i in members:
            point = points[i]
            layout = _layout(point.model, point.pp, vp)
            coll = _collectives(point.model) if point.comm else None
            dur = stage_durations(plan, _cost(point.model), prepared[i][3], layout, coll)
            columns.append(_noisy(dur, point.noise, point.seed))
            parts = collective_parts(plan, coll, layout)
            total = sum(np.rint(v).astype(np.int64) for v in parts.values())
            blocked.append(np.minimum(total, columns[-1]) if parts else np.zeros_like(dur, int))
        dur = np.stack(columns, axis=1)
        start, end = evaluate(plan.graph, dur, _release(plan)[:, None])
        metrics = _metrics(plan, dur, start, end, np.stack(blocked, axis=1))
        for j, i in enumerate(members):
            row = asdict(points[i]) | {"vp": vp}
            row.update({name: values[j].item() for name, values in metrics.items()})
            rows[i] = row
    return pl.DataFrame(rows, infer_schema_length=None)
