"""Scheduler steps that carry chunks of several requests, and a length-mix workload.

`pack_steps` is vLLM's chunked-prefill budget rule for prefill-only steps: every step has a token
budget B; the running requests (the first `max_running` unfinished ones in queue order) each take
min(tokens they have left, budget left), in queue order, until the budget is spent. Eight 4K
prompts with a 16K budget therefore take 2 steps, not 8 (docs/schedules.md §8).

A packed step is one stage call on all its pieces. Its cost on layers [lo, hi):

    sum_i stage_ns(c_i, p_i) - (n - 1) * fixed

each piece's attention and cached-prefix work counted with its own prefix, the per-call fixed
part (`fixed` = the cost's intercept in tokens: layer launches and the small-chunk GEMM term of
LayeredCost, estimated as 2 f(1) - f(2), exact for every term linear in c) paid once.

`pack_dcpp_steps` is the same for DCPP: the step's token budget C and its time budget, the
predictor's target T, are shared by its pieces (vLLM-Ascend's profiling-chunk scheduler), so a
step of short prompts fills up to C tokens while a long prompt's late chunks shrink as in
`chunking.dynamic_chunks`.

`length_mix` draws prompt lengths from a log-normal fitted to GSM8K-like chat prompts (module
constants, their source below) for a closed batch of `count` requests queued at t=0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import polars as pl

from pipelines.sim.chunking import DcppConfig, QuadraticFit, next_chunk
from pipelines.sim.cost_models import StageCost

Piece = tuple[int, int, int]  # (request index, tokens, prefix tokens)

GSM8K_PROMPT_MEDIAN = 1_024
GSM8K_PROMPT_SIGMA = 0.45
GSM8K_PROMPT_MIN, GSM8K_PROMPT_MAX = 256, 4_096
"""Prompt lengths of the GSM8K-like workload: log-normal, median 1,024 tokens, sigma 0.45, cut to
[256, 4096]. Source and reasoning: a GSM8K question is 46 words on average (about 60-70 tokens;
Cobbe et al. 2021, "Training Verifiers to Solve Math Word Problems", dataset statistics), and
the usual serving benchmark prompts it 8-shot (lm-evaluation-harness `gsm8k` task, 8 exemplars
of question + worked answer, ~120 tokens each), i.e. about 1K tokens per prompt; the spread of
the question lengths (roughly x/÷1.5) gives sigma ~0.45. These are stated figures, not measured
ones: no GSM8K data is read here."""


def length_mix(
    count: int,
    seed: int = 0,
    median: int = GSM8K_PROMPT_MEDIAN,
    sigma: float = GSM8K_PROMPT_SIGMA,
    bounds: tuple[int, int] = (GSM8K_PROMPT_MIN, GSM8K_PROMPT_MAX),
) -> pl.DataFrame:
    """`count` requests (request_id, arrival_ns = 0, prompt_tokens) with log-normal lengths."""
    if count < 1:
        raise ValueError("count must be at least 1")
    rng = np.random.default_rng(seed)
    lengths = np.exp(np.log(median) + sigma * rng.standard_normal(count))
    lengths = np.clip(np.rint(lengths), *bounds).astype(np.int64)
    return pl.DataFrame(
        {
            "request_id": [f"req-{i}" for i in range(count)],
            "arrival_ns": np.zeros(count, dtype=np.int64),
            "prompt_tokens": lengths,
        }
    )


def pack_steps(
    prompt_tokens: Sequence[int], budget: int, max_running: int | None = None
) -> list[list[Piece]]:
    """Steps of (request index, tokens, prefix) pieces under a `budget` per step (module
    docstring); `max_running` caps the requests a step may serve (None: no cap)."""
    return _pack(prompt_tokens, budget, max_running, None)


def pack_dcpp_steps(
    prompt_tokens: Sequence[int],
    budget: int,
    fit: QuadraticFit,
    cfg: DcppConfig,
    max_running: int | None = None,
) -> list[list[Piece]]:
    """DCPP's steps when a step may carry several requests, as vLLM-Ascend's profiling-chunk
    scheduler shares one time budget per step: the step starts with the target T = f(C) - f(0)
    (the profiled stage-0 fit `fit`, C = `budget`) and `budget` tokens; the running requests, in
    queue order, each take a piece: a request's first chunk (prefix 0) is not predicted and takes
    min(tokens left, tokens of the step left); a later chunk is the rule's size for the time left
    (`chunking.next_chunk`: smoothing, floor, alignment), capped by the tokens left in the request
    and in the step. Each piece spends its predicted time f(L + x) - f(L). A step ends when its
    tokens or its time are spent (this project's reading: with no time left the predictor would
    fall back to the full T, which would overfill the step). With one request the chunks are
    `chunking.dynamic_chunks`' (offline)."""
    return _pack(prompt_tokens, budget, max_running, (fit, cfg))


def _pack(
    prompt_tokens: Sequence[int],
    budget: int,
    max_running: int | None,
    predictor: tuple[QuadraticFit, DcppConfig] | None,
) -> list[list[Piece]]:
    """The steps of both rules: `predictor` None, the token budget alone (pack_steps); else
    DCPP's profiled fit and rule, whose time budget the step's pieces share too."""
    if budget < 1:
        raise ValueError("budget must be at least 1")
    if max_running is not None and max_running < 1:
        raise ValueError("max_running must be at least 1")
    fit, cfg = predictor if predictor is not None else (None, None)
    target = fit(budget) - fit(0) if fit is not None else math.inf
    left = [int(n) for n in prompt_tokens]
    done = [0] * len(left)
    steps: list[list[Piece]] = []
    while any(left):
        room, time_left = budget, target
        pieces: list[Piece] = []
        running = [i for i, n in enumerate(left) if n > 0]
        if max_running is not None:
            running = running[:max_running]
        for i in running:
            if room == 0 or time_left <= 0:
                break
            take = min(left[i], room)
            if fit is not None:
                if done[i] > 0:  # a request's first chunk is not predicted
                    take = min(take, next_chunk(fit, done[i], time_left, cfg, budget))
                time_left -= fit(done[i] + take) - fit(done[i])
            pieces.append((i, take, done[i]))
            left[i] -= take
            done[i] += take
            room -= take
        steps.append(pieces)
    return steps


def packed_stage_ns(
    cost: StageCost, steps: list[list[Piece]], step_of: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> np.ndarray:
    """Device time (ns, without call overhead) of stage calls: call j runs step `step_of[j]` on
    layers [lo[j], hi[j])."""
    out = np.zeros(len(step_of), dtype=np.float64)
    for j, (k, a, b) in enumerate(zip(step_of.tolist(), lo.tolist(), hi.tolist(), strict=True)):
        pieces = steps[k]
        c = np.array([p[1] for p in pieces], dtype=np.int64)
        p = np.array([p[2] for p in pieces], dtype=np.int64)
        n = len(pieces)
        parts = cost.stage_ns(c, p, np.full(n, a), np.full(n, b))
        out[j] = float(np.sum(parts)) - (n - 1) * fixed_ns(cost, a, b)
    return out


def fixed_ns(cost: StageCost, lo: int, hi: int) -> float:
    """The per-call fixed part of `cost` on layers [lo, hi): its intercept in tokens, 2 f(1) -
    f(2) at prefix 0 (module docstring), which a call pays once however many pieces it runs."""
    ones = cost.stage_ns(
        np.array([1, 2]), np.zeros(2, dtype=np.int64), np.full(2, lo), np.full(2, hi)
    )
    return max(2.0 * float(ones[0]) - float(ones[1]), 0.0)
