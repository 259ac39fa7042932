"""Task generation and per-rank program order for CPP, DCPP, VPP, VPP-Async and VPP-pack.

A task is (request, chunk, virtual stage). Data dependencies: stage g of chunk k needs stage g-1
of chunk k (plus a transfer when the two stages sit on different ranks) and stage g of chunk k-1
(its KV cache). Each rank runs its tasks in the schedule's program order.

Program order: within a request, tasks on a rank are sorted by the wavefront key k*vp + slot(g),
where slot(g) = g for vp <= 2 (stage_slots: gaps for vp >= 3 keep each rank to one stage per
slot). With vp=1 this is CPP: every rank runs its stage of chunk 0, 1, 2, ... With pp=2, vp=2 it
is the paper's V schedule (Algorithm 1, docs/schedules.md §7):

    rank 0: s0(0) s0(1) s3(0) s0(2) s3(1) ... s0(N-1) s3(N-2) s3(N-1)
    rank 1: s1(0) s2(0) s1(1) s2(1) ...

VPP-Async (vpp_async, vpp_pack) swaps rank 0's pair in each cycle, s0(k+1) before s3(k-1)
(VPP paper §4.4), so that each transfer is issued while the peer computes, and overlaps
transfers with compute (comm.py `async`):

    rank 0: s0(0) s0(1) s0(2) s3(0) s0(3) s3(1) ... s0(N-1) s3(N-3) s3(N-2) s3(N-1)

Every dependency goes from a smaller key to a larger one, so the order never deadlocks, and the
key is the start slot of the task in a steady pipeline of equal stages, where no rank holds two
tasks in one slot. Requests follow each other in arrival order: all of a request's tasks on a
rank come before the next request's.

Pipelined packing (Algorithm 2): at the boundary between request R and the next request R', the
first `w` stage-0 tasks of R' are moved on rank 0 before R's last task there (s3(N-1) for vp=2),
filling the drain window in which rank 0 would otherwise wait for R's last chunk to come back.
R's remaining tasks on rank 0 then follow in key order. Packing applies when the last virtual
stage sits on rank 0 (even vp); with odd vp rank 0 has no drain window to fill.

DCPP uses the CPP order with chunk sizes from a dynamic-chunking rule (pipelines/sim/chunking.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipelines import schedule_kinds
from pipelines.sim.event_graph import TaskGraph, build_graph
from pipelines.sim.layout import StageLayout

SCHEDULES: tuple[str, ...] = schedule_kinds.BASES
DEFAULT_PACK_WINDOW = 4

# node kinds of a plan
COMPUTE, SEND, RECV, TRANSFER = 0, 1, 2, 3

Task = tuple[int, int, int]  # (request index, chunk index, virtual stage)


@dataclass(frozen=True)
class ChunkedRequest:
    """A request and the token counts of its prefill chunks, in order."""

    request_id: str
    arrival_ns: int
    chunks: tuple[int, ...]

    @property
    def prompt_tokens(self) -> int:
        return int(sum(self.chunks))

    @property
    def prefixes(self) -> tuple[int, ...]:
        out, total = [], 0
        for c in self.chunks:
            out.append(total)
            total += c
        return tuple(out)


def stage_slots(layout: StageLayout, reorder: bool = False) -> list[int]:
    """Start slot of each virtual stage of a chunk in a steady pipeline whose chunks start every
    `vp` slots: stage g takes the first slot after stage g-1 whose residue mod vp its rank has
    not used yet, so no rank ever gets two stages in one slot. For vp <= 2 (and any pp) the
    slots are just 0, 1, 2, ...; with vp >= 3 fold points force gaps (pp=2, vp=3: 0 1 2 4 5 6).

    `reorder` is VPP-Async's swap (VPP paper §4.4): the first stage that comes back across ranks
    after the fold, and everything after it, starts one period (vp slots) later, so rank 0 runs
    s0(k+1) before s3(k-1) and each transfer is issued while its peer is computing."""
    vp = layout.vp
    used: dict[int, set[int]] = {rank: set() for rank in range(layout.pp)}
    slots: list[int] = []
    slot, shift = -1, 0
    for g, rank in enumerate(layout.ranks):
        slot += 1
        while slot % vp in used[rank]:
            slot += 1
        used[rank].add(slot % vp)
        returning = (g // layout.pp) % 2 == 1 and not layout.is_fold_continuation(g)
        if reorder and returning and shift == 0:
            shift = vp
        slots.append(slot + shift)
    return slots


def rank_orders(
    requests: Sequence[ChunkedRequest],
    layout: StageLayout,
    pack_windows: Sequence[int] = (),
    reorder: bool = False,
) -> list[list[Task]]:
    """Program order of compute tasks per rank. `pack_windows[r]` is the number of stage-0 tasks
    of request r+1 packed into request r's drain on rank 0 (missing or 0: no packing);
    `reorder` applies VPP-Async's swap (stage_slots)."""
    vp = layout.vp
    slots = stage_slots(layout, reorder)
    per_rank_stages = [layout.stages_of(rank) for rank in range(layout.pp)]
    segments: list[list[list[Task]]] = []  # [request][rank] -> tasks
    for r, req in enumerate(requests):
        per_rank = []
        for stages in per_rank_stages:
            tasks = [(r, k, g) for k in range(len(req.chunks)) for g in stages]
            tasks.sort(key=lambda t: t[1] * vp + slots[t[2]])
            per_rank.append(tasks)
        segments.append(per_rank)
    first_rank = layout.ranks[0]
    drains_on_first = layout.ranks[-1] == first_rank  # even vp: the V comes back to rank 0
    for r, window in enumerate(pack_windows):
        if window <= 0 or r + 1 >= len(requests) or not drains_on_first:
            continue
        here, after = segments[r][first_rank], segments[r + 1][first_rank]
        moved = [t for t in after if t[2] == 0 and t[1] < window]
        if not here or not moved:
            continue
        segments[r][first_rank] = here[:-1] + moved + here[-1:]
        moved_set = set(moved)
        segments[r + 1][first_rank] = [t for t in after if t not in moved_set]
    return [[task for seg in segments for task in seg[rank]] for rank in range(layout.pp)]


@dataclass(frozen=True)
class Plan:
    """A schedule compiled to a task graph. Per-node arrays, indexed by node id:

    kind (COMPUTE, SEND, RECV, TRANSFER), rank (executing rank; TRANSFER: sender), peer (other
    rank of a communication node, else -1), request/chunk/stage/tokens/prefix (the chunk the node
    belongs to; SEND/TRANSFER: producing stage, RECV: consuming stage), pays_overhead (compute
    nodes that start a new stage call), release_request (request whose arrival releases the
    node, else -1), post_node (TRANSFER: the receiver's task whose start posts the receive, -1:
    posted at arrival), send_node (RECV: its SEND), prev_on_rank (RECV: previous node on its rank).
    """

    graph: TaskGraph
    layout: StageLayout
    requests: tuple[ChunkedRequest, ...]
    comm_mode: str | None
    kind: np.ndarray
    rank: np.ndarray
    peer: np.ndarray
    request: np.ndarray
    chunk: np.ndarray
    stage: np.ndarray
    tokens: np.ndarray
    prefix: np.ndarray
    pays_overhead: np.ndarray
    release_request: np.ndarray
    post_node: np.ndarray
    send_node: np.ndarray
    prev_on_rank: np.ndarray

    @property
    def size(self) -> int:
        return len(self.kind)


def build_plan(
    requests: Sequence[ChunkedRequest],
    layout: StageLayout,
    orders: Sequence[Sequence[Task]],
    comm_mode: str | None,
) -> Plan:
    """Compile program orders into a task graph; `comm_mode` None means transfers are free."""
    requests = tuple(requests)
    nodes: list[list[int]] = []  # kind, rank, peer, r, k, g, tokens, prefix
    task_id: dict[Task, int] = {}
    prefixes = [req.prefixes for req in requests]
    for r, req in enumerate(requests):
        for k, (c, p) in enumerate(zip(req.chunks, prefixes[r], strict=True)):
            for g in range(layout.num_stages):
                task_id[(r, k, g)] = len(nodes)
                nodes.append([COMPUTE, layout.ranks[g], -1, r, k, g, c, p])

    def crosses(g: int) -> bool:  # does stage g receive its input from another rank?
        return comm_mode is not None and g > 0 and layout.ranks[g] != layout.ranks[g - 1]

    send_of: dict[Task, int] = {}
    recv_of: dict[Task, int] = {}
    xfer_of: dict[Task, int] = {}
    for (r, k, g), _ in task_id.items():
        if not crosses(g):
            continue
        src, dst = layout.ranks[g - 1], layout.ranks[g]
        c, p = requests[r].chunks[k], prefixes[r][k]
        if comm_mode == "blocking":
            send_of[(r, k, g)] = len(nodes)
            nodes.append([SEND, src, dst, r, k, g - 1, c, p])
            recv_of[(r, k, g)] = len(nodes)
            nodes.append([RECV, dst, src, r, k, g, c, p])
        else:
            xfer_of[(r, k, g)] = len(nodes)
            nodes.append([TRANSFER, src, dst, r, k, g - 1, c, p])

    n = len(nodes)
    after_end: list[list[int]] = [[] for _ in range(n)]
    after_start: list[list[int]] = [[] for _ in range(n)]
    post_node = np.full(n, -1, dtype=np.int64)
    send_node = np.full(n, -1, dtype=np.int64)
    prev_on_rank = np.full(n, -1, dtype=np.int64)
    release_request = np.full(n, -1, dtype=np.int32)
    pays_overhead = np.zeros(n, dtype=bool)

    seen = 0
    for rank, order in enumerate(orders):
        prev = -1
        prev_compute = -1
        for task in order:
            r, k, g = task
            node = task_id[task]
            if nodes[node][1] != rank:
                raise ValueError(f"task {task} is not on rank {rank}")
            seen += 1
            if (r, k, g) in recv_of:
                recv = recv_of[(r, k, g)]
                after_end[recv].append(send_of[(r, k, g)])
                if prev >= 0:
                    after_end[recv].append(prev)
                send_node[recv] = send_of[(r, k, g)]
                prev_on_rank[recv] = prev
                prev = recv
                after_end[node].append(recv)
            if (r, k, g) in xfer_of:
                xfer = xfer_of[(r, k, g)]
                after_end[node].append(xfer)
                release_request[xfer] = r
                if prev_compute >= 0:
                    after_start[xfer].append(prev_compute)
                    post_node[xfer] = prev_compute
            if prev >= 0:
                after_end[node].append(prev)
            if g > 0 and not crosses(g):
                after_end[node].append(task_id[(r, k, g - 1)])
            if k > 0:
                after_end[node].append(task_id[(r, k - 1, g)])
            if k == 0 and g == 0:
                release_request[node] = r
            fold_continuation = g > 0 and prev >= 0 and prev == task_id[(r, k, g - 1)]
            pays_overhead[node] = not fold_continuation
            prev = prev_compute = node
            successor = (r, k, g + 1)
            if successor in send_of:
                send = send_of[successor]
                after_end[send].append(node)
                prev = send
            if successor in xfer_of:
                after_end[xfer_of[successor]].append(node)

    if seen != len(task_id):
        raise ValueError(f"program orders hold {seen} tasks, the requests have {len(task_id)}")
    arr = np.array(nodes, dtype=np.int64).reshape(n, 8)
    return Plan(
        graph=build_graph(after_end, after_start),
        layout=layout,
        requests=requests,
        comm_mode=comm_mode,
        kind=arr[:, 0].astype(np.int8),
        rank=arr[:, 1].astype(np.int32),
        peer=arr[:, 2].astype(np.int32),
        request=arr[:, 3].astype(np.int32),
        chunk=arr[:, 4].astype(np.int32),
        stage=arr[:, 5].astype(np.int32),
        tokens=arr[:, 6],
        prefix=arr[:, 7],
        pays_overhead=pays_overhead,
        release_request=release_request,
        post_node=post_node,
        send_node=send_node,
        prev_on_rank=prev_on_rank,
    )


def estimate_pack_window(
    drain_work_ns: float, last_exit_ns: float, next_entry_ns: Sequence[float]
) -> int:
    """Algorithm 2's window: rank 0 idles while the last chunk's middle stages run
    (`drain_work_ns`) minus the previous chunk's exit stage it still has to do
    (`last_exit_ns`); the next request's first chunks (`next_entry_ns`, stage-0 times in order)
    are packed greedily while they fit. With τ = (k+1) t: window (N+1) t (VPP paper §4.7)."""
    budget = drain_work_ns - last_exit_ns
    used, count = 0.0, 0
    for t in next_entry_ns:
        if used + t > budget:
            break
        used += t
        count += 1
    return count
