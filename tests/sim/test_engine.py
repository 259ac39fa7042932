"""Max-plus task-graph engine: hand-checked graphs, deadlocks, batch = scalar, a reference."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.sim.event_graph import DeadlockError, build_graph, evaluate


def test_chain_and_join() -> None:
    # 0 -> 1 -> 3, 0 -> 2 -> 3 ; node 2 released at 7
    graph = build_graph([[], [0], [0], [1, 2]])
    start, end = evaluate(graph, np.array([2, 3, 1, 4]), np.array([0, 0, 7, 0]))
    assert start.tolist() == [0, 2, 7, 8]
    assert end.tolist() == [2, 5, 8, 12]


def test_after_start_edges() -> None:
    graph = build_graph([[], [], [0]], [[], [0], [1]])
    start, end = evaluate(graph, np.array([10, 1, 1]))
    assert start.tolist() == [0, 0, 10]
    assert end.tolist() == [10, 1, 11]


def test_cycle_is_a_deadlock() -> None:
    with pytest.raises(DeadlockError):
        build_graph([[1], [2], [0]])


def _random_dag(rng: np.random.Generator, n: int) -> tuple[list[list[int]], list[list[int]]]:
    perm = rng.permutation(n)  # random topological labelling
    a_end: list[list[int]] = [[] for _ in range(n)]
    a_start: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        for j in rng.choice(i, size=min(i, 3), replace=False):
            (a_end if rng.random() < 0.8 else a_start)[perm[i]].append(int(perm[j]))
    return a_end, a_start


def _reference(a_end, a_start, dur, release):
    """Fixed-point relaxation, independent of any evaluation order."""
    n = len(dur)
    start = np.array(release, dtype=np.int64)
    for _ in range(n + 1):
        end = start + dur
        new = start.copy()
        for i in range(n):
            for d in a_end[i]:
                new[i] = max(new[i], end[d])
            for d in a_start[i]:
                new[i] = max(new[i], start[d])
        if (new == start).all():
            return start, start + dur
        start = new
    raise AssertionError("no fixed point")


@pytest.mark.parametrize("seed", range(5))
def test_random_graphs_match_reference_and_batch_matches_scalar(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a_end, a_start = _random_dag(rng, 60)
    graph = build_graph(a_end, a_start)
    dur = rng.integers(0, 100, size=(60, 4))
    release = rng.integers(0, 50, size=(60, 4))
    start_b, end_b = evaluate(graph, dur, release)
    for col in range(4):
        s, e = evaluate(graph, dur[:, col], release[:, col])
        rs, re_ = _reference(a_end, a_start, dur[:, col], release[:, col])
        assert (s == rs).all() and (e == re_).all()
        assert (start_b[:, col] == s).all() and (end_b[:, col] == e).all()
