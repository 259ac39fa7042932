"""Per-rank ingestion as Dagster steps: the multiprocess and the Dask executor (a LocalCluster of
two worker processes) write the same lake rows as the steps called in this process."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from pipelines.bench.rank_copies import replicate_rank
from pipelines.ingest import per_rank
from pipelines.store import LakeStore
from pipelines.store.schema import CANONICAL_TABLES

pytestmark = [pytest.mark.real, pytest.mark.slow]

RANKS = 2


def _lake_rows(root: Path) -> dict[str, list[tuple]]:
    out = {}
    with LakeStore(root).open_runs() as con:
        for table in CANONICAL_TABLES:
            columns = [
                c[0]
                for c in con.execute(f"describe {table}").fetchall()
                if c[0] not in ("ingested_at", "seen_at")
            ]
            listed = ", ".join(f'"{c}"' for c in columns)
            out[table] = con.execute(f"select {listed} from {table} order by all").fetchall()
    return out


@pytest.fixture
def cluster(real_dir, tmp_path) -> Path:
    return replicate_rank(tmp_path / "cluster", RANKS)


@pytest.fixture
def in_process(cluster, tmp_path) -> dict[str, list[tuple]]:
    root = tmp_path / "lake_in_process"
    plan = per_rank.plan_run(cluster, root)
    results = [per_rank.ingest_rank(plan, i) for i in range(len(plan.rank_dirs))]
    per_rank.finish_run(plan, results)
    rows = _lake_rows(root)
    assert len(rows["runs"]) == 1 and len(rows["ranks"]) == RANKS
    assert rows["slices"], "nothing ingested"
    return rows


def _run(job_name: str, cluster: Path, root: Path, executor: dict, plan_op: str) -> None:
    with dg.instance_for_test() as instance:
        result = dg.execute_job(
            dg.build_reconstructable_job(
                "pipelines.defs.ingest.rank_job", "job_named", reconstructable_args=(job_name,)
            ),
            instance=instance,
            run_config={
                "ops": {plan_op: {"config": {"folder": str(cluster), "lake": str(root)}}},
                "execution": {"config": executor},
            },
        )
        assert result.success
        steps = {
            e.step_key
            for e in instance.all_logs(result.run_id)
            if e.dagster_event is not None
            and e.dagster_event.event_type_value == "STEP_SUCCESS"
            and e.step_key.startswith("ingest_rank")
        }
        assert len(steps) == RANKS, steps


def test_multiprocess_executor_writes_the_same_rows(cluster, in_process, tmp_path):
    root = tmp_path / "lake_mp"
    _run("ingest_ranks", cluster, root, {"max_concurrent": 2}, "plan_rank_partitions")
    assert _lake_rows(root) == in_process


def test_dask_executor_on_a_local_cluster_writes_the_same_rows(cluster, in_process, tmp_path):
    root = tmp_path / "lake_dask"
    local = {"n_workers": 2, "threads_per_worker": 1, "processes": True}
    executor = {"cluster": {"local": local}}
    _run(f"ingest_ranks_dask_{RANKS}", cluster, root, executor, "plan_rank_run")
    assert _lake_rows(root) == in_process
