"""A synthetic cluster run made of one real rank folder, for the scale benchmarks.

`replicate_rank` copies a real torch_npu rank folder N times as `rank<r>_ascend_pt/` under one run
folder, each with `profiler_info_<r>.json` whose `rank_id` is r (the readers take the rank from
there, pipelines/ingest/readers/profiler_info.py); every other file is a hard link to the source
when the file system allows (the readers only read), else a copy. The output goes to a temporary
folder chosen by the caller and is never part of the repository."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from pipelines.paths import REAL_TRACES_DIR

# set B0: a complete level0 text export (trace_view.json 1.8 MB, kernel_details, step_trace_time)
DEFAULT_RANK = REAL_TRACES_DIR / "msinsight/test/data/pytorch/text/level0/rank0_ascend_pt"


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def replicate_rank(out: Path, ranks: int, source: Path = DEFAULT_RANK) -> Path:
    """`out`/rank<r>_ascend_pt for r in 0..ranks-1, made of `source`; returns `out` (what it
    held before is removed first: a rerun in the same --workdir starts clean)."""
    shutil.rmtree(out, ignore_errors=True)
    infos = sorted(source.glob("profiler_info*.json"))
    if len(infos) != 1:
        raise ValueError(f"{source}: expected one profiler_info*.json, found {len(infos)}")
    info = json.loads(infos[0].read_text())
    files = [p for p in sorted(source.rglob("*")) if p.is_file() and p != infos[0]]
    for rank in range(ranks):
        folder = out / f"rank{rank}_ascend_pt"
        for path in files:
            target = folder / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            _link_or_copy(path, target)
        (folder / f"profiler_info_{rank}.json").write_text(json.dumps({**info, "rank_id": rank}))
    return out
