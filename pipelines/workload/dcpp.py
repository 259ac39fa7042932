"""DCPP on the reference engine: chunk sizes chosen online from the forwards timed so far.

The rule is the simulator's (pipelines.sim.chunking.DynamicChunker, vLLM-Ascend's profiling
chunk predictor with online calibration), so engine and simulator run one implementation:

* at start-up rank 0 times stage-0 prefills of the rule's 64 profiling lengths (C/64 ... C,
  prefix 0; the least of 3 calls each) and fits f(l) = a l^2 + b l + c (`profile_fit`);
* per request the first chunk is C; each later chunk x after a prefix L solves
  f(L + x) - f(L) = T, smoothed (s = C + sigma (x* - C)), floored at the minimum chunk and
  rounded up to a multiple of 64; T is the measured time of the request's first chunk and from
  the fifth chunk on the history model t = a' x (x + L) + b' (x + L) + c', fitted to the chunks
  timed so far, gives x instead.

Every step time the rule sees is the rank thread's CPU time of the forward
(`time.thread_time_ns`), so other jobs' load on a shared machine does not move the chunk sizes.
Rank 0 decides; rank 1 learns each chunk from a header row sent with its activations: every
message is a (C + 1) x hidden tensor, row 0 = (request, k, tokens, prefix, last), rows
1..tokens the activations. Rank 1 keeps WINDOW receives posted (so rank 0's blocking sends
never wait for rank 1's compute) and rank 0 sends WINDOW - 1 empty messages after the pass's
last chunk to match the receives still posted. Requests are queued back to back: request r+1's
first chunk follows request r's last one on rank 0 while rank 1 drains r.
"""

from __future__ import annotations

import time

import numpy as np
import torch
import torch.distributed as dist
from torch.profiler import record_function

from pipelines.sim.chunking import (
    DynamicChunker,
    QuadraticFit,
    fit_quadratic,
    profile_lengths,
)
from pipelines.workload.config import WorkloadConfig

RULE = "vllm_ascend"
WINDOW = 4
"""Receives rank 1 keeps posted ahead."""
PROFILE_SAMPLES = 3
PROFILE_ATTEMPTS = 3
HEADER = ("req", "k", "tokens", "prefix", "last")


def dcpp_marker(req: int, k: int, vs: int, tokens: int, prefix: int) -> str:
    return f"chunk[req=r{req},k={k},vs={vs},tokens={tokens},prefix={prefix}]"


def _reset(caches) -> None:
    for cache in caches:
        cache.length = 0


def _timed(stage, x: torch.Tensor, caches) -> tuple[torch.Tensor, int]:
    cpu0 = time.thread_time_ns()
    with torch.no_grad():
        y = stage(x, caches)
    return y, time.thread_time_ns() - cpu0


def profile_fit(
    cfg: WorkloadConfig, stage, caches, prompt: torch.Tensor, samples: int = PROFILE_SAMPLES
) -> QuadraticFit:
    """f(l) fitted to stage 0's on-CPU time of a prefill of each profiling length (prefix 0),
    the least of `samples` calls per length (the CPU clock still carries cache and
    frequency noise: with one call per length, 256-token profiles came out concave), after two
    untimed calls (first-call costs). A profile that is still not convex is taken again, up to
    PROFILE_ATTEMPTS times, before giving up as the framework would (ValueError)."""
    lengths = profile_lengths(RULE, cfg.chunk)
    for _ in range(2):
        _reset(caches)
        _timed(stage, prompt[: cfg.chunk], caches)
    for attempt in range(PROFILE_ATTEMPTS):
        times = []
        for n in lengths:
            best = None
            for _ in range(samples):
                _reset(caches)
                ns = _timed(stage, prompt[: int(n)], caches)[1]
                best = ns if best is None else min(best, ns)
            times.append(best)
        _reset(caches)
        try:
            return fit_quadratic(lengths, np.array(times, dtype=np.float64), clamp_b=False)
        except ValueError:
            if attempt == PROFILE_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def dcpp_pass(
    cfg: WorkloadConfig,
    rank: int,
    stages: dict,
    caches: dict,
    prompts: dict,
    fit: QuadraticFit | None,
    rep: int | None,
    on_cpu: dict,
) -> None:
    """One DCPP pass over every request (drained on both sides by a barrier, like the fixed
    schedules' passes); `rep` None: a warm-up pass, unmarked."""
    for per_layer in caches.values():
        _reset(per_layer)
    dist.barrier()
    if rank == 0:
        _stage0(cfg, stages[0], caches, prompts, fit, rep, on_cpu)
    else:
        _stage1(cfg, stages[1], caches, rep, on_cpu)
    dist.barrier()


def _run_marked(name: str | None, stage, x, caches, on_cpu: dict) -> tuple[torch.Tensor, int]:
    if name is None:
        return _timed(stage, x, caches)
    wall0 = time.perf_counter_ns()
    with record_function(name):
        y, cpu_ns = _timed(stage, x, caches)
    on_cpu[name] = [cpu_ns, time.perf_counter_ns() - wall0]
    return y, cpu_ns


def _stage0(cfg, stage, caches, prompts, fit, rep, on_cpu) -> None:
    rule = cfg.dcpp_rule()
    sends, tag = [], 0
    for req in range(cfg.requests):
        chunker = DynamicChunker(fit, cfg.chunk, rule)
        marked = None if rep is None else rep * cfg.requests + req
        prefix = k = 0
        while prefix < cfg.seq_len:
            size = chunker.next_size(prefix, cfg.seq_len - prefix)
            name = None if marked is None else dcpp_marker(marked, k, 0, size, prefix)
            x = prompts[req][prefix : prefix + size]
            y, cpu_ns = _run_marked(name, stage, x, caches[(req, 0)], on_cpu)
            chunker.observe(size, prefix, float(cpu_ns))
            last = req == cfg.requests - 1 and prefix + size == cfg.seq_len
            msg = torch.zeros(cfg.chunk + 1, cfg.hidden)
            msg[0, : len(HEADER)] = torch.tensor([req, k, size, prefix, int(last)])
            msg[1 : size + 1] = y
            sends.append(_send(cfg, msg, tag))
            tag += 1
            prefix += size
            k += 1
    for i in range(WINDOW - 1):  # match the receives rank 1 still has posted
        sends.append(_send(cfg, torch.zeros(cfg.chunk + 1, cfg.hidden), tag + i))
    for work in sends:
        if work is not None:
            work.wait()


def _send(cfg: WorkloadConfig, msg: torch.Tensor, tag: int):
    if cfg.send == "blocking":
        dist.send(msg, dst=1, tag=tag)
        return None
    return dist.isend(msg, dst=1, tag=tag)


def _stage1(cfg, stage, caches, rep, on_cpu) -> None:
    posted = {}
    for tag in range(WINDOW):
        buf = torch.empty(cfg.chunk + 1, cfg.hidden)
        posted[tag] = (buf, dist.irecv(buf, src=0, tag=tag))
    tag = 0
    while True:
        buf, work = posted.pop(tag)
        work.wait()
        req, k, size, prefix, last = (int(v) for v in buf[0, : len(HEADER)].tolist())
        x = buf[1 : size + 1].clone()
        if not last:
            posted[tag + WINDOW] = (buf, dist.irecv(buf, src=0, tag=tag + WINDOW))
        name = None if rep is None else dcpp_marker(rep * cfg.requests + req, k, 1, size, prefix)
        _run_marked(name, stage, x, caches[(req, 1)], on_cpu)
        tag += 1
        if last:
            break
    for _, work in posted.values():  # the empty messages after the last chunk
        work.wait()
