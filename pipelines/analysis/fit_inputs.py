"""What a fit depends on, one row per measured run: run_id, content_hash, segmentation and the
configuration columns (pipelines.analysis.curve_keys.CONFIG_KEYS).

In a lake, reading `runs` opens one Parquet file per run (O(history)). The rows are kept beside
`tau_fits` (table `tau_fit_runs`, with the stamp of each run's `runs` file from the identity
catalog, pipelines.lake_catalog); a later fit reads the catalog and only the `runs` rows of runs
that are new or whose `runs` file changed since (a retag, a re-segmentation, a re-ingest)."""

from __future__ import annotations

import json

import duckdb
import polars as pl

from pipelines import lake, lake_catalog, warehouse, warehouse_queries

RUNS_TABLE = "tau_fit_runs"
STAMP = "runs_file"
_SCAN_ALL_ABOVE = 50
"""More changed runs than this: one read of the `runs` view instead of one scan per run."""


def current_inputs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The fit inputs of every measured run now (columns of warehouse_queries.fit_inputs, plus
    `runs_file` in a lake: the catalog's stamp of the run's `runs` file)."""
    root = lake.stored_root(con)
    if root is None:
        return warehouse_queries.fit_inputs(con)
    stamps = {
        entry["run_id"]: json.dumps(entry.get(STAMP)) for entry in lake_catalog.measured(root)
    }
    kept = _stored(con)
    if kept is not None:
        kept = kept.filter(
            pl.struct("run_id", STAMP).map_elements(
                lambda row: stamps.get(row["run_id"]) == row[STAMP], return_dtype=pl.Boolean
            )
        )
    known = set() if kept is None else set(kept["run_id"].to_list())
    changed = sorted(set(stamps) - known)
    fresh = _read(con, root, changed)
    fresh = fresh.with_columns(
        pl.Series(STAMP, [stamps[run_id] for run_id in fresh["run_id"].to_list()], pl.String)
    )
    parts = [part for part in (kept, fresh) if part is not None and part.height]
    if not parts:
        return fresh
    return pl.concat(parts, how="vertical_relaxed").sort("run_id")


def store_inputs(con: duckdb.DuckDBPyConnection, inputs: pl.DataFrame) -> None:
    """Keep `inputs` (current_inputs) for the next fit, when they carry catalog stamps (a lake)."""
    if STAMP in inputs.columns:
        warehouse.replace_table(con, RUNS_TABLE, inputs)


def _stored(con: duckdb.DuckDBPyConnection) -> pl.DataFrame | None:
    if not warehouse_queries.relation_exists(con, RUNS_TABLE):
        return None
    return warehouse_queries.read_relation(con, RUNS_TABLE)


def _read(con: duckdb.DuckDBPyConnection, root, run_ids: list[str]) -> pl.DataFrame:
    if len(run_ids) > _SCAN_ALL_ABOVE:
        frame = warehouse_queries.fit_inputs(con)
        return frame.filter(pl.col("run_id").is_in(run_ids))
    if not run_ids:
        return warehouse_queries.fit_inputs(con).clear()
    return warehouse_queries.fit_inputs_of(con, [lake.run_scan(root, "runs", r) for r in run_ids])
