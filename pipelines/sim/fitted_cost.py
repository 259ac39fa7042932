"""The fitted cost model: τ(c, p) = α c + β c (p + c/2) + κ p + φ, plus γ per stage call.

FittedCost models the full-model latency of a chunk of c tokens after p prefix tokens (per chunk
k at fixed c this is tau_k = a + b k, docs/schedules.md §4.1); a stage holding a fraction f
of the layers takes f of it. φ is the fixed cost of one pass over the layers (kernel launches
and the small-chunk GEMM inefficiency: a GEMM running at c / (c + c_half) of its rate costs
α (c + c_half), a constant α c_half more per pass), κ p the prefix-only work (MLA's
per-chunk up-projection of the cached latent), γ the fixed cost of one stage call. With one
chunk size α c, φ and γ are one constant and β c p and κ p one slope: docs/fidelity.md §4.
`from_chunks` fits it to a frame of chunk timings (rank, vstage,
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
class Overheads:
    """What one chunk size cannot identify, from a hardware preset: γ per stage call, φ per
    full-model pass and κ per prefix token (full model), all ns."""

    call_ns: float
    fixed_ns: float
    prefix_ns: float
    source: str = "preset"


@dataclass(frozen=True)
class FittedCost:
    """full(c, p) = alpha c + beta c (p + c/2) + prefix p + fixed ns, split by layer fraction,
    + gamma (call_overhead_ns) per call."""

    alpha_ns: float
    beta_ns: float
    call_overhead_ns: float = 0.0
    num_layers: int = DEFAULT_LAYERS
    fit_info: dict = field(default_factory=dict, compare=False)
    prefix_ns: float = 0.0
    fixed_ns: float = 0.0

    def full_ns(self, tokens: np.ndarray, prefix: np.ndarray) -> np.ndarray:
        c = np.asarray(tokens, dtype=np.float64)
        p = np.asarray(prefix, dtype=np.float64)
        return (
            self.alpha_ns * c
            + self.beta_ns * c * (p + c / 2.0)
            + self.prefix_ns * p
            + self.fixed_ns
        )

    def stage_ns(
        self, tokens: np.ndarray, prefix: np.ndarray, layer_lo: np.ndarray, layer_hi: np.ndarray
    ) -> np.ndarray:
        frac = (np.asarray(layer_hi) - np.asarray(layer_lo)) / self.num_layers
        return self.full_ns(tokens, prefix) * frac

    def tau_line(self, chunk_tokens: int) -> tuple[float, float]:
        """(a, b) of the full-model tau_k = a + b k for chunks of `chunk_tokens` (p = k c)."""
        c = float(chunk_tokens)
        a = self.alpha_ns * c + self.beta_ns * c * c / 2.0 + self.fixed_ns
        return a, self.beta_ns * c * c + self.prefix_ns * c

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
        overheads: Overheads | None = None,
    ) -> FittedCost:
        """Least-squares fit of busy_ns = f (alpha c + beta c (p + c/2) + kappa p + phi) + gamma.

        Identified from the run (`fit_info["overhead"] == "fitted"`) when it has two or more
        chunk sizes at (c, p) points that pin all four columns (the design has full rank; a
        fixed-chunk run whose last chunk is shorter does not): alpha, beta, kappa and the constant
        f phi + gamma of a call; the constant is split between phi and gamma as in `overheads`
        (all of it is gamma without them). Otherwise (one chunk size, or `gamma_ns` given)
        gamma, phi and kappa are held at `overheads` ("preset"), at `gamma_ns` ("given") or at
        0 ("unidentified") and only alpha and beta are fitted."""
        frame = with_fraction(chunks, stage_fractions)
        c = frame["tokens"].cast(pl.Float64).to_numpy()
        p = frame["prefix_tokens"].cast(pl.Float64).to_numpy()
        f = frame["fraction"].to_numpy()
        y = frame["busy_ns"].cast(pl.Float64).to_numpy()
        sizes = int(np.unique(c).size)
        full = np.column_stack([f * c, f * c * (p + c / 2.0), f * p, np.ones_like(c)])
        free = gamma_ns is None and sizes > 1 and _pins_four_terms(c, p)
        if free:
            design = full
            coef, *_ = np.linalg.lstsq(design, y, rcond=None)
            alpha, beta, kappa, constant = (float(v) for v in coef)
            f_mean = float(f.mean())
            if overheads is not None and overheads.call_ns + overheads.fixed_ns > 0:
                share = overheads.call_ns / (overheads.call_ns + f_mean * overheads.fixed_ns)
            else:
                share = 1.0
            gamma, phi = constant * share, constant * (1.0 - share) / f_mean
            source = "fitted"
        else:
            if gamma_ns is not None:
                gamma, phi, kappa, source = float(gamma_ns), 0.0, 0.0, "given"
            elif overheads is not None:
                gamma, phi, kappa = overheads.call_ns, overheads.fixed_ns, overheads.prefix_ns
                source = overheads.source
            else:
                gamma, phi, kappa, source = 0.0, 0.0, 0.0, "unidentified"
            design = np.column_stack([f * c, f * c * (p + c / 2.0)])
            y = y - gamma - f * (phi + kappa * p)
            coef, *_ = np.linalg.lstsq(design, y, rcond=None)
            alpha, beta = (float(v) for v in coef)
        fitted = design @ coef
        ss_res = float(((y - fitted) ** 2).sum())
        ss_tot = float(((y - y.mean()) ** 2).sum())
        info = {
            "rows": len(y),
            "r2": 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0,
            "chunk_sizes": sizes,
            "overhead": source,
        }
        return cls(alpha, beta, gamma, num_layers, info, kappa, phi)


def _pins_four_terms(c: np.ndarray, p: np.ndarray) -> bool:
    """Do the measured (c, p) points tell c, c (p + c/2), p and 1 apart? Rank of the design
    over distinct points without the stage fractions (whose small spread between stages would
    otherwise make nearly collinear columns look independent)."""
    points = np.unique(np.column_stack([c, p]), axis=0)
    cc, pp = points[:, 0], points[:, 1]
    design = np.column_stack([cc, cc * (pp + cc / 2.0), pp, np.ones_like(cc)])
    scale = np.abs(design).max(axis=0)
    design = design / np.where(scale > 0, scale, 1.0)
    return bool(np.linalg.matrix_rank(design, tol=1e-6) == 4)
