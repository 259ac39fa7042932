"""Decode streams riding along the pipeline's prefill steps, and their inter-token latency (ITL).

The chunked-prefill reference's single-device scheduler puts the running decode streams into every
step ahead of the prefill chunk (decode first: one token per stream). Under pipeline parallelism a
stream cannot be in two steps at once: its next token needs the last stage's output of its previous
one. So the streams are split into `groups` micro-batch groups, as vLLM splits its running requests
over `pp` virtual engines: scheduler step j (the j-th stage-0 call on the first rank, in program
order) carries group j mod groups, and its stage-0 call waits for the last-stage call of step j -
groups (the group's previous token). `groups` None picks the fewest groups, from pp up, whose waits
the schedule's program order can honour (VPP-Async runs s0(k+1) before s3(k-1), so it needs pp + 1);
an explicit `groups` the order cannot honour is an error.

Cost: the group's tokens are one more piece of every call of the step, costed by the model as
`tokens` = the group's streams at prefix `context` (the causal attention over the context and
the per-token GEMMs; batching.packed_stage_ns's rule, the call's fixed part paid once). That is
the compute side of a decode batch: memory-bound terms (KV and weight reads) are not in the
pipeline cost models, and the decode tokens' TP collective bytes are not added.

ITL: a group's tokens come at the end of its steps' last-stage calls; each stream of the group
sees the gaps between consecutive ones. Percentiles are over streams x gaps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pipelines.sim.batching import fixed_ns
from pipelines.sim.cost_models import StageCost
from pipelines.sim.event_graph import DeadlockError, build_graph
from pipelines.sim.task_order import COMPUTE, Plan, Task


@dataclass(frozen=True)
class DecodeLoad:
    """Running decode streams: how many, their KV context (tokens) and the micro-batch groups
    they are split into (None: the fewest the schedule allows, from pp up)."""

    streams: int
    context: int = 4096
    groups: int | None = None

    def __post_init__(self) -> None:
        if self.streams < 1 or self.context < 0:
            raise ValueError("decode streams must be >= 1 and context >= 0")
        if self.groups is not None and self.groups < 1:
            raise ValueError("decode groups must be >= 1")

    def group_sizes(self, groups: int) -> list[int]:
        """Streams per group, as even as possible (the first groups take the remainder)."""
        base, extra = divmod(self.streams, groups)
        return [base + (g < extra) for g in range(groups)]


@dataclass(frozen=True)
class DecodePlan:
    """Where the decode groups ride: per compute node its step, the steps' groups and the nodes
    whose end gives a group its token."""

    groups: int
    sizes: tuple[int, ...]
    step_of_node: np.ndarray  # compute nodes: scheduler step, else -1
    token_nodes: np.ndarray  # per step: its last-stage compute node

    def streams(self, steps: np.ndarray) -> np.ndarray:
        """Decode streams (tokens) carried by each of `steps`: its group's size."""
        return np.asarray(self.sizes, dtype=np.int64)[np.asarray(steps) % self.groups]


def _steps(plan: Plan, orders: list[list[Task]]) -> tuple[list[int], list[int]]:
    """(stage-0 node, last-stage node) per scheduler step, in the first rank's program order."""
    first_rank = plan.layout.ranks[0]
    last = plan.layout.num_stages - 1
    compute = np.flatnonzero(plan.kind == COMPUTE)
    node_of = {
        (int(plan.request[n]), int(plan.chunk[n]), int(plan.stage[n])): int(n) for n in compute
    }
    entries = [(r, k) for r, k, g in orders[first_rank] if g == 0]
    return [node_of[(r, k, 0)] for r, k in entries], [node_of[(r, k, last)] for r, k in entries]


def attach(plan: Plan, orders: list[list[Task]], load: DecodeLoad) -> tuple[Plan, DecodePlan]:
    """`plan` with each step's stage-0 call waiting for its group's previous token, and where
    the groups ride. Raises ValueError when `load.groups` is set and the order cannot honour it."""
    entry, exit_ = _steps(plan, orders)
    n_steps = len(entry)
    if load.groups is not None:
        candidates = [load.groups]
    else:
        candidates = list(range(max(plan.layout.pp, 1), max(n_steps, plan.layout.pp) + 1))
    error = None
    for groups in candidates:
        after_end = [list(d) for d in plan.graph.after_end]
        for j in range(groups, n_steps):
            after_end[entry[j]].append(exit_[j - groups])
        try:
            graph = build_graph(after_end, plan.graph.after_start)
        except DeadlockError as exc:
            error = exc
            continue
        step_of_node = np.full(plan.size, -1, dtype=np.int64)
        first_of = {(int(plan.request[n]), int(plan.chunk[n])): j for j, n in enumerate(entry)}
        compute = plan.kind == COMPUTE
        for n in np.flatnonzero(compute):
            step_of_node[n] = first_of[(int(plan.request[n]), int(plan.chunk[n]))]
        sizes = tuple(load.group_sizes(groups))
        return replace(plan, graph=graph), DecodePlan(
            groups, sizes, step_of_node, np.array(exit_, dtype=np.int64)
        )
    raise ValueError(
        f"the schedule's step order cannot run {load.groups} decode group(s) without a "
        f"deadlock ({error}); use more groups or leave them to the simulator"
    )


def decode_ns(
    plan: Plan, decode: DecodePlan, cost: StageCost, load: DecodeLoad, ranges: np.ndarray
) -> np.ndarray:
    """Extra device time (float ns) of every node: its step's decode group as one more piece of
    the call (module docstring); 0 off compute nodes."""
    extra = np.zeros(plan.size, dtype=np.float64)
    nodes = np.flatnonzero(decode.step_of_node >= 0)
    if not len(nodes):
        return extra
    tokens = decode.streams(decode.step_of_node[nodes])
    lo_hi = ranges[plan.stage[nodes]]
    keys = np.column_stack([tokens, lo_hi])
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    ns = np.zeros(len(unique))
    for i, (t, lo, hi) in enumerate(unique.tolist()):
        if t == 0:
            continue
        piece = cost.stage_ns(
            np.array([t]), np.array([load.context]), np.array([lo]), np.array([hi])
        )
        ns[i] = max(float(piece[0]) - fixed_ns(cost, lo, hi), 0.0)
    extra[nodes] = ns[inverse.ravel()]
    return extra


def itl_metrics(decode: DecodePlan, end: np.ndarray) -> dict[str, Any]:
    """Inter-token latency of the streams (ns) and the decode tokens they got."""
    token_end = end[decode.token_nodes]
    gaps, weights = [], []
    for g in range(decode.groups):
        times = np.sort(token_end[g :: decode.groups])
        if decode.sizes[g] and len(times) > 1:
            gaps.append(np.diff(times))
            weights.append(np.full(len(times) - 1, decode.sizes[g]))
    tokens = int(decode.streams(np.arange(len(token_end))).sum())
    out: dict[str, Any] = {"decode_groups": decode.groups, "decode_tokens": tokens}
    if not gaps:
        return out | dict.fromkeys(("itl_p50_ns", "itl_p90_ns", "itl_p99_ns", "itl_max_ns"))
    samples = np.repeat(np.concatenate(gaps), np.concatenate(weights))
    return out | {
        "itl_p50_ns": float(np.percentile(samples, 50)),
        "itl_p90_ns": float(np.percentile(samples, 90)),
        "itl_p99_ns": float(np.percentile(samples, 99)),
        "itl_max_ns": int(samples.max()),
    }
