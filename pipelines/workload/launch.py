"""run_workload(cfg, out): spawn the two ranks, wait for them, return the trace paths."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from pipelines.workload.config import PP, WorkloadConfig


def run_workload(cfg: WorkloadConfig, out: Path) -> tuple[list[Path], float]:
    """Run the workload on PP local processes (gloo); the traces land in `out` (the whole
    configuration rides in each trace's metadata, key `workload`). Returns the trace paths
    and the wall time in s."""
    import torch.multiprocessing as mp

    from pipelines.workload.rank_process import run_rank, trace_name

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        init_file = str(Path(tmp) / "gloo-init")
        mp.spawn(run_rank, args=(cfg, str(out), init_file), nprocs=PP, join=True)
    wall_s = time.perf_counter() - started
    return [out / trace_name(r) for r in range(PP)], wall_s
