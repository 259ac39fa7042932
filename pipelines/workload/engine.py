"""One rank of the workload: gloo process group, pre-posted receives, chunk markers, profiler.

Every receive the rank will need is posted (irecv) before the first forward, so a blocking send
always finds its receive and no task order that respects the pipeline's dependencies can
deadlock. Each forward is wrapped in `record_function("chunk[req=..,k=..,vs=..,tokens=..,
prefix=..]")` (docs/tau_k.md §1); waiting for an input and sending happen outside the marker.
Blocking sends (`send="blocking"`) call dist.send after the forward; overlapped ones dist.isend
and wait for all of them at the end. The run facts go in with prof.add_metadata, and the trace
is exported as `<out>/rank<r>.pt.trace.json`.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, record_function

from pipelines.workload.config import PP, WorkloadConfig
from pipelines.workload.model import build_stage
from pipelines.workload.plan import Task, rank_stages, rank_tasks


def trace_name(rank: int) -> str:
    return f"rank{rank}.pt.trace.json"


def marker(task: Task, cfg: WorkloadConfig) -> str:
    return (
        f"chunk[req=r{task.req},k={task.k},vs={task.vs},tokens={cfg.chunk},"
        f"prefix={task.k * cfg.chunk}]"
    )


def run_rank(rank: int, cfg: WorkloadConfig, out: str, init_file: str) -> None:
    """Run this rank's tasks under the profiler and export its Kineto trace."""
    torch.set_num_threads(cfg.threads)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=PP)
    try:
        _run(rank, cfg, Path(out))
    finally:
        dist.destroy_process_group()


def _prompt(cfg: WorkloadConfig, req: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(cfg.seed * 7919 + req)
    return torch.randn(cfg.seq_len, cfg.hidden, generator=generator)


def _run(rank: int, cfg: WorkloadConfig, out: Path) -> None:
    stages = {vs: build_stage(cfg, vs) for vs in rank_stages(cfg, rank)}
    caches = {(req, vs): s.new_caches() for req in range(cfg.requests) for vs, s in stages.items()}
    tasks = rank_tasks(cfg)[rank]
    prompts = {req: _prompt(cfg, req) for req in range(cfg.requests)} if 0 in stages else {}
    buffers = {t: torch.empty(cfg.chunk, cfg.hidden) for t in tasks if t.recv_from is not None}
    local: dict[tuple[int, int], torch.Tensor] = {}
    sends = []
    dist.barrier()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for key, value in cfg.metadata().items():
            prof.add_metadata(key, value)
        prof.add_metadata_json("workload", json.dumps(cfg.as_dict()))
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
            with torch.no_grad(), record_function(marker(t, cfg)):
                y = stages[t.vs](x, caches[(t.req, t.vs)])
            if t.send_to is None:
                local[(t.j, t.vs)] = y
            elif cfg.send == "blocking":
                dist.send(y, dst=t.send_to, tag=t.j * cfg.stages + t.vs + 1)
            else:
                sends.append((dist.isend(y, dst=t.send_to, tag=t.j * cfg.stages + t.vs + 1), y))
        for work, _ in sends:
            work.wait()
        dist.barrier()
    prof.export_chrome_trace(str(out / trace_name(rank)))
