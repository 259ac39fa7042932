"""`tracereplay workload --profile-table`: measure the reference model's operator-latency table on
this CPU, tokens x prefix -> time, written in the generic layout of docs/latency_tables.md so
`tracereplay ingest` reads it like a configurator's export.

One decoder layer of the workload model (pipelines.workload.model.Layer, random weights, the
config's attention: dense or sparse) is timed for each chunk c and each prefix p = k*c below
`seq_len`, with a KV cache holding p random keys: `attention` (the attention step alone, the
chunk's queries over the cached prefix and the chunk) and `layer` (the whole layer forward: norms,
projections, attention, MLP). Each point is the median of `repeats` timed calls after `warmup`
untimed ones, in intra-op `threads` threads, on the thread's CPU clock when `threads` is 1 (other
jobs on a shared machine do not inflate it) and the wall clock otherwise; mean, min, max and std
ride along."""

from __future__ import annotations

import csv
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pipelines.workload.config import WorkloadConfig

FILE_NAME = "latency_table.csv"
COLUMNS = (
    "source",
    "hardware",
    "model",
    "tp",
    "attention",
    "operator",
    "batch_size",
    "tokens",
    "prefix",
    "time_us",
    "mean_us",
    "min_us",
    "max_us",
    "std_us",
)


def hardware_name() -> str:
    """`cpu-<machine>` (platform.machine(): x86_64, aarch64 ...)."""
    return f"cpu-{platform.machine() or 'unknown'}"


def _timed(
    call: Callable[[], object], repeats: int, warmup: int, clock: Callable[[], int]
) -> list[float]:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start = clock()
        call()
        times.append((clock() - start) / 1e3)
    return times


def clock_of(threads: int) -> Callable[[], int]:
    """The calling thread's on-CPU time with one intra-op thread (torch then runs the operator
    on this thread: other jobs on a shared machine do not inflate it), else the wall clock."""
    return time.thread_time_ns if threads == 1 else time.perf_counter_ns


def measure(
    cfg: WorkloadConfig, chunks: Sequence[int], repeats: int = 5, warmup: int = 1
) -> list[dict[str, object]]:
    """One row per operator x (chunk, prefix) point, columns COLUMNS."""
    import torch

    from pipelines.workload.model import build_stage

    torch.set_num_threads(cfg.threads)
    layer = build_stage(cfg, 0).layers[0]
    rows: list[dict[str, object]] = []
    generator = torch.Generator().manual_seed(cfg.seed)
    with torch.no_grad():
        for c in chunks:
            for p in range(0, cfg.seq_len - c + 1, c):
                cache = layer.new_cache()
                cache.k[:, :p] = torch.randn(cache.k[:, :p].shape, generator=generator)
                cache.v[:, :p] = torch.randn(cache.v[:, :p].shape, generator=generator)
                cache.index_k[:p] = torch.randn(cache.index_k[:p].shape, generator=generator)
                x = torch.randn(c, cfg.hidden, generator=generator)

                def whole(cache=cache, x=x, p=p) -> object:
                    cache.length = p
                    return layer(x, cache)

                whole()  # fills the chunk's keys, so the attention step below reads them
                q = torch.randn(cfg.heads, c, layer.head_dim, generator=generator)
                h = layer.norm1(x)

                def attention(cache=cache, q=q, h=h, p=p, c=c) -> object:
                    if cfg.attention == "sparse":
                        return layer._sparse(h, q, cache, p, c)
                    return layer._dense(q, cache.k[:, : p + c], cache.v[:, : p + c], p, c)

                for operator, call in (("attention", attention), ("layer", whole)):
                    times = _timed(call, repeats, warmup, clock_of(cfg.threads))
                    rows.append(_row(cfg, operator, c, p, times))
    return rows


def _row(cfg: WorkloadConfig, operator: str, c: int, p: int, times: list[float]) -> dict:
    return {
        "source": "workload",
        "hardware": hardware_name(),
        "model": cfg.model_name,
        "tp": 1,
        "attention": cfg.attention,
        "operator": operator,
        "batch_size": 1,
        "tokens": c,
        "prefix": p,
        "time_us": round(statistics.median(times), 3),
        "mean_us": round(statistics.fmean(times), 3),
        "min_us": round(min(times), 3),
        "max_us": round(max(times), 3),
        "std_us": round(statistics.pstdev(times), 3),
    }


def write_table(rows: list[dict[str, object]], out_dir: Path) -> Path:
    """Write `rows` as out_dir/latency_table.csv (generic layout); returns the path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / FILE_NAME
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path
