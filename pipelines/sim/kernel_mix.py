"""Per-layer device kernels of a simulated stage call, with the names a torch_npu export uses.

The simulator schedules one compute interval per stage call. For traces that look like a real
export (docs/sim_traces.md) that interval is split into the kernels of each layer it runs, in
layer order and back to back, so that the kernels of a call **sum exactly to the simulator's task
duration** (cumulative rounding to integer ns; kernels that round to 0 ns are left out, a call
always keeps at least one kernel).

Kernel sequence of one layer (an MLA/GQA transformer block as vLLM-Ascend runs prefill):

    RmsNorm, [Slice: MLA cached-prefix latent], MatMulV3 (q/kv projections),
    RotaryPositionEmbedding, [LightningIndexer: DSA layers that recompute the index],
    FlashAttentionScore (or SparseFlashAttention on DSA layers), MatMulV3 (o_proj), Add,
    RmsNorm, then the FFN: dense layers MatMulV3 (gate_up), SwiGlu, MatMulV3 (down); MoE layers
    MatMulV2 (router), MoeGatingTopKSoftmax, GroupedMatmul (gate_up), SwiGlu, GroupedMatmul
    (down); Add.

Weights come from the preset's cost terms for that layer and chunk (LayeredCost.components_ns):
the GEMM term is shared among the matmuls in proportion to their weight counts (ModelSpec),
attention / sparse attention / indexer / prefix terms go to their kernels, and the fixed per-layer
term to the vector kernels evenly. The call's own overhead, noise and rounding are in the task's
duration and so are spread over the kernels in the same proportions. A model without a layered
preset (the roofline ones) uses a dense GQA layer with fixed shares (FIXED_SHARES).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from pipelines.sim import presets
from pipelines.sim.cost_models import LayeredCost


@dataclass(frozen=True)
class Kernel:
    """One device kernel type: its `kernel_details.csv` Name / Type / Accelerator Core and the
    host op that launches it (torch_npu names the host `cpu_op` after the aclnn API: the part of
    the kernel name before the first `_`, or the kernel name itself for fused ops)."""

    name: str
    op_type: str
    core: str

    @property
    def host_name(self) -> str:
        return self.name.split("_")[0] if self.name.startswith("aclnn") else self.name


# Observed in the real exports (docs/sim_traces.md §1): kernel_details.csv of set A (MindSpeed
# Qwen3 training on 910B) and trace_view.json of set B1.
RMS_NORM = Kernel("RmsNorm", "RmsNorm", "AI_VECTOR_CORE")
MATMUL_V3 = Kernel("aclnnMatmul_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE")
MATMUL_V2 = Kernel("aclnnMatmul_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE")
ROPE = Kernel("RotaryPositionEmbedding", "RotaryPositionEmbedding", "AI_VECTOR_CORE")
FLASH_ATTENTION = Kernel(
    "aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore",
    "FlashAttentionScore",
    "MIX_AIC",
)
ADD = Kernel("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE")
SWIGLU = Kernel("SwiGlu", "SwiGlu", "AI_VECTOR_CORE")
SLICE = Kernel("aclnnContiguous_SliceAiCore_Slice", "Slice", "AI_VECTOR_CORE")
# Not in the samples (no MoE or DSA model there): named by the same aclnn<Api>_<Impl>_<OpType>
# pattern after the CANN / torch_npu operators vLLM-Ascend calls (npu_grouped_matmul,
# npu_moe_gating_top_k_softmax, npu_lightning_indexer, npu_sparse_flash_attention).
GROUPED_MATMUL = Kernel(
    "aclnnGroupedMatmulV4_GroupedMatmul_GroupedMatmul", "GroupedMatmul", "AI_CORE"
)
MOE_GATING = Kernel(
    "aclnnMoeGatingTopKSoftmax_MoeGatingTopKSoftmax_MoeGatingTopKSoftmax",
    "MoeGatingTopKSoftmax",
    "AI_VECTOR_CORE",
)
LIGHTNING_INDEXER = Kernel(
    "aclnnLightningIndexer_LightningIndexer_LightningIndexer", "LightningIndexer", "MIX_AIC"
)
SPARSE_ATTENTION = Kernel(
    "aclnnSparseFlashAttention_SparseFlashAttention_SparseFlashAttention",
    "SparseFlashAttention",
    "MIX_AIC",
)

FIXED_SHARES = {"gemm": 0.6, "attention": 0.25, "vector": 0.15}
"""Shares of a layer's time for models without a layered preset (roofline models)."""

KERNEL_COLUMNS = ("task", "layer", "name", "op_type", "core", "host_name", "start_ns", "end_ns")


def _layer_plan(spec: presets.ModelSpec | None, layer: int) -> list[tuple[Kernel, str, float]]:
    """(kernel, cost term, share of the term) in execution order for one layer. Terms: gemm,
    dense_attention, sparse_attention, indexer, slice, prefix, vector (the fixed per-layer term)."""
    if spec is None:
        attn, ffn, router, index, moe = 1.0, 2.0, 0.0, 0.0, False
        sparse = full_index = mla = False
    else:
        moe = bool(spec.experts) and layer >= spec.dense_layers
        d = spec.hidden
        attn = spec.attention_params()
        if moe:
            ffn = 3.0 * d * spec.moe_inter * (spec.experts_per_token + spec.shared_experts)
        else:
            ffn = 3.0 * d * spec.dense_inter
        router = float(d * spec.experts) if moe else 0.0
        full_index = bool(spec.indexer_layers()[layer])
        heads, dim = spec.index_heads, spec.index_dim
        index = spec.q_lora * heads * dim + d * (dim + heads) if full_index else 0.0
        sparse = spec.attention == "dsa"
        mla = spec.attention == "mla"
    params = attn + ffn + router + index
    vector = [RMS_NORM, ROPE, ADD, RMS_NORM, SWIGLU, ADD] + ([MOE_GATING] if moe else [])
    v = 1.0 / len(vector)
    plan: list[tuple[Kernel, str, float]] = [(RMS_NORM, "vector", v)]
    if mla:  # read the cached latent, then up-project it (the prefix work)
        plan += [(SLICE, "slice", 1.0), (MATMUL_V3, "prefix", 1.0)]
    plan += [(MATMUL_V3, "gemm", 0.75 * attn / params), (ROPE, "vector", v)]
    if full_index:
        plan.append((LIGHTNING_INDEXER, "indexer", 1.0))
        plan.append((MATMUL_V3, "gemm", index / params))
    if sparse:
        plan.append((SPARSE_ATTENTION, "sparse_attention", 1.0))
    else:
        plan.append((FLASH_ATTENTION, "dense_attention", 1.0))
    plan += [(MATMUL_V3, "gemm", 0.25 * attn / params), (ADD, "vector", v), (RMS_NORM, "vector", v)]
    if moe:
        plan += [
            (MATMUL_V2, "gemm", router / params),
            (MOE_GATING, "vector", v),
            (GROUPED_MATMUL, "gemm", 2.0 / 3.0 * ffn / params),
            (SWIGLU, "vector", v),
            (GROUPED_MATMUL, "gemm", 1.0 / 3.0 * ffn / params),
        ]
    else:
        plan += [
            (MATMUL_V3, "gemm", 2.0 / 3.0 * ffn / params),
            (SWIGLU, "vector", v),
            (MATMUL_V3, "gemm", 1.0 / 3.0 * ffn / params),
        ]
    plan.append((ADD, "vector", v))
    return plan


def _terms(cost: LayeredCost | None, tokens: int, prefix: int, layer: int) -> dict[str, float]:
    """Cost terms (ns) of one layer on one chunk; the fixed shares without a layered preset."""
    if cost is None:
        return {
            "gemm": FIXED_SHARES["gemm"],
            "dense_attention": FIXED_SHARES["attention"],
            "vector": FIXED_SHARES["vector"],
        }
    one = np.array([layer])
    parts = cost.components_ns(np.array([tokens]), np.array([prefix]), one, one + 1)
    out = {k: float(v[0]) for k, v in parts.items()}
    out["vector"] = out.pop("fixed")
    return out


def split_ns(total: int, weights: list[float]) -> list[int]:
    """`total` ns split in proportion to `weights` by cumulative rounding: the parts sum to
    `total` exactly (equal parts when every weight is 0)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.sum() <= 0:
        w = np.ones_like(w)
    bounds = np.rint(total * np.cumsum(w) / w.sum()).astype(np.int64)
    bounds[-1] = total
    return np.diff(np.concatenate(([0], bounds))).tolist()


def task_kernels(
    compute: pl.DataFrame,
    model: str,
    hardware: str | None,
    tp: int | None,
    layer_ranges: list[list[int]],
) -> pl.DataFrame:
    """Kernel rows (KERNEL_COLUMNS) of compute tasks (one rank's, with start_ns, end_ns, tokens,
    prefix_tokens, vstage; row order = `task`): each task's interval tiled by its layers' kernels
    (module docstring). `layer_ranges[vstage]` = [lo, hi) of the stage's layers; a task whose
    stage is unknown (vstage < 0) runs every layer of the model."""
    spec = presets.MODELS.get(model)
    cost = None
    if spec is not None:
        built = presets.cost_model(model, hardware, tp)
        cost = built if isinstance(built, LayeredCost) else None
    n_layers = spec.layers if spec is not None else (layer_ranges[-1][1] if layer_ranges else 1)
    plans: dict[int, list[tuple[Kernel, str, float]]] = {}
    rows: list[tuple] = []
    for task, (start, end, tokens, prefix, vstage) in enumerate(
        compute.select("start_ns", "end_ns", "tokens", "prefix_tokens", "vstage").iter_rows()
    ):
        lo, hi = layer_ranges[vstage] if 0 <= vstage < len(layer_ranges) else (0, n_layers)
        kernels: list[tuple[int, Kernel]] = []
        weights: list[float] = []
        for layer in range(lo, hi):
            if layer not in plans:
                plans[layer] = _layer_plan(spec, layer)
            terms = _terms(cost, tokens, prefix, layer)
            for kernel, term, share in plans[layer]:
                weight = terms.get(term, 0.0) * share
                if weight > 0:
                    kernels.append((layer, kernel))
                    weights.append(weight)
        if not kernels:
            kernels, weights = [(lo, MATMUL_V3)], [1.0]
        durations = split_ns(int(end - start), weights)
        t = int(start)
        kept = 0
        for (layer, kernel), dur in zip(kernels, durations, strict=True):
            if dur <= 0:
                continue
            rows.append((task, layer, *_kernel_cells(kernel), t, t + dur))
            t += dur
            kept += 1
        if kept == 0:  # a zero-length task keeps one (empty) kernel
            layer, kernel = kernels[0]
            rows.append((task, layer, *_kernel_cells(kernel), int(start), int(start)))
    schema = {
        "task": pl.Int64,
        "layer": pl.Int32,
        "name": pl.String,
        "op_type": pl.String,
        "core": pl.String,
        "host_name": pl.String,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def _kernel_cells(kernel: Kernel) -> tuple[str, str, str, str]:
    return kernel.name, kernel.op_type, kernel.core, kernel.host_name
