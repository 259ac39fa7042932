"""WorkloadConfig: everything one `tracereplay workload` run is made of (no torch import)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SCHEDULES = ("cpp", "vpp")
ATTENTIONS = ("dense", "sparse")
SENDS = ("blocking", "overlapped")
PP = 2  # two ranks (gloo on CPU)
VP = 2  # VPP: two virtual stages per rank, fold-back: rank 0 runs stages 0 and 3, rank 1 1 and 2


@dataclass(frozen=True)
class WorkloadConfig:
    """A decoder-only transformer with random weights, prefilled in fixed chunks on two ranks."""

    layers: int = 4
    hidden: int = 128
    heads: int = 4
    kv_heads: int = 2  # GQA: heads share kv_heads key/value heads
    seq_len: int = 4096
    chunk: int = 512
    requests: int = 1
    schedule: str = "cpp"
    attention: str = "dense"
    top_k: int = 1024  # sparse: prefix keys the indexer keeps per chunk
    index_dim: int = 16  # sparse: width of the indexer's query/key projections
    ffn_mult: int = 2
    send: str = "blocking"
    seed: int = 0
    threads: int = 1  # intra-op threads per rank
    repeats: int = 1  # profiled passes over the requests, the pipeline drained between passes
    warmup: int = 1  # passes run before the profiler starts (first-call costs), not in the trace

    def __post_init__(self) -> None:
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"attention must be one of {ATTENTIONS}")
        if self.send not in SENDS:
            raise ValueError(f"send must be one of {SENDS}")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise ValueError("hidden must be a multiple of heads, heads a multiple of kv_heads")
        if self.layers % self.stages:
            raise ValueError(f"layers ({self.layers}) must split into {self.stages} stages")
        if self.repeats < 1 or self.warmup < 0:
            raise ValueError("repeats must be at least 1 and warmup at least 0")
        if self.chunk <= 0 or self.seq_len % self.chunk:
            raise ValueError("seq_len must be a positive multiple of chunk")

    @property
    def stages(self) -> int:
        """Virtual stages in the pipeline: PP for CPP, PP x VP for VPP."""
        return PP * (VP if self.schedule == "vpp" else 1)

    @property
    def vp(self) -> int:
        return VP if self.schedule == "vpp" else 1

    @property
    def chunks_per_request(self) -> int:
        return self.seq_len // self.chunk

    @property
    def model_name(self) -> str:
        """The `model` run fact: size and attention, so fits group dense and sparse apart."""
        return (
            f"tiny-l{self.layers}-h{self.hidden}-a{self.heads}-kv{self.kv_heads}-{self.attention}"
        )

    def metadata(self) -> dict[str, str]:
        """Run facts written with prof.add_metadata (docs/tau_k.md §1 keys), all strings."""
        return {
            "model": self.model_name,
            "schedule": self.schedule,
            "chunk_size": str(self.chunk),
            "seq_len": str(self.seq_len),
            "tp": "1",
            "pp": str(PP),
            "vp": str(self.vp),
            "attention": self.attention,
            "hardware": "cpu",
            "compute_device": "cpu",
            "repeats": str(self.repeats),
            "warmup_passes": str(self.warmup),
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
