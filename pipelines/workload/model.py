"""A decoder-only transformer with random weights, for chunked prefill with a KV cache.

Each layer: RMSNorm, grouped-query attention over the cached prefix plus the chunk (causal inside
the chunk), RMSNorm, a two-layer MLP. `attention="sparse"` reads only `top_k` prefix keys chosen
by a cheap indexer (DSA-like, docs/workload.md): low-width indexer projections score every
cached key against the chunk's queries, the chunk keeps the `top_k` best prefix keys (shared by
its queries and heads, a simplification of DSA's per-query choice) and attends to them and to
its own keys. Its cost stops growing with the prefix once the prefix holds `top_k` keys, so its
tau_k is not linear in k.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from pipelines.workload.config import WorkloadConfig


class KVCache:
    """Keys, values (and indexer keys) of one request on one layer, filled chunk by chunk."""

    def __init__(self, seq_len: int, kv_heads: int, head_dim: int, index_dim: int) -> None:
        self.k = torch.empty(kv_heads, seq_len, head_dim)
        self.v = torch.empty(kv_heads, seq_len, head_dim)
        self.index_k = torch.empty(seq_len, index_dim)
        self.length = 0


class Layer(nn.Module):
    def __init__(self, cfg: WorkloadConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.head_dim = cfg.hidden // cfg.heads
        kv_width = cfg.kv_heads * self.head_dim
        self.norm1 = nn.RMSNorm(cfg.hidden)
        self.qkv = nn.Linear(cfg.hidden, cfg.hidden + 2 * kv_width, bias=False)
        self.out = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.norm2 = nn.RMSNorm(cfg.hidden)
        self.up = nn.Linear(cfg.hidden, cfg.ffn_mult * cfg.hidden, bias=False)
        self.down = nn.Linear(cfg.ffn_mult * cfg.hidden, cfg.hidden, bias=False)
        if cfg.attention == "sparse":
            self.index_q = nn.Linear(cfg.hidden, cfg.index_dim, bias=False)
            self.index_k = nn.Linear(cfg.hidden, cfg.index_dim, bias=False)

    def new_cache(self) -> KVCache:
        cfg = self.cfg
        return KVCache(cfg.seq_len, cfg.kv_heads, self.head_dim, cfg.index_dim)

    def forward(self, x: torch.Tensor, cache: KVCache) -> torch.Tensor:
        c = x.shape[0]
        cfg, hd = self.cfg, self.head_dim
        h = self.norm1(x)
        q, k, v = self.qkv(h).split([cfg.hidden, cfg.kv_heads * hd, cfg.kv_heads * hd], dim=-1)
        q = q.view(c, cfg.heads, hd).transpose(0, 1)  # (heads, c, hd)
        p = cache.length
        cache.k[:, p : p + c] = k.view(c, cfg.kv_heads, hd).transpose(0, 1)
        cache.v[:, p : p + c] = v.view(c, cfg.kv_heads, hd).transpose(0, 1)
        if cfg.attention == "sparse":
            cache.index_k[p : p + c] = self.index_k(h)
            attn = self._sparse(h, q, cache, p, c)
        else:
            attn = self._dense(q, cache.k[:, : p + c], cache.v[:, : p + c], p, c)
        cache.length = p + c
        x = x + self.out(attn.transpose(0, 1).reshape(c, cfg.hidden))
        return x + self.down(F.silu(self.up(self.norm2(x))))

    def _dense(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: int, c: int
    ) -> torch.Tensor:
        """Causal attention of the chunk's queries (positions p..p+c-1) over keys 0..p+c-1."""
        keys = k.shape[1]
        mask = torch.ones(c, keys, dtype=torch.bool).tril(diagonal=keys - c)
        return F.scaled_dot_product_attention(
            q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), attn_mask=mask, enable_gqa=True
        ).squeeze(0)

    def _sparse(
        self, h: torch.Tensor, q: torch.Tensor, cache: KVCache, p: int, c: int
    ) -> torch.Tensor:
        """Attention over the top_k prefix keys the indexer scores best, plus the chunk's own."""
        top_k = self.cfg.top_k
        if p > top_k:
            scores = self.index_q(h) @ cache.index_k[:p].T  # (c, p): cheap, index_dim wide
            chosen = scores.amax(dim=0).topk(top_k).indices.sort().values
            keys = torch.cat([chosen, torch.arange(p, p + c)])
        else:
            keys = torch.arange(0, p + c)
        k = cache.k.index_select(1, keys)
        v = cache.v.index_select(1, keys)
        return self._dense(q, k, v, keys.numel() - c, c)


class Stage(nn.Module):
    """The consecutive layers of one virtual stage."""

    def __init__(self, cfg: WorkloadConfig, n_layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(n_layers))

    def new_caches(self) -> list[KVCache]:
        return [layer.new_cache() for layer in self.layers]

    def forward(self, x: torch.Tensor, caches: list[KVCache]) -> torch.Tensor:
        for layer, cache in zip(self.layers, caches, strict=True):
            x = layer(x, cache)
        return x


def build_stage(cfg: WorkloadConfig, vstage: int) -> Stage:
    """Virtual stage `vstage` of the model, its random weights seeded by (seed, vstage) so every
    rank builds the same model without sharing weights."""
    torch.manual_seed(cfg.seed * 1000 + vstage)
    with torch.no_grad():
        return Stage(cfg, cfg.layers // cfg.stages).eval()
