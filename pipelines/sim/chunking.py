"""How a prompt is cut into prefill chunks: fixed size, or DCPP's dynamic rules.

Both DCPP rules (docs/schedules.md §1, §2) fit f(l) = a l² + b l + c to profiled single-request
prefills of length l (prefix 0, one stage: PP rank 0's layers), set the target T = f(C) - f(0),
and size the next chunk x after a prefix L by solving f(L + x) - f(L) = T:

    x* = (-(2aL + b) + sqrt((2aL + b)² + 4aT)) / (2a)
    s  = C + σ (x* - C)

The first chunk of a request is always C. Then:

* SGLang (`ChunkSizePredictor`, scheduler_pp_mixin.py): σ = 0.75, floor C // 4, round **down** to
  a multiple of max(page, 64); profiling lengths int(1.25C - i (1.25C // 128)), i = 0..127, first
  sample dropped; raises if a <= 0, clamps b < 0 to 0; a result below the alignment falls back
  to C.
* vLLM-Ascend (`profiling_chunk_predictor.py`): σ = 1.0, hard floor min_chunk = 4096, round **up**
  to a multiple of max(page, 64); profiling lengths C + C/64 (warm-up, dropped), C, 63C/64, ...,
  C/64. Optional online calibration (`need_timing`): T becomes the measured time of the first
  chunk, and after 5 measured steps the history-aware model t = a' x(x+H) + b'(x+H) + c' is fitted
  to the executed steps and solved for x instead (refitted up to `max_fit_chunk` samples).

A chunk never exceeds the token budget C or the tokens left in the prompt.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

DCPP_RULES: tuple[str, ...] = ("vllm_ascend", "sglang")

# latency (ns) of one stage-0 call on a chunk of `tokens` after `prefix` tokens
StageLatency = Callable[[np.ndarray, np.ndarray], np.ndarray]


def fixed_chunks(prompt_tokens: int, chunk_size: int) -> list[int]:
    """Chunks of `chunk_size` tokens, the last one holding the remainder."""
    if prompt_tokens < 1 or chunk_size < 1:
        raise ValueError("prompt_tokens and chunk_size must be positive")
    full, rest = divmod(prompt_tokens, chunk_size)
    return [chunk_size] * full + ([rest] if rest else [])


@dataclass(frozen=True)
class QuadraticFit:
    """f(l) = a l² + b l + c (ns)."""

    a: float
    b: float
    c: float

    def __call__(self, length: float) -> float:
        return self.a * length * length + self.b * length + self.c

    def solve_chunk(self, prefix: float, target: float) -> float:
        """x with f(prefix + x) - f(prefix) = target."""
        lin = 2.0 * self.a * prefix + self.b
        return (-lin + math.sqrt(lin * lin + 4.0 * self.a * target)) / (2.0 * self.a)


def fit_quadratic(lengths: np.ndarray, latencies: np.ndarray, clamp_b: bool) -> QuadraticFit:
    """Least squares on [l², l, 1]; needs 8 points and a > 0; `clamp_b` sets b < 0 to 0."""
    x = np.asarray(lengths, dtype=np.float64)
    if len(x) < 8:
        raise ValueError("the chunk predictor needs at least 8 profiled prefills")
    design = np.column_stack([x * x, x, np.ones_like(x)])
    (a, b, c), *_ = np.linalg.lstsq(design, np.asarray(latencies, dtype=np.float64), rcond=None)
    if a <= 0:
        raise ValueError(f"prefill latency is not convex in length (a = {a:.3g}): cannot predict")
    if clamp_b and b < 0:
        b = 0.0
    return QuadraticFit(float(a), float(b), float(c))


def profile_lengths(rule: str, chunk_size: int) -> np.ndarray:
    """Prefill lengths each framework profiles at startup, warm-up sample already dropped."""
    if rule == "sglang":
        step = int(1.25 * chunk_size) // 128
        lengths = [int(1.25 * chunk_size - i * step) for i in range(128)]
    elif rule == "vllm_ascend":
        lengths = [int(chunk_size - (i - 1) * chunk_size / 64) for i in range(65)]
    else:
        raise ValueError(f"unknown DCPP rule {rule!r}; expected one of {DCPP_RULES}")
    return np.array(lengths[1:], dtype=np.int64)


@dataclass(frozen=True)
class DcppConfig:
    """Dynamic chunking knobs; None takes the rule's default: σ 0.75 / 1.0, floor C//4 / 4096,
    page size 1 (SGLang's default; alignment 64) / 128 (Ascend block size)."""

    rule: str = "vllm_ascend"
    smooth: float | None = None
    min_chunk: int | None = None
    page_size: int | None = None
    online: bool = False
    max_fit_chunk: int = 30

    def __post_init__(self) -> None:
        if self.rule not in DCPP_RULES:
            raise ValueError(f"unknown DCPP rule {self.rule!r}; expected one of {DCPP_RULES}")

    @property
    def sigma(self) -> float:
        if self.smooth is not None:
            return self.smooth
        return 0.75 if self.rule == "sglang" else 1.0

    @property
    def align(self) -> int:
        page = (
            self.page_size if self.page_size is not None else (1 if self.rule == "sglang" else 128)
        )
        return max(page, 64)

    def floor(self, chunk_size: int) -> int:
        if self.min_chunk is not None:
            return min(self.min_chunk, chunk_size)
        return chunk_size // 4 if self.rule == "sglang" else min(4096, chunk_size)


def profile(stage0: StageLatency, rule: str, chunk_size: int) -> QuadraticFit:
    """Fit f(l) to the stage-0 latency of full prefills, as the framework does at startup."""
    lengths = profile_lengths(rule, chunk_size)
    latency = stage0(lengths, np.zeros_like(lengths))
    return fit_quadratic(lengths, latency, clamp_b=(rule == "sglang"))


def _next_sglang(fit: QuadraticFit, prefix: int, target: float, cfg: DcppConfig, base: int) -> int:
    x = fit.solve_chunk(prefix, target)
    s = base + cfg.sigma * (x - base)
    s = max(int(s), cfg.floor(base))
    align = cfg.align
    s = max((s // align) * align, align)
    return s if s >= align else base


def _next_vllm(fit: QuadraticFit, prefix: int, target: float, cfg: DcppConfig, base: int) -> int:
    x = fit.solve_chunk(prefix, target)
    s = base + cfg.sigma * (x - base)
    s = max(int(s), cfg.floor(base))
    align = cfg.align
    return math.ceil(s / align) * align


def next_chunk(fit: QuadraticFit, prefix: int, target: float, cfg: DcppConfig, base: int) -> int:
    """The rule's next chunk size after `prefix` tokens for a step-time target (ns): solved from
    the profiled fit, smoothed, floored and aligned; not yet capped by the token budget."""
    step = _next_sglang if cfg.rule == "sglang" else _next_vllm
    return step(fit, prefix, target, cfg, base)


def _history_chunk(coef: np.ndarray, history: int, target: float, cfg: DcppConfig) -> int | None:
    """Solve a x² + (aH + b) x + (bH + c - T) = 0 (vLLM-Ascend predict_with_history)."""
    a, b, c = (float(v) for v in coef)
    qa, qb, qc = a, a * history + b, b * history + c - target
    if qa <= 0:
        return None
    disc = qb * qb - 4 * qa * qc
    if disc < 0:
        return None
    x = (-qb + math.sqrt(disc)) / (2 * qa)
    if x <= 0:
        return None
    return int(x)


class DynamicChunker:
    """DCPP's chunk rule for one request, a chunk at a time (what `dynamic_chunks` loops over,
    and what the reference engine, pipelines/workload/dcpp.py, calls between real forwards):
    `next_size(prefix, left)` is the next chunk after `prefix` tokens with `left` tokens still to
    prefill; `observe(size, prefix, measured_ns)` feeds the measured stage-0 step time of that
    chunk (online calibration, vLLM-Ascend's `need_timing`: the first chunk's time becomes the
    target T, and from the fifth step on the history model fitted to the steps so far predicts
    the next size). `fit` is the profiled f(l) (`profile`)."""

    def __init__(self, fit: QuadraticFit, chunk_size: int, cfg: DcppConfig) -> None:
        self.fit, self.chunk_size, self.cfg = fit, chunk_size, cfg
        self.target = fit(chunk_size) - fit(0)
        self.samples: list[tuple[int, int, float]] = []  # (chunk, history, measured ns)
        self.coef: np.ndarray | None = None

    @property
    def online(self) -> bool:
        """Whether measured step times calibrate the rule (`observe` has an effect)."""
        return self.cfg.online and self.cfg.rule == "vllm_ascend"

    def next_size(self, prefix: int, left: int) -> int:
        cfg, chunk_size = self.cfg, self.chunk_size
        if prefix == 0:
            size = chunk_size
        else:
            size = None
            if self.coef is not None:
                size = _history_chunk(self.coef, prefix, self.target, cfg)
                if size is not None:
                    size = max(size, cfg.floor(chunk_size))
                    align = cfg.align
                    size = math.ceil(size / align) * align
            if size is None:
                size = next_chunk(self.fit, prefix, self.target, cfg, chunk_size)
        return min(size, chunk_size, left)

    def observe(self, size: int, prefix: int, measured_ns: float) -> None:
        if not self.online:
            return
        if prefix == 0:
            self.target = measured_ns  # calibration: T := measured first-chunk step time
        if len(self.samples) < self.cfg.max_fit_chunk:
            self.samples.append((size, prefix, measured_ns))
            if len(self.samples) >= 5:
                self.coef = _fit_history(self.samples)


def dynamic_chunks(
    prompt_tokens: int, chunk_size: int, stage0: StageLatency, cfg: DcppConfig
) -> list[int]:
    """DCPP chunk sizes for one prompt under `cfg`'s rule; `stage0` is PP rank 0's latency."""
    chunker = DynamicChunker(profile(stage0, cfg.rule, chunk_size), chunk_size, cfg)
    chunks: list[int] = []
    prefix = 0
    while prefix < prompt_tokens:
        size = chunker.next_size(prefix, prompt_tokens - prefix)
        if chunker.online:
            chunker.observe(size, prefix, float(stage0(np.array([size]), np.array([prefix]))[0]))
        chunks.append(size)
        prefix += size
    return chunks


def _fit_history(samples: list[tuple[int, int, float]]) -> np.ndarray:
    """Least squares t = a C(C+H) + b (C+H) + c over executed steps."""
    c = np.array([s[0] for s in samples], dtype=np.float64)
    h = np.array([s[1] for s in samples], dtype=np.float64)
    t = np.array([s[2] for s in samples], dtype=np.float64)
    design = np.column_stack([c * (c + h), c + h, np.ones_like(c)])
    coef, *_ = np.linalg.lstsq(design, t, rcond=None)
    return coef
