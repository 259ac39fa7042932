"""Model and hardware presets: public architecture figures turned into cost models.

Architectures (per-layer FLOP counts as in docs/schedules.md §4):

* qwen3-coder-30b-a3b: 48 layers, hidden 2048, GQA 32 query / 4 KV heads of 128, 128 experts
  top-8 of width 768, every layer MoE (Qwen3-30B-A3B config).
* deepseek-v3.1: 61 layers (3 dense, 58 MoE), hidden 7168, MLA with 128 heads, q_lora 1536,
  kv_lora 512, qk 128+64, v 128; 256 experts top-8 + 1 shared of width 2048, dense width 18432.
  Prefill attention runs in MHA mode: 2 x 128 x (192 + 128) = 81,920 FLOP per (query, key) pair.
* glm-5.2: 78 layers (3 dense, 75 MoE), hidden 6144, MLA with 64 heads, q_lora 2048, kv_lora
  512, qk 192+64, v 256; DSA: top-2048 sparse attention in MQA mode (2 x 64 x (576 + 512) FLOP
  per selected key) and a lightning indexer of 32 heads x 128 (FP8/INT8) recomputed on "full"
  layers only (index_topk_freq 4, index_skip_topk_offset 3: layers 0-2, 6, 10, ..., 74).
* llama3-8b: the chunked-prefill reference's roofline (pipelines/sim/roofline.py) on an H100 SXM.

Hardware: `ascend-910b` is one 910B-class die (the paper's 16 "NPUs" on an Atlas 900 A3 are 910C
dies; a 910C is two such dies): 376 TFLOP/s FP16, twice that in INT8, 1.6 TB/s HBM, HCCS links of
56 GB/s. The achieved figures are calibrated from the VPP paper's table 2 (DeepSeek-V3.1, 512K,
24K chunks) by the protocol of pipelines/sim/calibration.py (docs/fidelity.md §1), which says
which paper rows identify which figure: attention at 189.9 TFLOP/s with 0.667 of a chunk's
masked diagonal block computed anyway (attention rows), MLA's Slice at 7.65 ms per layer and
chunk (Slice rows), its prefix up-projection at 293.7 TFLOP/s (MatMulV3 rows), GEMMs at 0.733
of peak with efficiency c / (c + 2492) (the rest of compute: the small-chunk inefficiency DCPP
pays), TP collectives (`collective_model`) at 2.303 ms per AllReduce and 37.2 GB/s (exposed comm
of CPP and DCPP; the latency stands for the rank skew a blocking collective waits on) and a host
set-up of 23.1 µs per prompt token before a request's first chunk (CPP bubble; used where
simulate(host_ns_per_token="preset")). Per layer and per stage call fixed costs (0.5 ms, 10 ms)
stand for kernel launches and step preparation; EP all-to-all keeps 90 GB/s per rank and 150 µs
per MoE layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipelines.sim.comm import CollectiveModel, CommModel, activation_comm
from pipelines.sim.cost_models import LayeredCost, RooflineStageCost, StageCost
from pipelines.sim.fitted_cost import Overheads
from pipelines.sim.roofline import H100_SXM, LLAMA3_8B


@dataclass(frozen=True)
class ModelSpec:
    """Architecture figures a cost model needs."""

    name: str
    layers: int
    hidden: int
    heads: int
    attention: str  # "gqa", "mla" (MHA-mode prefill) or "dsa"
    head_dim: int = 128  # gqa
    kv_heads: int = 0  # gqa
    q_lora: int = 0  # mla / dsa
    kv_lora: int = 0
    qk_nope: int = 0
    qk_rope: int = 0
    v_head: int = 0
    dense_layers: int = 0  # leading layers with a dense FFN
    dense_inter: int = 0
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_inter: int = 0
    index_heads: int = 0  # dsa
    index_dim: int = 0
    index_topk: int = 2048
    index_topk_freq: int = 1
    index_skip_offset: int = 0
    default_tp: int = 8

    def attention_params(self) -> float:
        """Parameters of one layer's attention projections."""
        d = self.hidden
        if self.attention == "gqa":
            q = self.heads * self.head_dim
            kv = 2 * self.kv_heads * self.head_dim
            return d * (q + kv) + q * d
        qk = self.qk_nope + self.qk_rope
        return (
            d * self.q_lora
            + self.q_lora * self.heads * qk
            + d * (self.kv_lora + self.qk_rope)
            + self.kv_lora * self.heads * (self.qk_nope + self.v_head)
            + self.heads * self.v_head * d
        )

    def indexer_layers(self) -> np.ndarray:
        """True where a DSA layer recomputes the indexer ("full"), False where it reuses it."""
        if self.attention != "dsa":
            return np.zeros(self.layers, dtype=bool)
        offset = self.index_skip_offset
        return np.array(
            [max(layer - offset + 1, 0) % self.index_topk_freq == 0 for layer in range(self.layers)]
        )

    def layer_coefficients(self) -> dict[str, np.ndarray]:
        """Per-layer FLOPs per token (GEMMs), per dense pair, per sparse pair, per indexer pair,
        and expert-parallel bytes per token (FP8 dispatch + BF16 combine)."""
        n = self.layers
        moe = np.arange(n) >= self.dense_layers if self.experts else np.zeros(n, dtype=bool)
        d = self.hidden
        ffn_dense = 3.0 * d * self.dense_inter
        ffn_moe = 3.0 * d * self.moe_inter * (self.experts_per_token + self.shared_experts)
        router = float(d * self.experts)
        full = self.indexer_layers()
        index_proj = self.q_lora * self.index_heads * self.index_dim + d * (
            self.index_dim + self.index_heads
        )
        params = (
            self.attention_params()
            + np.where(moe, ffn_moe + router, ffn_dense)
            + np.where(full, index_proj, 0.0)
        )
        dense_pair = sparse_pair = 0.0
        if self.attention == "gqa":
            dense_pair = 2.0 * self.heads * 2 * self.head_dim
        elif self.attention == "mla":
            dense_pair = 2.0 * self.heads * (self.qk_nope + self.qk_rope + self.v_head)
        else:
            sparse_pair = 2.0 * self.heads * (self.kv_lora + self.qk_rope + self.kv_lora)
        index_pair = 2.0 * self.index_heads * self.index_dim
        return {
            "gemm_flops_per_token": 2.0 * params,
            "dense_flops_per_pair": np.full(n, dense_pair),
            "sparse_flops_per_pair": np.full(n, sparse_pair),
            "index_flops_per_pair": np.where(full, index_pair, 0.0),
            "ep_bytes_per_token": np.where(moe, self.experts_per_token * d * 3.0, 0.0),
        }

    def prefix_flops_per_token(self) -> np.ndarray:
        """FLOPs per cached prefix token that every chunk spends before attention, per layer.
        MHA-mode MLA prefill with a chunked context slices the cached latent and up-projects it
        to per-head K and V (kv_b_proj) at every chunk: 2 kv_lora heads (qk_nope + v). GQA reads
        the paged cache inside the attention kernel and DSA attends on the latent (absorbed
        MQA mode), so they pay nothing here."""
        if self.attention != "mla":
            return np.zeros(self.layers)
        return np.full(self.layers, 2.0 * self.kv_lora * self.heads * (self.qk_nope + self.v_head))


@dataclass(frozen=True)
class HardwareSpec:
    """One device (die) and its links; efficiencies are calibrated (module docstring)."""

    name: str
    peak_flops: float
    low_precision_flops: float
    hbm_bytes_per_s: float
    link_bytes_per_s: float
    link_latency_ns: float
    ep_bytes_per_s: float
    ep_latency_ns: float
    gemm_efficiency: float
    gemm_half_tokens: float
    attn_flops_per_s: float
    prefix_flops_per_s: float
    layer_overhead_ns: float
    call_overhead_ns: float
    tp_bytes_per_s: float = 36e9
    tp_latency_ns: float = 1_900_000.0
    attn_diagonal_extra: float = 0.0
    slice_ns: float = 0.0
    host_ns_per_token: float = 0.0


QWEN3_CODER_30B_A3B = ModelSpec(
    name="qwen3-coder-30b-a3b",
    layers=48,
    hidden=2048,
    heads=32,
    attention="gqa",
    head_dim=128,
    kv_heads=4,
    experts=128,
    experts_per_token=8,
    moe_inter=768,
)
DEEPSEEK_V31 = ModelSpec(
    name="deepseek-v3.1",
    layers=61,
    hidden=7168,
    heads=128,
    attention="mla",
    q_lora=1536,
    kv_lora=512,
    qk_nope=128,
    qk_rope=64,
    v_head=128,
    dense_layers=3,
    dense_inter=18432,
    experts=256,
    experts_per_token=8,
    shared_experts=1,
    moe_inter=2048,
)
GLM_52 = ModelSpec(
    name="glm-5.2",
    layers=78,
    hidden=6144,
    heads=64,
    attention="dsa",
    q_lora=2048,
    kv_lora=512,
    qk_nope=192,
    qk_rope=64,
    v_head=256,
    dense_layers=3,
    dense_inter=12288,
    experts=256,
    experts_per_token=8,
    shared_experts=1,
    moe_inter=2048,
    index_heads=32,
    index_dim=128,
    index_topk=2048,
    index_topk_freq=4,
    index_skip_offset=3,
)
MODELS: dict[str, ModelSpec] = {m.name: m for m in (QWEN3_CODER_30B_A3B, DEEPSEEK_V31, GLM_52)}

ASCEND_910B = HardwareSpec(
    name="ascend-910b",
    peak_flops=376e12,
    low_precision_flops=752e12,
    hbm_bytes_per_s=1.6e12,
    link_bytes_per_s=56e9,
    link_latency_ns=20_000.0,
    ep_bytes_per_s=90e9,
    ep_latency_ns=150_000.0,
    # calibrated from the VPP paper's table 2 (pipelines/sim/calibration.py, docs/fidelity.md §1)
    gemm_efficiency=0.733,
    gemm_half_tokens=2492.0,
    attn_flops_per_s=189.9e12,
    prefix_flops_per_s=293.7e12,
    layer_overhead_ns=500_000.0,
    call_overhead_ns=10_000_000.0,
    tp_bytes_per_s=37.2e9,
    tp_latency_ns=2_303_000.0,
    attn_diagonal_extra=0.667,
    slice_ns=7_650_000.0,
    host_ns_per_token=23_145.0,
)
HARDWARE: dict[str, HardwareSpec] = {ASCEND_910B.name: ASCEND_910B}
ROOFLINE_MODELS = {LLAMA3_8B.name: (LLAMA3_8B, H100_SXM)}
PRESET_NAMES: tuple[str, ...] = (*MODELS, *ROOFLINE_MODELS)


HOST_REFERENCE_TOKENS = 512 * 1024
"""The prompt length the host set-up figure is calibrated at (table 2's CPP bubble row, 512K
tokens): a quadratic host form (run.host_ready_ns) takes the same time there."""


def host_ns_per_token(model: str, hardware: str | None = None) -> float:
    """Host time per prompt token before a request's first chunk can run (request set-up:
    identified from the VPP paper's CPP bubble row, docs/fidelity.md §1); 0 for roofline
    models."""
    _known(model)
    if model in ROOFLINE_MODELS:
        return 0.0
    return HARDWARE[hardware or ASCEND_910B.name].host_ns_per_token


def default_hardware(model: str) -> str:
    return ROOFLINE_MODELS[model][1].name if model in ROOFLINE_MODELS else ASCEND_910B.name


def attention_kind(model: str) -> str:
    """The `attention` run fact of a preset: "sparse" for DSA (top-k keys per query), "dense"
    for GQA, MLA and the roofline models (every query reads its whole prefix)."""
    if model in ROOFLINE_MODELS:
        return "dense"
    return "sparse" if MODELS[_known(model)].attention == "dsa" else "dense"


def default_tp(model: str) -> int:
    return 1 if model in ROOFLINE_MODELS else MODELS[_known(model)].default_tp


def _known(model: str) -> str:
    if model not in MODELS and model not in ROOFLINE_MODELS:
        raise ValueError(f"unknown model preset {model!r}; known: {', '.join(PRESET_NAMES)}")
    return model


def cost_model(model: str, hardware: str | None = None, tp: int | None = None) -> StageCost:
    """The stage cost model of a preset on a device, the stage run by a TP group of `tp`."""
    _known(model)
    if model in ROOFLINE_MODELS:
        spec, accel = ROOFLINE_MODELS[model]
        if hardware not in (None, accel.name):
            raise ValueError(f"{model} is only modelled on {accel.name}")
        return RooflineStageCost(spec, accel)
    return layered_cost(MODELS[model], HARDWARE[hardware or ASCEND_910B.name], tp)


def layered_cost(spec: ModelSpec, hw: HardwareSpec, tp: int | None = None) -> LayeredCost:
    """The analytic cost model of an architecture on a device (cost_model's body; the
    calibration (pipelines/sim/calibration.py) calls it with trial device figures)."""
    coef = spec.layer_coefficients()
    return LayeredCost(
        name=spec.name,
        k_top=spec.index_topk,
        tp=tp or spec.default_tp,
        gemm_flops_per_s=hw.peak_flops * hw.gemm_efficiency,
        gemm_half_tokens=hw.gemm_half_tokens,
        attn_flops_per_s=hw.attn_flops_per_s,
        low_precision_flops_per_s=hw.attn_flops_per_s * hw.low_precision_flops / hw.peak_flops,
        # expert-parallel all-to-all is a collective (collective_model), not compute
        ep_bytes_per_s=float("inf"),
        ep_latency_ns=0.0,
        layer_overhead_ns=hw.layer_overhead_ns,
        call_overhead_ns=hw.call_overhead_ns,
        prefix_ns_per_token=1e9
        * spec.prefix_flops_per_token()
        / (tp or spec.default_tp)
        / hw.prefix_flops_per_s,
        attn_diagonal_extra=hw.attn_diagonal_extra,
        prefix_chunk_ns=np.where(spec.prefix_flops_per_token() > 0, hw.slice_ns, 0.0),
        **coef,
    )


def comm_model(model: str, hardware: str | None = None, tp: int | None = None) -> CommModel:
    """Activation transfer between PP stages (BF16 hidden states, each TP rank its slice)."""
    _known(model)
    if model in ROOFLINE_MODELS:
        spec, _ = ROOFLINE_MODELS[model]
        return activation_comm(spec.hidden, 2, tp or 1, 450e9, 10_000.0)  # NVLink-class
    spec = MODELS[model]
    hw = HARDWARE[hardware or ASCEND_910B.name]
    return activation_comm(
        spec.hidden, 2, tp or spec.default_tp, hw.link_bytes_per_s, hw.link_latency_ns
    )


def collective_model(
    model: str, hardware: str | None = None, tp: int | None = None, blocking: bool = True
) -> CollectiveModel | None:
    """TP AllReduce and EP all-to-all per layer of a preset (None: roofline models, tp 1).

    Per layer: one AllReduce of the attention output, one more after a dense FFN; on MoE layers
    the dispatch (FP8) and combine (BF16) all-to-all of the top-k routed copies instead. Ring
    AllReduce moves 2 (tp-1)/tp of the BF16 hidden state per rank; each TP rank dispatches its
    1/tp share of the tokens' routed copies."""
    _known(model)
    tp = tp or default_tp(model)
    if model in ROOFLINE_MODELS or tp <= 1:
        return None
    return layered_collectives(MODELS[model], HARDWARE[hardware or ASCEND_910B.name], tp, blocking)


def layered_collectives(
    spec: ModelSpec, hw: HardwareSpec, tp: int, blocking: bool = True
) -> CollectiveModel:
    """collective_model's body for an architecture on a device (trial figures: calibration)."""
    layers = np.arange(spec.layers)
    moe = layers >= spec.dense_layers if spec.experts else np.zeros(spec.layers, dtype=bool)
    tp_ops = np.where(moe, 1.0, 2.0)
    ring = 2.0 * (tp - 1) / tp * spec.hidden * 2.0
    ep_ops = np.where(moe, 2.0, 0.0)
    ep_bytes = np.where(moe, spec.experts_per_token * spec.hidden * 3.0 / tp, 0.0)

    def cum(values: np.ndarray) -> np.ndarray:
        return np.concatenate(([0.0], np.cumsum(values)))

    return CollectiveModel(
        tp_ops=cum(tp_ops),
        ep_ops=cum(ep_ops),
        tp_bytes_per_token=cum(tp_ops * ring),
        ep_bytes_per_token=cum(ep_bytes),
        tp_latency_ns=hw.tp_latency_ns,
        tp_bytes_per_s=hw.tp_bytes_per_s,
        ep_latency_ns=hw.ep_latency_ns / 2.0,
        ep_bytes_per_s=hw.ep_bytes_per_s,
        blocking=blocking,
    )


def replay_overheads(
    model: str, hardware: str | None = None, tp: int | None = None
) -> Overheads | None:
    """What a replay of one chunk size cannot identify, from the preset's cost model: the call
    overhead, the fixed cost of a full-model pass (layer launches + the small-chunk GEMM term
    G c_half / R_gemm + MLA's Slice per layer) and the prefix-only ns per cached token. None for
    roofline models."""
    _known(model)
    if model in ROOFLINE_MODELS:
        return None
    cost = cost_model(model, hardware, tp)
    assert isinstance(cost, LayeredCost)
    gemm = float(np.sum(cost.gemm_flops_per_token)) / cost.tp / cost.gemm_flops_per_s
    fixed = cost.num_layers * cost.layer_overhead_ns + 1e9 * gemm * cost.gemm_half_tokens
    if cost.prefix_chunk_ns is not None:
        fixed += float(np.sum(cost.prefix_chunk_ns))
    prefix = float(np.sum(cost.prefix_ns_per_token))
    return Overheads(cost.call_overhead_ns, fixed, prefix)
