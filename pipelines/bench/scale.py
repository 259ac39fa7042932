"""Scale probes of the Parquet lake (`tracereplay bench scale`), each a ratio within one run.

cluster      a synthetic cluster (one real rank folder replicated N times, pipelines/bench/
             cluster.py) ingested rank by rank into a lake (pipelines.ingest.per_rank) on a
             Dask LocalCluster of 1 worker process, then of 2; wall times, their ratio, and
             row counts checked against N x one rank's.
incremental  one new run ingested into a lake holding `small` runs, then into one holding
             `large` runs (ratio target <= 1.5x). The history is built by copying the Parquet
             files of one ingested run under new run ids (runs rows rewritten with their own
             origin): legitimate setup, far cheaper than ingesting it. Each side is the median
             of 3 ingests (the new run removed after each).
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipelines import lake, lake_catalog
from pipelines.bench.cluster import DEFAULT_RANK, replicate_rank
from pipelines.ingest import per_rank


@dataclass
class ClusterProbe:
    ranks: int
    wall_s: dict[int, float]  # workers -> seconds
    rows: dict[str, int]
    one_rank_rows: dict[str, int]

    @property
    def rows_match(self) -> bool:
        return all(self.rows.get(t, 0) == self.ranks * n for t, n in self.one_rank_rows.items())


def _ingest_cluster(folder: Path, root: Path, workers: int) -> tuple[float, dict[str, int]]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True) as cluster,
        Client(cluster) as client,
    ):
        client.submit(len, []).result()  # workers up before the clock starts
        start = time.perf_counter()
        plan = per_rank.plan_run(folder, root)
        futures = client.map(
            per_rank.ingest_rank, [plan] * len(plan.rank_dirs), range(len(plan.rank_dirs))
        )
        totals = per_rank.finish_run(plan, client.gather(futures))
        return time.perf_counter() - start, totals


def cluster_probe(work: Path, ranks: int, workers: tuple[int, ...] = (1, 2)) -> ClusterProbe:
    one = replicate_rank(work / "one_rank", 1)
    _, one_rows = _ingest_cluster(one, work / "lake_one", 1)
    folder = replicate_rank(work / "cluster", ranks)
    walls, rows = {}, {}
    for count in workers:
        walls[count], rows = _ingest_cluster(folder, work / f"lake_{count}", count)
    keep = ("ranks", "slices", "kernels", "comm_ops", "step_breakdown")
    return ClusterProbe(
        ranks, walls, {t: rows.get(t, 0) for t in keep}, {t: one_rows.get(t, 0) for t in keep}
    )


@dataclass
class IncrementalProbe:
    small: int
    large: int
    wall_s: dict[int, float]  # runs already in the lake -> seconds to ingest one more

    @property
    def ratio(self) -> float:
        return self.wall_s[self.large] / self.wall_s[self.small]


def _history(root: Path, template_root: Path, run_id: str, count: int) -> None:
    """`count` runs in `root` made of the template run's files (new ids, own origins)."""
    con = duckdb.connect()
    try:
        for index in range(count):
            new_id = f"history-{index:05d}"
            for table in lake.RUN_TABLES:
                source = lake.partition_dir(template_root, table, run_id)
                target = lake.partition_dir(root, table, new_id)
                target.mkdir(parents=True, exist_ok=True)
                for path in source.glob("*.parquet"):
                    if table == "runs":
                        con.execute(
                            f"copy (select * replace ('{new_id}' as run_id,"
                            f" origin || '/history-{index:05d}' as origin)"
                            f" from read_parquet('{path}')) to '{target / path.name}'"
                            " (format parquet)"
                        )
                    else:
                        os.link(path, target / path.name)
    finally:
        con.close()


def incremental_probe(
    work: Path, small: int = 10, large: int = 1000, repeat: int = 3
) -> IncrementalProbe:
    from pipelines.ingest.load import WarehouseTarget, ingest_paths
    from pipelines.paths import LAKE_ENV

    template = work / "template_lake"
    first = replicate_rank(work / "template" / "run", 2)
    newcomer = replicate_rank(work / "new" / "run", 2, DEFAULT_RANK)
    previous = os.environ.get(LAKE_ENV)
    walls: dict[int, float] = {}
    try:
        os.environ[LAKE_ENV] = str(template)
        run_id = ingest_paths([first], WarehouseTarget(), progress=False).runs[0].run_id
        for count in (small, large):
            root = work / f"lake_{count}"
            shutil.rmtree(root, ignore_errors=True)
            lake.init(root)
            _history(root, template, run_id, count)
            lake_catalog.entries(root)  # setup: the copies' catalog entries, as ingest writes them
            os.environ[LAKE_ENV] = str(root)
            times = []
            for _ in range(
                repeat
            ):  # the median of `repeat` ingests, the new run removed after each
                start = time.perf_counter()
                report = ingest_paths([newcomer], WarehouseTarget(), progress=False)
                times.append(time.perf_counter() - start)
                if [r.status for r in report.runs] != ["loaded"]:
                    raise RuntimeError(f"the new run was not loaded: {report.as_json()}")
                lake.delete_run(root, report.runs[0].run_id)
            walls[count] = statistics.median(times)
    finally:
        if previous is None:
            os.environ.pop(LAKE_ENV, None)
        else:
            os.environ[LAKE_ENV] = previous
    return IncrementalProbe(small, large, walls)
