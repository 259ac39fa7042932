"""Analysis assets: chunk segmentation per run folder, and the tau_k fit table over all runs.

`chunks` segments every run of a partition from its host-side chunk markers
(pipelines.analysis.chunks.segment; simulated runs carry the same markers as real ones) and replaces
those runs' rows in the `chunks` table. `tau_fits` fits tau_k per configuration and virtual
stage over the whole warehouse through pipelines.analysis.tau.fit_store.fit_and_store, the step
`tracereplay fit` and the demo call, which stores the DuckDB table `tau_fits`.
"""

from typing import Literal

import dagster as dg
import polars as pl

from pipelines.analysis.chunks.chunk_store import extract_chunks
from pipelines.analysis.tau.fit_store import FitOptions, fit_and_store
from pipelines.defs.ingest.partitions import runs_partitions
from pipelines.defs.metadata import markdown_frame
from pipelines.defs.resources import WRITE_POOL, RawDirResource, StoreResource
from pipelines.ingest.origins import runs_under
from pipelines.store import queries

FIT_SUMMARY_COLUMNS = (
    "model",
    "schedule",
    "chunk_size",
    "seq_len",
    "vstage",
    "n_runs",
    "n_points",
    "slope_ms",
    "intercept_ms",
    "r2",
    "balance",
    "attention",
    "verdict",
)


class ChunksConfig(dg.Config):
    """Segmentation rule (pipelines.analysis.chunks.segment.segment_chunks). marker_regex None and
    renumber False: each run's stored rule (runs.segmentation; the chunk[...] markers when none
    is stored); a rule given here is stored with the runs it segments (chunk_store)."""

    marker_regex: str | None = None
    include_comm: bool = False
    link: Literal["auto", "time", "flow"] = "auto"
    renumber: bool = False


@dg.asset(
    partitions_def=runs_partitions,
    deps=["slices", "runs"],
    group_name="analysis",
    kinds={"duckdb", "polars"},
    pool=WRITE_POOL,
    description="Chunks (request x chunk x virtual stage) of the partition's runs, from markers.",
)
def chunks(
    context: dg.AssetExecutionContext,
    config: ChunksConfig,
    warehouse: StoreResource,
    raw_dir: RawDirResource,
) -> dg.MaterializeResult:
    folder = raw_dir.folder(context.partition_key)
    with warehouse.connect() as con:
        report = extract_chunks(
            con,
            runs_under(con, folder),
            config.marker_regex,
            include_comm=config.include_comm,
            link=config.link,
            renumber=config.renumber,
        )
        total = queries.row_counts(con, ["chunks"])["chunks"]
    per_run = [
        {
            "run_id": run.run_id,
            "chunks": run.chunks,
            "markers": run.markers,
            "empty_markers": run.empty_markers,
            "unassigned_fraction": run.unassigned_fraction,
        }
        for run in report.runs
    ]
    for row in per_run:
        if row["markers"] == 0:
            context.log.warning(
                f"{row['run_id']}: no chunk markers matched the regex; no chunks segmented"
            )
    for kept in report.kept:
        context.log.warning(
            f"{kept.run_id}: {kept.reason}; its {kept.stored_chunks} stored chunks are unchanged"
        )
    table = pl.DataFrame(
        per_run,
        schema={
            "run_id": pl.String,
            "chunks": pl.Int64,
            "markers": pl.Int64,
            "empty_markers": pl.Int64,
            "unassigned_fraction": pl.Float64,
        },
    )
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": int(table["chunks"].sum()),
            "runs": table.height,
            "runs_without_markers": int((table["markers"] == 0).sum()),
            "runs_kept": len(report.kept),
            "rows_in_table": total,
            "per_run": markdown_frame(table),
        }
    )


class FitConfig(dg.Config):
    """Options of the fit step (pipelines.analysis.tau.fit_store.FitOptions)."""

    segment: bool = True
    keep_partial: bool = False
    level: float = 0.95
    n_boot: int = 1000
    seed: int = 0

    def options(self) -> FitOptions:
        return FitOptions(
            segment=self.segment,
            drop_partial=not self.keep_partial,
            level=self.level,
            n_boot=self.n_boot,
            seed=self.seed,
        )


def fit_summary(fits: pl.DataFrame) -> pl.DataFrame:
    """The columns of the fit table worth reading at a glance (times in ms)."""
    if fits.is_empty():
        return pl.DataFrame(schema=dict.fromkeys(FIT_SUMMARY_COLUMNS, pl.String))
    frame = fits.with_columns(
        (pl.col("slope") / 1e6).alias("slope_ms"), (pl.col("intercept") / 1e6).alias("intercept_ms")
    )
    return frame.select(c for c in FIT_SUMMARY_COLUMNS if c in frame.columns)


@dg.asset(
    deps=[chunks],
    group_name="analysis",
    kinds={"duckdb", "polars"},
    pool=WRITE_POOL,
    # refit whenever a run's chunks change (evaluated by the automation sensor in automation.py)
    automation_condition=dg.AutomationCondition.eager(),
    description="tau_k fits and linearity verdicts per configuration and virtual stage.",
)
def tau_fits(
    context: dg.AssetExecutionContext, config: FitConfig, warehouse: StoreResource
) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        report = fit_and_store(con, config.options())
    fits = report.fits
    verdicts = dict(fits.group_by("verdict").len().sort("verdict").iter_rows())
    if report.segmented:
        context.log.info(f"segmented in memory (no chunk rows yet): {', '.join(report.segmented)}")
    if fits.is_empty():
        context.log.warning("no chunks in the warehouse: the fit table is empty")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": fits.height,
            "points": report.points,
            "verdicts": dg.MetadataValue.json(verdicts),
            "fits": markdown_frame(fit_summary(fits), max_rows=200),
        }
    )
