"""Discrete-event evaluation of a static task graph (max-plus recurrence).

Every node n (a compute task, a send, a receive, a transfer on a link) starts when all of its
predecessors allow it and runs for `dur[n]`:

    start[n] = max(release[n], max_{d in after_end[n]} end[d], max_{d in after_start[n]} start[d])
    end[n]   = start[n] + dur[n]

A rank's program order (it runs its tasks in the schedule's order) and a link's FIFO order are
expressed as an `after_end` edge from the previous node on that rank or link, so the resource
constraint and the data dependencies are the same kind of edge. Because the order on every
resource is fixed by the schedule, the event-driven simulation reduces to one pass over the nodes
in a topological order: no event queue, no per-token loop. A cycle (a schedule whose program
orders wait on each other) raises `DeadlockError`.

`evaluate` takes durations of shape (n,) or (n, B): B configurations that share one graph (a
sweep over cost parameters, noise seeds, models) are evaluated together, vectorised over B.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


class DeadlockError(RuntimeError):
    """The program orders and data dependencies form a cycle: the schedule would hang."""


@dataclass(frozen=True)
class TaskGraph:
    """Predecessor lists per node and a topological evaluation order."""

    after_end: tuple[tuple[int, ...], ...]
    after_start: tuple[tuple[int, ...], ...]
    order: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.after_end)


def build_graph(
    after_end: Sequence[Sequence[int]], after_start: Sequence[Sequence[int]] | None = None
) -> TaskGraph:
    """Freeze predecessor lists and compute a topological order (Kahn's algorithm)."""
    n = len(after_end)
    a_end = tuple(tuple(d) for d in after_end)
    a_start = tuple(tuple(d) for d in after_start) if after_start is not None else ((),) * n
    indegree = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for node in range(n):
        for d in a_end[node]:
            succ[d].append(node)
        for d in a_start[node]:
            succ[d].append(node)
        indegree[node] = len(a_end[node]) + len(a_start[node])
    stack = [node for node in range(n - 1, -1, -1) if indegree[node] == 0]
    order: list[int] = []
    while stack:
        node = stack.pop()
        order.append(node)
        for s in succ[node]:
            indegree[s] -= 1
            if indegree[s] == 0:
                stack.append(s)
    if len(order) != n:
        stuck = [node for node in range(n) if indegree[node] > 0][:5]
        raise DeadlockError(f"schedule deadlocks: {n - len(order)} tasks never start, e.g. {stuck}")
    return TaskGraph(a_end, a_start, tuple(order))


def evaluate(
    graph: TaskGraph, dur: np.ndarray, release: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Start and end times (int64 ns) of every node; `dur`/`release` are (n,) or (n, B)."""
    dur = np.asarray(dur, dtype=np.int64)
    if release is None:
        release = np.zeros_like(dur)
    release = np.broadcast_to(np.asarray(release, dtype=np.int64), dur.shape)
    if dur.ndim == 1:
        return _evaluate_scalar(graph, dur, release)
    return _evaluate_batch(graph, dur, release)


def _evaluate_scalar(
    graph: TaskGraph, dur: np.ndarray, release: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """One configuration: plain Python integers are faster than numpy scalars here."""
    d = dur.tolist()
    rel = release.tolist()
    start = [0] * len(d)
    end = [0] * len(d)
    a_end, a_start = graph.after_end, graph.after_start
    for node in graph.order:
        s = rel[node]
        for p in a_end[node]:
            e = end[p]
            if e > s:
                s = e
        for p in a_start[node]:
            e = start[p]
            if e > s:
                s = e
        start[node] = s
        end[node] = s + d[node]
    return np.array(start, dtype=np.int64), np.array(end, dtype=np.int64)


def _evaluate_batch(
    graph: TaskGraph, dur: np.ndarray, release: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """B configurations at once: the same recurrence on vectors of length B."""
    start = np.empty(dur.shape, dtype=np.int64)
    end = np.empty(dur.shape, dtype=np.int64)
    a_end, a_start = graph.after_end, graph.after_start
    for node in graph.order:
        s = release[node].copy()
        for p in a_end[node]:
            np.maximum(s, end[p], out=s)
        for p in a_start[node]:
            np.maximum(s, start[p], out=s)
        start[node] = s
        end[node] = s + dur[node]
    return start, end
