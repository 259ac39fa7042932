"""Cost models built from measurements: a fitted τ(c, p) and a table of measured τ.

Both read a chunks frame in the canonical schema (pipelines/ingest/frames.py SCHEMAS["chunks"]:
rank, vstage, request_id, chunk_idx, tokens, prefix_tokens, busy_ns, ...) of one run and model
the full-model latency of a chunk; a stage holding a fraction f of the layers takes f of it. The
measured run's stages are assumed to split the layers evenly unless `stage_fractions` says
otherwise.

FittedCost:   full(c, p) = alpha c + beta c (p + c/2),  plus gamma per stage call
              (docs/schedules.md §4.1: per chunk k at fixed c this is tau_k = a + b k).
TabulatedCost: the measured full-model latency of each (c, p) seen, interpolated linearly in p
              between chunks of the same size, FittedCost for chunk sizes never measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl

DEFAULT_LAYERS = 120  # divisible by 1..6, 8, 10, 12: any even replay layout splits it exactly


def _with_fraction(chunks: pl.DataFrame, stage_fractions: Mapping[int, float] | None):
    stages = sorted(chunks["vstage"].unique().to_list())
    if stage_fractions is None:
        stage_fractions = {s: 1.0 / len(stages) for s in stages}
    missing = set(stages) - set(stage_fractions)
    if missing:
        raise ValueError(f"stage_fractions lacks stages {sorted(missing)}")
    frac = pl.col("vstage").replace_strict(dict(stage_fractions), return_dtype=pl.Float64)
    return chunks.with_columns(frac.alias("fraction"))


@dataclass(frozen=True)
class FittedCost:
    """full(c, p) = alpha c + beta c (p + c/2) ns, split by layer fraction, + gamma per call."""

    alpha_ns: float
    beta_ns: float
    call_overhead_ns: float = 0.0
    num_layers: int = DEFAULT_LAYERS
    fit_info: dict = field(default_factory=dict, compare=False)

    def full_ns(self, tokens: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        c = np.asarray(tokens, dtype=np.float64)
        p = np.asarray(prefix, dtype=np.float64)
        return self.alpha_ns * c + self.beta_ns * c * (p + c / 2.0)

    def stage_ns(
        self, tokens: np.ndarray, prefix: np.ndarray, layer_lo: np.ndarray, layer_hi: np.ndarray
    ) -> np.ndarray:
        frac = (np.asarray(layer_hi) - np.asarray(layer_lo)) / self.num_layers
        return self.full_ns(tokens, prefix) * frac

    def tau_line(self, chunk_tokens: int) -> tuple[float, float]:
        """(a, b) of the full-model tau_k = a + b k for chunks of `chunk_tokens` (p = k c)."""
        c = float(chunk_tokens)
        return self.alpha_ns * c + self.beta_ns * c * c / 2.0, self.beta_ns * c * c

    @classmethod
    def from_tau_line(
        cls, a_ns: float, b_ns: float, chunk_tokens: int, num_layers: int = DEFAULT_LAYERS
    ) -> FittedCost:
        """The model whose full-model tau_k = a + b k at chunk size `chunk_tokens`
        (tau_k = (k+1) t per stage of S equal stages: a = b = S t)."""
        c = float(chunk_tokens)
        return cls((a_ns - b_ns / 2.0) / c, b_ns / (c * c), 0.0, num_layers)

    @classmethod
    def from_chunks(
        cls,
        chunks: pl.DataFrame,
        *,
        gamma_ns: float | None = None,
        stage_fractions: Mapping[int, float] | None = None,
        num_layers: int = DEFAULT_LAYERS,
    ) -> FittedCost:
        """Least-squares fit of busy_ns = f (alpha c + beta c (p + c/2)) + gamma over every row.
        With a single chunk size alpha c and gamma cannot be told apart: gamma is then fixed
        to `gamma_ns` (default 0). A given `gamma_ns` is always held fixed."""
        frame = _with_fraction(chunks, stage_fractions)
        c = frame["tokens"].cast(pl.Float64).to_numpy()
        p = frame["prefix_tokens"].cast(pl.Float64).to_numpy()
        f = frame["fraction"].to_numpy()
        y = frame["busy_ns"].cast(pl.Float64).to_numpy()
        columns = [f * c, f * c * (p + c / 2.0)]
        free_gamma = gamma_ns is None and len(np.unique(c)) > 1
        if free_gamma:
            columns.append(np.ones_like(c))
        else:
            y = y - (gamma_ns or 0.0)
        design = np.column_stack(columns)
        coef, *_ = np.linalg.lstsq(design, y, rcond=None)
        fitted = design @ coef
        ss_res = float(((y - fitted) ** 2).sum())
        ss_tot = float(((y - y.mean()) ** 2).sum())
        gamma = float(coef[2]) if free_gamma else float(gamma_ns or 0.0)
        info = {"rows": len(y), "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0}
        return cls(float(coef[0]), float(coef[1]), gamma, num_layers, info)


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
    ) -> TabulatedCost:
        """Sum busy_ns over the stages of each (request, chunk), scale to the whole model by
        the layer fraction those stages cover, and average over chunks with the same (c, p).
        A known per-call overhead `gamma_ns` is taken off every measured stage first and charged
        per call again in the replayed schedule (whose call count may differ); the fallback for
        unmeasured chunk sizes is FittedCost.from_chunks(gamma_ns=...)."""
        frame = _with_fraction(chunks, stage_fractions)
        gamma = float(gamma_ns or 0.0)
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
        fallback = FittedCost.from_chunks(
            chunks, gamma_ns=gamma_ns, stage_fractions=stage_fractions, num_layers=num_layers
        )
        calls = 0 if gamma_ns is not None else frame["vstage"].n_unique()
        return cls(table, fallback, num_layers, gamma, calls)


def _interp(x: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Linear interpolation with linear extrapolation from the end segments."""
    if len(xs) == 1:
        return np.full(len(x), ys[0])
    y = np.interp(x, xs, ys)
    lo, hi = x < xs[0], x > xs[-1]
    y[lo] = ys[0] + (x[lo] - xs[0]) * (ys[1] - ys[0]) / (xs[1] - xs[0])
    y[hi] = ys[-1] + (x[hi] - xs[-1]) * (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    return y
