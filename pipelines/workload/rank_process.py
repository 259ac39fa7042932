"""One rank of the workload: gloo process group, pre-posted receives, chunk markers, profiler.

The rank runs `warmup` passes over the requests before the profiler starts (first-call costs
stay out of the trace) and `repeats` profiled passes, each starting and ending with a barrier
(the pipeline drained between passes; pass p's request r is marked `r{p * requests + r}`).
Every receive of a pass is posted (irecv) before its first forward, so a blocking send always
finds its receive and no task order that respects the pipeline's dependencies can deadlock.
Each forward is wrapped in `record_function("chunk[req=..,k=..,vs=..,tokens=..,prefix=..]")`
(docs/tau_k.md §1); waiting for an input and sending happen outside the marker. Blocking sends
(`send="blocking"`) call dist.send after the forward; overlapped ones dist.isend, waited at the
end of the pass. Each forward's thread CPU time and wall time go in as trace metadata
`chunk_cpu_ns` (pipelines.workload.on_cpu), the run facts with prof.add_metadata, and the trace
is exported as `<out>/rank<r>.pt.trace.json`. Each rank runs in a session of its own
(`_own_cpu_share`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, record_function

from pipelines.workload.config import PP, WorkloadConfig
from pipelines.workload.model import build_stage
from pipelines.workload.plan import Task, rank_stages, rank_tasks


def trace_name(rank: int) -> str:
    return f"rank{rank}.pt.trace.json"


def marker(task: Task, cfg: WorkloadConfig, req: int) -> str:
    return (
        f"chunk[req=r{req},k={task.k},vs={task.vs},tokens={cfg.chunk},prefix={task.k * cfg.chunk}]"
    )


def run_rank(rank: int, cfg: WorkloadConfig, out: str, init_file: str) -> None:
    """Run this rank's tasks under the profiler and export its Kineto trace."""
    _own_cpu_share()
    if cfg.pin:
        _pin(rank)
    torch.set_num_threads(cfg.threads)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=PP)
    try:
        _run(rank, cfg, Path(out))
    finally:
        dist.destroy_process_group()


def _own_cpu_share() -> None:
    """Put this rank in a session of its own. Linux with autogroup scheduling
    (/proc/sys/kernel/sched_autogroup_enabled = 1) divides the CPU first between sessions: two
    ranks in one session share one session's share, so a rank computing while its peer waits
    runs several times faster than one computing beside it, and every chunk's wall time
    depends on what the other rank does (docs/workload.md, "Measuring on a shared machine")."""
    with contextlib.suppress(OSError):  # already a session leader
        os.setsid()


def _pin(rank: int) -> None:
    """Run this rank on one CPU of those the process may use (rank r on the r-th), so the two
    ranks never share a core and never migrate (`tracereplay bench engine`)."""
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[rank % len(cpus)]})


def _prompt(cfg: WorkloadConfig, req: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(cfg.seed * 7919 + req)
    return torch.randn(cfg.seq_len, cfg.hidden, generator=generator)


def _run(rank: int, cfg: WorkloadConfig, out: Path) -> None:
    stages = {vs: build_stage(cfg, vs) for vs in rank_stages(cfg, rank)}
    caches = {(req, vs): s.new_caches() for req in range(cfg.requests) for vs, s in stages.items()}
    if cfg.schedule == "dcpp":
        _run_dcpp(rank, cfg, out, stages, caches)
        return
    tasks = rank_tasks(cfg)[rank]
    prompts = {req: _prompt(cfg, req) for req in range(cfg.requests)} if 0 in stages else {}
    buffers = {t: torch.empty(cfg.chunk, cfg.hidden) for t in tasks if t.recv_from is not None}
    on_cpu: dict[str, list[int]] = {}  # marker -> [thread CPU ns, wall ns] of the forward
    for _ in range(cfg.warmup):  # first-call costs (allocator, kernels) stay out of the trace
        _pass(cfg, stages, caches, tasks, prompts, buffers, None, {})
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for key, value in cfg.metadata().items():
            prof.add_metadata(key, value)
        prof.add_metadata_json("workload", json.dumps(cfg.as_dict()))
        for rep in range(cfg.repeats):
            _pass(cfg, stages, caches, tasks, prompts, buffers, rep, on_cpu)
        prof.add_metadata_json("chunk_cpu_ns", json.dumps(on_cpu))
    prof.export_chrome_trace(str(out / trace_name(rank)))


def _run_dcpp(rank: int, cfg: WorkloadConfig, out: Path, stages: dict, caches: dict) -> None:
    """DCPP (pipelines.workload.dcpp): rank 0 profiles stage 0 and sizes the chunks online."""
    from pipelines.workload.dcpp import dcpp_pass, profile_fit

    prompts = {req: _prompt(cfg, req) for req in range(cfg.requests)} if rank == 0 else {}
    fit = profile_fit(cfg, stages[0], caches[(0, 0)], prompts[0]) if rank == 0 else None
    on_cpu: dict[str, list[int]] = {}
    for _ in range(cfg.warmup):
        dcpp_pass(cfg, rank, stages, caches, prompts, fit, None, {})
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for key, value in cfg.metadata().items():
            prof.add_metadata(key, value)
        prof.add_metadata_json("workload", json.dumps(cfg.as_dict()))
        if fit is not None:
            prof.add_metadata_json("dcpp_profile_fit", json.dumps([fit.a, fit.b, fit.c]))
        for rep in range(cfg.repeats):
            dcpp_pass(cfg, rank, stages, caches, prompts, fit, rep, on_cpu)
        prof.add_metadata_json("chunk_cpu_ns", json.dumps(on_cpu))
    prof.export_chrome_trace(str(out / trace_name(rank)))


def _pass(cfg, stages, caches, tasks, prompts, buffers, rep: int | None, on_cpu: dict) -> None:
    """One pass over every request, starting and ending drained (a barrier on both sides): the
    KV caches are emptied, every receive of the pass is posted before the first forward, and
    request `req` of profiled pass `rep` is marked `r{rep * requests + req}`; `rep` None: a
    warm-up pass, unmarked."""
    for per_layer in caches.values():
        for cache in per_layer:
            cache.length = 0
    local: dict[tuple[int, int], torch.Tensor] = {}
    sends = []
    dist.barrier()
    receives = {
        t: dist.irecv(buf, src=t.recv_from, tag=t.tag(cfg.stages)) for t, buf in buffers.items()
    }
    for t in tasks:
        if t.recv_from is not None:
            receives.pop(t).wait()
            x = buffers[t]
        elif t.vs == 0:
            x = prompts[t.req][t.k * cfg.chunk : (t.k + 1) * cfg.chunk]
        else:
            x = local.pop((t.j, t.vs - 1))
        with torch.no_grad():
            if rep is None:
                y = stages[t.vs](x, caches[(t.req, t.vs)])
            else:
                name = marker(t, cfg, rep * cfg.requests + t.req)
                cpu0, wall0 = time.thread_time_ns(), time.perf_counter_ns()
                with record_function(name):
                    y = stages[t.vs](x, caches[(t.req, t.vs)])
                on_cpu[name] = [time.thread_time_ns() - cpu0, time.perf_counter_ns() - wall0]
        if t.send_to is None:
            local[(t.j, t.vs)] = y
        elif cfg.send == "blocking":
            dist.send(y, dst=t.send_to, tag=t.j * cfg.stages + t.vs + 1)
        else:
            sends.append((dist.isend(y, dst=t.send_to, tag=t.j * cfg.stages + t.vs + 1), y))
    for work, _ in sends:
        work.wait()
    dist.barrier()
