"""Per-rank ingestion of one big run into the Parquet lake, one step per rank folder.

The steps only call pipelines.ingest.per_rank (plan_run, ingest_rank, finish_run); Dagster fans
the rank folders out (a dynamic output per rank) and the executor runs them at once:

* `ingest_ranks`: the multiprocess executor (default: one process per core);
* `static_rank_job(N)` (`ingest_ranks_dask_<N>`): dagster-dask's Dask executor, a local cluster
  by default, or any Dask scheduler through run config (docs/lake.md gives the config for a
  remote scheduler; the lake must then be a folder every worker sees). One op per rank: the
  Dask executor does not run dynamic outputs' steps.

Run config: `ops: {plan_rank_partitions: {config: {folder: ..., lake: ...}}}` (the Dask jobs:
`plan_rank_run`).
"""

import dagster as dg
from dagster_dask import dask_executor

from pipelines.ingest import per_rank


class RankIngestConfig(dg.Config):
    folder: str  # the run folder holding rank folders
    lake: str  # the lake folder (shared by every worker)


@dg.op(out={"plan": dg.Out(), "ranks": dg.DynamicOut()})
def plan_rank_partitions(config: RankIngestConfig):
    """Discover and hash the run; one dynamic output per rank folder."""
    plan = per_rank.plan_run(config.folder, config.lake)
    yield dg.Output(plan, "plan")
    for index in range(len(plan.rank_dirs)):
        yield dg.DynamicOutput(index, output_name="ranks", mapping_key=f"rank_{index}")


@dg.op
def ingest_rank_partition(
    context: dg.OpExecutionContext, plan: per_rank.RunPlan, index: int
) -> per_rank.RankResult:
    """Read one rank folder and write its lake files."""
    return _ingest_rank(context, plan, index)


def _ingest_rank(
    context: dg.OpExecutionContext, plan: per_rank.RunPlan, index: int
) -> per_rank.RankResult:
    result = per_rank.ingest_rank(plan, index)
    context.log.info(f"rank {result.rank}: {result.rows}")
    return result


@dg.op
def finish_rank_partitions(
    context: dg.OpExecutionContext, plan: per_rank.RunPlan, results: list[per_rank.RankResult]
) -> dg.Output:
    """Write the run's runs and run_inputs rows once every rank is in the lake."""
    return _finish(context, plan, results)


def _finish(
    context: dg.OpExecutionContext, plan: per_rank.RunPlan, results: list[per_rank.RankResult]
) -> dg.Output:
    totals = per_rank.finish_run(plan, results)
    context.log.info(f"run {plan.run_id}: {totals}")
    return dg.Output(totals, metadata={"run_id": plan.run_id, "ranks": len(results), **totals})


@dg.graph
def ingest_rank_graph() -> None:
    plan, ranks = plan_rank_partitions()
    results = ranks.map(lambda index: ingest_rank_partition(plan, index))
    finish_rank_partitions(plan, results.collect())


ingest_ranks = ingest_rank_graph.to_job(
    name="ingest_ranks",
    description="Ingest one run's rank folders into the lake, one process per rank folder.",
    executor_def=dg.multiprocess_executor,
)


@dg.op
def plan_rank_run(config: RankIngestConfig) -> per_rank.RunPlan:
    """Discover and hash the run (the static graph's plan: one step per rank follows)."""
    return per_rank.plan_run(config.folder, config.lake)


def _rank_op(index: int) -> dg.OpDefinition:
    @dg.op(name=f"ingest_rank_{index}")
    def ingest_one_rank(context: dg.OpExecutionContext, plan: per_rank.RunPlan):
        return _ingest_rank(context, plan, index)

    return ingest_one_rank


def static_rank_job(ranks: int, executor_def: dg.ExecutorDefinition = dask_executor):
    """The same steps as `ingest_ranks` with the rank folders fixed when the job is built: one op
    per rank. dagster-dask 0.29 builds its Dask graph from the plan before the run starts, so a
    dynamic output's mapped steps are never submitted (the run ends "successful" after the plan
    step: measured, docs/lake.md); its jobs need this static form."""
    ops = [_rank_op(index) for index in range(ranks)]
    names = [f"rank_{index}" for index in range(ranks)]

    # one named input per rank: dagster-dask 0.29 hands a fan-in (list) input over empty
    # (measured: finish_run received [] after both rank steps succeeded)
    @dg.op(name="finish_ranks", ins={"plan": dg.In(), **{n: dg.In() for n in names}})
    def finish_ranks(context: dg.OpExecutionContext, plan: per_rank.RunPlan, **results):
        return _finish(context, plan, [results[n] for n in names])

    @dg.graph(name=f"ingest_{ranks}_ranks")
    def graph() -> None:
        plan = plan_rank_run()
        finish_ranks(plan, **{n: op(plan) for n, op in zip(names, ops, strict=True)})

    return graph.to_job(
        name=f"ingest_ranks_dask_{ranks}",
        description=f"ingest_ranks for a run of {ranks} rank folders under the Dask executor.",
        executor_def=executor_def,
    )


def job_named(name: str) -> dg.JobDefinition:
    """`ingest_ranks`, or `ingest_ranks_dask_<N>` (dg.build_reconstructable_job rebuilds it in
    every executor process from this name)."""
    if name == ingest_ranks.name:
        return ingest_ranks
    prefix = "ingest_ranks_dask_"
    if name.startswith(prefix) and name[len(prefix) :].isdigit():
        return static_rank_job(int(name[len(prefix) :]))
    raise KeyError(name)
