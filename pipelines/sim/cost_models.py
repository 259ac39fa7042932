"""Latency of one pipeline stage running a prefill chunk of c tokens after a prefix of p tokens.

Every cost model answers `stage_ns(tokens, prefix, layer_lo, layer_hi)`: the device time, in ns,
of layers [layer_lo, layer_hi) on a chunk (numpy arrays, vectorised over tasks), without the
fixed per-call overhead `call_overhead_ns`, which the schedule adds once per stage invocation
(a fold-point continuation on the same rank runs in the same call and does not pay it again).

`LayeredCost` is the analytic model of docs/schedules.md §4, per layer l:

    gemm      G_l c / (R_gemm * c / (c + c_half))           linear layers; small chunks run less
                                                             efficiently (c_half: half-efficiency)
    dense     A_l (c p + c (c+1)/2 + δ c (c-1)/2) / R_attn   causal GQA / MHA-mode MLA pairs; δ:
                                                             share of the chunk's masked diagonal
                                                             block the kernel computes anyway
    sparse    S_l sum_q min(pos_q + 1, k_top) / R_attn       DSA top-k attention (flat in p once
                                                             p >= k_top)
    indexer   I_l (c p + c (c+1)/2) / R_low                  DSA lightning indexer, linear in p
    expert    E_l c / B_ep + lambda_ep [MoE layer]            expert-parallel dispatch + combine
    fixed     lambda_layer                                    per-layer launches
    prefix    kappa_l p                                       per-chunk work on the cached prefix
                                                             (MLA: up-project the latent, MatMulV3)
    slice     sigma_l                                         per-chunk operator cost of slicing
                                                             the latent cache (MLA: Slice); a
                                                             constant per chunk and layer

All FLOP coefficients are per layer for the whole model; a stage run by a TP group divides them
by `tp`. Presets (pipelines/sim/presets.py) fill these arrays from architecture figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from pipelines.sim.roofline import Accelerator, DenseModel, step_cost


@runtime_checkable
class StageCost(Protocol):
    """What the schedules need from a cost model."""

    num_layers: int
    call_overhead_ns: float

    def stage_ns(
        self, tokens: np.ndarray, prefix: np.ndarray, layer_lo: np.ndarray, layer_hi: np.ndarray
    ) -> np.ndarray:
        """Device time (ns) of layers [lo, hi) on chunks (tokens, prefix), without call overhead."""
        ...


def causal_pairs(tokens: np.ndarray, prefix: np.ndarray) -> np.ndarray:
    """(query, key) pairs of a causal chunk: each query attends to the prefix and to itself and
    the chunk's earlier tokens: c p + c (c + 1) / 2."""
    c = np.asarray(tokens, dtype=np.float64)
    p = np.asarray(prefix, dtype=np.float64)
    return c * p + c * (c + 1.0) / 2.0


def topk_pairs(tokens: np.ndarray, prefix: np.ndarray, k_top: int) -> np.ndarray:
    """Pairs of top-k sparse attention: query at position i (0-based) reads min(i + 1, k_top) keys,
    summed over the chunk's positions p .. p + c - 1 (closed form)."""
    c = np.asarray(tokens, dtype=np.float64)
    p = np.asarray(prefix, dtype=np.float64)
    lo, hi = p + 1.0, p + c  # key counts without the cap run lo .. hi
    k = float(k_top)
    below = np.clip(np.minimum(hi, k), lo - 1.0, None)  # last position still under the cap
    n_below = np.maximum(below - lo + 1.0, 0.0)
    sum_below = n_below * (lo + below) / 2.0
    return sum_below + (c - n_below) * k


@dataclass(frozen=True)
class LayeredCost:
    """Analytic per-layer cost (see module docstring). Arrays have one entry per layer."""

    name: str
    gemm_flops_per_token: np.ndarray
    dense_flops_per_pair: np.ndarray
    sparse_flops_per_pair: np.ndarray
    index_flops_per_pair: np.ndarray
    ep_bytes_per_token: np.ndarray
    prefix_ns_per_token: np.ndarray
    k_top: int = 2048
    tp: int = 1
    gemm_flops_per_s: float = 1e15
    gemm_half_tokens: float = 0.0
    attn_flops_per_s: float = 1e15
    low_precision_flops_per_s: float = 2e15
    ep_bytes_per_s: float = float("inf")
    ep_latency_ns: float = 0.0
    layer_overhead_ns: float = 0.0
    call_overhead_ns: float = 0.0
    attn_diagonal_extra: float = 0.0
    prefix_chunk_ns: np.ndarray | None = None
    _cum: dict[str, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for key in (
            "gemm_flops_per_token",
            "dense_flops_per_pair",
            "sparse_flops_per_pair",
            "index_flops_per_pair",
            "ep_bytes_per_token",
            "prefix_ns_per_token",
            "prefix_chunk_ns",
        ):
            if key == "prefix_chunk_ns" and self.prefix_chunk_ns is None:
                self._cum[key] = np.zeros(self.num_layers + 1)
                continue
            values = np.asarray(getattr(self, key), dtype=np.float64)
            if values.shape != (self.num_layers,):
                raise ValueError(f"{key} must have one value per layer")
            self._cum[key] = np.concatenate(([0.0], np.cumsum(values)))
        moe = (np.asarray(self.ep_bytes_per_token) > 0).astype(np.float64)
        self._cum["moe_layers"] = np.concatenate(([0.0], np.cumsum(moe)))

    @property
    def num_layers(self) -> int:
        return len(self.gemm_flops_per_token)

    def _range(self, key: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        cum = self._cum[key]
        return cum[hi] - cum[lo]

    def components_ns(
        self, tokens: np.ndarray, prefix: np.ndarray, layer_lo: np.ndarray, layer_hi: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Each term of the model separately (ns), for inspection and calibration."""
        c = np.asarray(tokens, dtype=np.float64)
        p = np.asarray(prefix, dtype=np.float64)
        lo = np.asarray(layer_lo, dtype=np.int64)
        hi = np.asarray(layer_hi, dtype=np.int64)
        tp = float(self.tp)
        efficiency = c / (c + self.gemm_half_tokens) if self.gemm_half_tokens > 0 else 1.0
        pairs = causal_pairs(c, p)
        masked = self.attn_diagonal_extra * c * (c - 1.0) / 2.0
        g = self._range("gemm_flops_per_token", lo, hi)
        a = self._range("dense_flops_per_pair", lo, hi)
        s = self._range("sparse_flops_per_pair", lo, hi)
        i = self._range("index_flops_per_pair", lo, hi)
        e = self._range("ep_bytes_per_token", lo, hi)
        moe_layers = self._range("moe_layers", lo, hi)
        return {
            "gemm": 1e9 * g * c / tp / (self.gemm_flops_per_s * efficiency),
            "dense_attention": 1e9 * a * (pairs + masked) / tp / self.attn_flops_per_s,
            "sparse_attention": 1e9 * s * topk_pairs(c, p, self.k_top) / tp / self.attn_flops_per_s,
            "indexer": 1e9 * i * pairs / tp / self.low_precision_flops_per_s,
            "expert_parallel": 1e9 * e * c / self.ep_bytes_per_s + moe_layers * self.ep_latency_ns,
            "fixed": (hi - lo) * self.layer_overhead_ns,
            "prefix": self._range("prefix_ns_per_token", lo, hi) * p,
            "slice": self._range("prefix_chunk_ns", lo, hi) * (c > 0),
        }

    def stage_ns(
        self, tokens: np.ndarray, prefix: np.ndarray, layer_lo: np.ndarray, layer_hi: np.ndarray
    ) -> np.ndarray:
        parts = self.components_ns(tokens, prefix, layer_lo, layer_hi)
        return sum(parts.values())  # type: ignore[return-value]


@dataclass(frozen=True)
class RooflineStageCost:
    """The chunked-prefill reference's roofline (pipelines/sim/roofline.py) for prefill-only steps,
    split by layers: a stage holding a fraction f of the layers takes f of the full-model step
    time."""

    model: DenseModel
    hardware: Accelerator
    call_overhead_ns: float = 0.0

    @property
    def num_layers(self) -> int:
        return self.model.layers

    def stage_ns(
        self, tokens: np.ndarray, prefix: np.ndarray, layer_lo: np.ndarray, layer_hi: np.ndarray
    ) -> np.ndarray:
        c = np.atleast_1d(np.asarray(tokens, dtype=np.int64))
        p = np.broadcast_to(np.asarray(prefix, dtype=np.int64), c.shape)
        full = np.array(
            [
                step_cost(self.model, self.hardware, 0, 0, np.array([ci]), np.array([pi])).seconds
                for ci, pi in zip(c.tolist(), p.tolist(), strict=True)
            ]
        )
        frac = (np.asarray(layer_hi) - np.asarray(layer_lo)) / self.model.layers
        return 1e9 * full * frac
