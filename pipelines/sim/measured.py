"""The fitted cost model: τ(c, p) = α c + β c (p + c/2), plus γ per stage call.

FittedCost models the full-model latency of a chunk of c tokens after p prefix tokens (per chunk
k at fixed c this is tau_k = a + b k, docs/schedules.md §4.1); a stage holding a fraction f
of the layers takes f of it. `from_chunks` fits it to a frame of chunk timings (rank, vstage,
request_id, chunk_idx, tokens, prefix_tokens, busy_ns: the columns of the canonical chunks
table) whose stages split the layers evenly unless `stage_fractions` says otherwise. The table of
measured τ a replay uses beside it is pipelines/replay/costs.TabulatedCost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import polars as pl

DEFAULT_LAYERS = 120  # divisible by 1..6, 8, 10, 12: any even replay layout splits it exactly


def with_fraction(
    chunks: pl.DataFrame, stage_fractions: Mapping[int, float] | None
) -> pl.DataFrame:
    """`chunks` with `fraction`: the share of the layers its vstage holds (even by default)."""
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
        frame = with_fraction(chunks, stage_fractions)
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
