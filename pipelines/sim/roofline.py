"""Roofline step cost for a dense decoder on one accelerator (the chunked-prefill reference's
model).

A scheduling step runs one forward pass over every token in it: decode tokens (one per running
stream) and prefill chunks. Its time is the larger of compute time and memory time:

    flops = 2 W tokens + sum_chunks 4 L d c (p + c/2)          (linear layers + causal attention)
    bytes = 2 W + kv_bytes (decoders * decode_ctx + sum_chunks (p + c))
    t     = max(flops / peak_flops, bytes / hbm_bandwidth)

where W = parameters, L = layers, d = hidden size, c = chunk tokens, p = tokens already in that
request's KV cache. Decode attention adds memory (its KV reads) but no counted FLOPs (as the
seed does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DenseModel:
    """The few model constants the roofline needs (bf16 weights and KV cache)."""

    name: str
    params: float
    layers: int
    hidden: int
    kv_bytes_per_token: int
    weight_bytes_per_param: int = 2


@dataclass(frozen=True)
class Accelerator:
    """Peak dense bf16 FLOP/s and HBM bandwidth (bytes/s)."""

    name: str
    peak_flops: float
    hbm_bandwidth: float


# The chunked-prefill reference: Llama-3-8B (7.5e9 parameters, 32 layers, d=4096, 8 KV heads x 128 x
# K,V x 2 bytes x 32 layers = 131072 bytes per token) on an H100 SXM (989 TFLOP/s bf16 dense, 3.35
# TB/s).
LLAMA3_8B = DenseModel(
    name="llama3-8b", params=7.50e9, layers=32, hidden=4096, kv_bytes_per_token=131072
)
H100_SXM = Accelerator(name="h100-sxm", peak_flops=989e12, hbm_bandwidth=3.35e12)

MODELS: dict[str, DenseModel] = {LLAMA3_8B.name: LLAMA3_8B}
ACCELERATORS: dict[str, Accelerator] = {H100_SXM.name: H100_SXM}


@dataclass(frozen=True)
class StepCost:
    """Cost of one step: its duration and each piece's share of it (piece 0 = the decode batch,
    pieces 1.. = the prefill chunks in scheduling order). Shares sum to 1 and follow the binding
    resource: FLOP shares when the step is compute-bound, byte shares when memory-bound (weight
    bytes are split by token count)."""

    seconds: float
    compute_bound: bool
    shares: np.ndarray


def step_cost(
    model: DenseModel,
    hw: Accelerator,
    decoders: int,
    decode_ctx: int,
    chunk_tokens: np.ndarray,
    chunk_prefix: np.ndarray,
) -> StepCost:
    """Roofline time of one step with `decoders` decode tokens at context `decode_ctx` and prefill
    chunks of `chunk_tokens` tokens on top of `chunk_prefix` cached tokens (arrays, same length)."""
    c = np.asarray(chunk_tokens, dtype=np.float64)
    p = np.asarray(chunk_prefix, dtype=np.float64)
    weight_bytes = model.weight_bytes_per_param * model.params
    linear = 2.0 * model.params
    piece_tokens = np.concatenate(([float(decoders)], c))
    piece_flops = linear * piece_tokens
    piece_flops[1:] += 4.0 * model.layers * model.hidden * c * (p + c / 2.0)
    kv = model.kv_bytes_per_token
    piece_bytes = np.concatenate(([kv * float(decoders) * decode_ctx], kv * (p + c)))
    total_tokens = piece_tokens.sum()
    if total_tokens > 0:
        piece_bytes = piece_bytes + weight_bytes * piece_tokens / total_tokens
    flops = float(piece_flops.sum())
    nbytes = float(piece_bytes.sum()) if total_tokens > 0 else weight_bytes
    t_compute = flops / hw.peak_flops
    t_memory = nbytes / hw.hbm_bandwidth
    compute_bound = t_compute >= t_memory
    weights = piece_flops if compute_bound else piece_bytes
    total = float(weights.sum())
    shares = weights / total if total > 0 else np.full(len(weights), 1.0 / len(weights))
    return StepCost(seconds=max(t_compute, t_memory), compute_bound=compute_bound, shares=shares)
