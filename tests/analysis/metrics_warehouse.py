"""A small warehouse of simulated, ingested runs (written as Ascend text profiler folders and read
back by the real ingest), for the metric marts and the compare / explain commands."""

from __future__ import annotations

from pathlib import Path

from pipelines.analysis.chunks.chunk_store import extract_chunks
from pipelines.ingest.load import ingest_paths
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import open_store

SEQ_LEN = 131072
CHUNK = 16384
MODEL = "llama3-8b"


def build(root: Path, schedules: tuple[str, ...] = ("cpp", "vpp"), repeats: int = 3):
    """Simulate `repeats` seeded runs (2 % noise) per schedule, ingest them and segment chunks.
    Returns (warehouse path, {folder name: SimResult})."""
    results = {}
    folders = []
    for schedule in schedules:
        for seed in range(repeats):
            result = simulate(
                SEQ_LEN, schedule, model=MODEL, chunk_size=CHUNK, pp=2, noise=0.02, seed=seed
            )
            folder = root / "raw" / f"{schedule}{seed}"
            write_ascend_pt(result, folder)
            folders.append(folder)
            results[folder.name] = result
    path = root / "warehouse.duckdb"
    con = open_store(path).open()
    try:
        ingested = ingest_paths(folders, con, progress=False)
        extract_chunks(con, [r.run_id for r in ingested.runs])
    finally:
        con.close()
    return path, results
