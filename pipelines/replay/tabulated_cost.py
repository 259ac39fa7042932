"""TabulatedCost: a replay's cost model, the measured τ of one run.

The measured full-model latency of each (c, p) seen in a chunks frame (canonical schema),
interpolated linearly in p between chunks of the same size, FittedCost
(pipelines/sim/fitted_cost.py) for chunk sizes never measured; a stage holding a fraction f of the
layers takes f of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.sim.fitted_cost import DEFAULT_LAYERS, FittedCost, Overheads, with_fraction


@dataclass(frozen=True)
class TabulatedCost:
    """Measured full-model latency per (tokens, prefix), interpolated in p per chunk size."""

    table: Mapping[int, tuple[np.ndarray, np.ndarray]]  # tokens -> (sorted prefixes, ns)
    fallback: FittedCost
    num_layers: int = DEFAULT_LAYERS
    call_overhead_ns: float = 0.0
    fallback_calls: int = 1  # calls per chunk whose overhead the measured times include

    def full_ns(self, tokens: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        c = np.atleast_1d(np.asarray(tokens, dtype=np.int64))
        p = np.broadcast_to(np.asarray(prefix, dtype=np.float64), c.shape)
        out = self.fallback.full_ns(c, p) + self.fallback_calls * self.fallback.call_overhead_ns
        for size in np.unique(c).tolist():
            if size not in self.table:
                continue
            xs, ys = self.table[size]
            sel = c == size
            out[sel] = _interp(p[sel], xs, ys)
        return out

    def stage_ns(
        self, tokens: np.ndarray, prefix: np.ndarray, layer_lo: np.ndarray, layer_hi: np.ndarray
    ) -> np.ndarray:
        frac = (np.asarray(layer_hi) - np.asarray(layer_lo)) / self.num_layers
        return self.full_ns(tokens, prefix) * frac

    @classmethod
    def from_chunks(
        cls,
        chunks: pl.DataFrame,
        *,
        gamma_ns: float | None = None,
        stage_fractions: Mapping[int, float] | None = None,
        num_layers: int = DEFAULT_LAYERS,
        overheads: Overheads | None = None,
    ) -> TabulatedCost:
        """Sum busy_ns over the stages of each (request, chunk), scale to the whole model by
        the layer fraction those stages cover, and average over chunks with the same (c, p).
        The per-call overhead (`gamma_ns` if given, else the fallback fit's: identified from
        several chunk sizes or taken from `overheads`) is taken off every measured stage first
        and charged per call again in the replayed schedule (whose call count may differ); the
        fallback for unmeasured chunk sizes is FittedCost.from_chunks(...)."""
        frame = with_fraction(chunks, stage_fractions)
        fallback = FittedCost.from_chunks(
            chunks,
            gamma_ns=gamma_ns,
            stage_fractions=stage_fractions,
            num_layers=num_layers,
            overheads=overheads,
        )
        gamma = fallback.call_overhead_ns
        frame = frame.with_columns(pl.col("busy_ns").cast(pl.Float64) - gamma)
        per_chunk = (
            frame.group_by(["request_id", "chunk_idx"])
            .agg(
                pl.col("tokens").first(),
                pl.col("prefix_tokens").first(),
                (pl.col("busy_ns").sum() / pl.col("fraction").sum()).alias("full_ns"),
            )
            .group_by(["tokens", "prefix_tokens"])
            .agg(pl.col("full_ns").mean())
            .sort(["tokens", "prefix_tokens"])
        )
        table = {}
        for (size,), group in per_chunk.group_by(["tokens"], maintain_order=True):
            table[int(size)] = (
                group["prefix_tokens"].cast(pl.Float64).to_numpy(),
                group["full_ns"].to_numpy(),
            )
        return cls(table, fallback, num_layers, gamma, 0)


def _interp(x: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Linear interpolation with linear extrapolation from the end segments."""
    if len(xs) == 1:
        return np.full(len(x), ys[0])
    y = np.interp(x, xs, ys)
    lo, hi = x < xs[0], x > xs[-1]
    y[lo] = ys[0] + (x[lo] - xs[0]) * (ys[1] - ys[0]) / (xs[1] - xs[0])
    y[hi] = ys[-1] + (x[hi] - xs[-1]) * (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    return y
