"""The task order of each rank under CPP and VPP (fold-back) on PP ranks (no torch import).

A task is one forward of one chunk through one virtual stage. Virtual stage s runs on rank
`stage_rank(s)`: without VPP stage s on rank s; with VPP the fold-back layout (docs/schedules.md):
rounds of PP stages alternate direction, so with PP = 2, VP = 2 rank 0 runs stages 0 and 3 and
rank 1 stages 1 and 2. Each rank's order comes from a unit-cost list schedule (a rank always
takes the ready task of the highest stage, then the earliest chunk): a topological order of the
whole pipeline, so the ranks cannot deadlock when every receive is posted before the first
forward (rank_process.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.workload.config import PP, WorkloadConfig


@dataclass(frozen=True)
class Task:
    """Chunk k of request `req` (its j-th chunk overall) through virtual stage `vs`."""

    j: int
    req: int
    k: int
    vs: int
    recv_from: int | None  # rank the input comes from; None: embeddings or this rank's own stage
    send_to: int | None  # rank the output goes to; None: kept here (or the last stage)

    def tag(self, stages: int) -> int:
        """Message tag of this task's input: unique per (chunk, receiving stage)."""
        return self.j * stages + self.vs


def stage_rank(vs: int, pp: int = PP) -> int:
    """Rank of virtual stage `vs` in the fold-back layout."""
    lap, pos = divmod(vs, pp)
    return pos if lap % 2 == 0 else pp - 1 - pos


def rank_stages(cfg: WorkloadConfig, rank: int) -> list[int]:
    return [vs for vs in range(cfg.stages) if stage_rank(vs) == rank]


def _task(cfg: WorkloadConfig, j: int, vs: int) -> Task:
    req, k = divmod(j, cfg.chunks_per_request)
    here = stage_rank(vs)
    prev = stage_rank(vs - 1) if vs > 0 else here
    nxt = stage_rank(vs + 1) if vs + 1 < cfg.stages else here
    return Task(
        j=j,
        req=req,
        k=k,
        vs=vs,
        recv_from=prev if prev != here else None,
        send_to=nxt if nxt != here else None,
    )


def rank_tasks(cfg: WorkloadConfig) -> dict[int, list[Task]]:
    """Each rank's tasks in the order it runs them."""
    n = cfg.requests * cfg.chunks_per_request
    done: dict[tuple[int, int], int] = {}  # (j, vs) -> unit time it finished
    pending = {r: [(j, vs) for j in range(n) for vs in rank_stages(cfg, r)] for r in range(PP)}
    order: dict[int, list[Task]] = {r: [] for r in range(PP)}
    free = dict.fromkeys(range(PP), 0)
    t = 0
    while any(pending.values()):
        for r in range(PP):
            if free[r] > t:
                continue
            ready = [
                (j, vs)
                for j, vs in pending[r]
                if (vs == 0 or done.get((j, vs - 1), t + 1) <= t)
                and (j == 0 or done.get((j - 1, vs), t + 1) <= t)  # chunks go in order
            ]
            if not ready:
                continue
            j, vs = min(ready, key=lambda jv: (-jv[1], jv[0]))
            pending[r].remove((j, vs))
            order[r].append(_task(cfg, j, vs))
            done[(j, vs)] = t + 1
            free[r] = t + 1
        t += 1
    return order
