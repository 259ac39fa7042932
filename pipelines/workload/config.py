"""WorkloadConfig: everything one `tracereplay workload` run is made of (no torch import)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from pipelines.sim.chunking import DcppConfig, QuadraticFit

SCHEDULES = ("cpp", "dcpp", "vpp")
ATTENTIONS = ("dense", "sparse")
SENDS = ("blocking", "overlapped")
PP = 2  # two ranks (gloo on CPU)
DCPP_PAGE = 64  # DCPP chunk sizes are multiples of this (the simulator's smallest alignment)
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
    dcpp_min_chunk: int | None = None  # DCPP: smallest chunk (None: chunk // 4)
    dcpp_smooth: float = 1.0  # DCPP: sigma, s = C + sigma (x* - C) (vLLM-Ascend's 1.0)
    pin: bool = False  # pin rank r to CPU r (os.sched_setaffinity)

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
        if self.dcpp_min_chunk is not None and not 0 < self.dcpp_min_chunk <= self.chunk:
            raise ValueError("dcpp_min_chunk must be in 1..chunk")
        if not 0 < self.dcpp_smooth <= 1:
            raise ValueError("dcpp_smooth must be in (0, 1]")

    @property
    def stages(self) -> int:
        """Virtual stages in the pipeline: PP for CPP, PP x VP for VPP."""
        return PP * (VP if self.schedule == "vpp" else 1)

    @property
    def vp(self) -> int:
        return VP if self.schedule == "vpp" else 1

    @property
    def min_chunk(self) -> int:
        """DCPP's smallest chunk."""
        return self.dcpp_min_chunk if self.dcpp_min_chunk is not None else self.chunk // 4

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
            **(
                {
                    "dcpp_rule": "vllm_ascend",
                    "dcpp_online": "true",
                    "dcpp_min_chunk": str(self.min_chunk),
                    "dcpp_smooth": str(self.dcpp_smooth),
                }
                if self.schedule == "dcpp"
                else {}
            ),
        }

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def dcpp_rule(self) -> DcppConfig:
        """The simulator's DCPP knobs the engine runs (pipelines.workload.dcpp): vLLM-Ascend's
        rule with online calibration, this run's minimum chunk and smoothing, 64-token pages."""
        from pipelines.sim.chunking import DcppConfig

        return DcppConfig(
            rule="vllm_ascend",
            smooth=self.dcpp_smooth,
            min_chunk=self.min_chunk,
            page_size=DCPP_PAGE,
            online=True,
        )


def _metadata(path: str | Path, key: str) -> Any:
    """Trace metadata `key` (JSON text decoded), None when absent."""

    meta = msgspec.json.decode(Path(path).read_bytes(), type=dict[str, Any])
    raw = meta.get(key)
    return json.loads(raw) if isinstance(raw, str) else raw


def config_from_trace(path: str | Path) -> WorkloadConfig | None:
    """The WorkloadConfig a trace of `tracereplay workload` carries (metadata `workload`);
    None for a trace of another program."""
    fields = _metadata(path, "workload")
    if not isinstance(fields, dict):
        return None
    known = WorkloadConfig.__dataclass_fields__
    return WorkloadConfig(**{k: v for k, v in fields.items() if k in known})


def profile_fit_from_trace(path: str | Path) -> QuadraticFit | None:
    """The profiled f(l) = a l^2 + b l + c a DCPP run's rank 0 wrote (metadata
    `dcpp_profile_fit`); None elsewhere."""
    from pipelines.sim.chunking import QuadraticFit

    coef = _metadata(path, "dcpp_profile_fit")
    return QuadraticFit(*map(float, coef)) if isinstance(coef, list) and len(coef) == 3 else None
