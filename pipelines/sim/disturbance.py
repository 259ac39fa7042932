"""Disturbances of the simulator's task durations beyond iid noise, the ones real traces show:

* outlier chunk: chunk `outlier_k` of every request takes `outlier_factor` x its time on every
  stage (a slow kernel, an HCCL retry, a host stall);
* serial correlation: the lognormal noise of the compute tasks of each stage follows an AR(1)
  process over that stage's chunk sequence, z_j = rho z_{j-1} + sqrt(1 - rho^2) e_j, so its
  marginal sigma stays `noise` (thermal / clock state carried from chunk to chunk);
* throttle step: every compute task from the `throttle_from` fraction of its stage's chunk
  sequence on takes `throttle_factor` x its time (a clock step in the middle of the run). A
  harness draws the onset per run (`with_onset(draw_onset(n, rng), n)`): a throttle that starts
  at the same chunk in every run cannot be told from a real level step by any number of runs;
* run scale: every task of the run x run_factor x exp(run_sigma z), one z per run (run-to-run
  speed; run_factor a whole run slower, communication included).

`disturbed_durations` replaces the simulator's iid noise when a Disturbance is given; without one
the simulator draws exactly what it drew before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pipelines.sim.task_order import COMPUTE, Plan


@dataclass(frozen=True)
class Disturbance:
    """Options of the disturbed noise (defaults: none of them)."""

    outlier_k: int | None = None
    outlier_factor: float = 1.0
    ar_rho: float = 0.0
    throttle_factor: float = 1.0
    throttle_from: float = 0.5
    run_sigma: float = 0.0
    run_factor: float = 1.0

    def __post_init__(self) -> None:
        if not -1.0 < self.ar_rho < 1.0:
            raise ValueError(f"ar_rho must lie in (-1, 1), got {self.ar_rho}")
        factors = (self.outlier_factor, self.throttle_factor, self.run_factor)
        if min(factors) <= 0 or self.run_sigma < 0:
            raise ValueError("factors must be > 0 and run_sigma >= 0")
        if not 0.0 <= self.throttle_from <= 1.0:
            raise ValueError(f"throttle_from must lie in [0, 1], got {self.throttle_from}")

    def throttle_start(self, n: int) -> int:
        """The first throttled position of a chunk sequence of length n."""
        return int(np.ceil(self.throttle_from * n))

    def with_onset(self, chunk: int, n: int) -> Disturbance:
        """The same disturbance with the throttle starting at chunk `chunk` of a chunk sequence
        of length n (throttle_start(n) == chunk)."""
        if not 0 <= chunk <= n:
            raise ValueError(f"onset chunk must lie in [0, {n}], got {chunk}")
        return replace(self, throttle_from=max(chunk - 0.5, 0.0) / n)

    def describe(self) -> str:
        parts = []
        if self.outlier_k is not None and self.outlier_factor != 1.0:
            parts.append(f"chunk {self.outlier_k} x{self.outlier_factor:g}")
        if self.ar_rho:
            parts.append(f"AR(1) rho={self.ar_rho:g}")
        if self.throttle_factor != 1.0:
            parts.append(f"x{self.throttle_factor:g} from {self.throttle_from:.0%} of the run")
        if self.run_factor != 1.0:
            parts.append(f"whole run x{self.run_factor:g}")
        if self.run_sigma:
            parts.append(f"run scale sigma={self.run_sigma:g}")
        return ", ".join(parts) or "none"


def draw_onset(n: int, rng: np.random.Generator) -> int:
    """A throttle onset drawn uniformly from chunks 1..n-1 of a sequence of n chunks (at
    least one chunk before and one from it on)."""
    return int(rng.integers(1, n))


def ar1_sequence(n: int, rho: float, rng: np.random.Generator) -> np.ndarray:
    """A stationary AR(1) sequence of n standard-normal marginals."""
    e = rng.standard_normal(n)
    z = np.empty(n)
    if n:
        z[0] = e[0]
    for j in range(1, n):
        z[j] = rho * z[j - 1] + np.sqrt(1 - rho * rho) * e[j]
    return z


def disturbed_durations(
    plan: Plan,
    dur: np.ndarray,
    noise: float,
    seed: int,
    disturbance: Disturbance,
    fixed: np.ndarray | None = None,
) -> tuple[np.ndarray, float]:
    """(integer-ns durations of one run, its run factor): multiplicative lognormal noise sigma
    `noise` per task (AR(1) over each stage's chunk sequence for compute tasks when ar_rho != 0)
    and the disturbance's factors; `dur` is indexed by the plan's nodes. The outlier and throttle
    factors slow the kernels only: `fixed` (per node, the blocking collectives a compute call
    waits for) is left out of them, so a 5 % throttle is 5 % of compute. The run factor scales
    everything, the caller's collective parts too."""
    kind, request, chunk, stage = plan.kind, plan.request, plan.chunk, plan.stage
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(dur.shape)
    compute = kind == COMPUTE
    factor = np.ones(dur.shape)
    for s in np.unique(stage[compute]):
        nodes = np.flatnonzero(compute & (stage == s))
        order = nodes[np.lexsort((chunk[nodes], request[nodes]))]  # the stage's chunk sequence
        if disturbance.ar_rho:
            z[order] = ar1_sequence(len(order), disturbance.ar_rho, rng)
        if disturbance.throttle_factor != 1.0:
            factor[order[disturbance.throttle_start(len(order)) :]] *= disturbance.throttle_factor
    if disturbance.outlier_k is not None:
        factor[compute & (chunk == disturbance.outlier_k)] *= disturbance.outlier_factor
    run = disturbance.run_factor
    if disturbance.run_sigma:
        run *= float(np.exp(disturbance.run_sigma * rng.standard_normal()))
    held = np.zeros(dur.shape) if fixed is None else np.minimum(fixed, dur)
    slowed = (dur - held) * factor + held
    scaled = slowed * run * (np.exp(noise * z) if noise > 0 else 1.0)
    return np.rint(scaled).astype(np.int64), run
