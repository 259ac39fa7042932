"""What a fit depends on, one row per measured run: run_id, content_hash, segmentation and the
configuration columns (pipelines.analysis.tau.curve_keys.CONFIG_KEYS).

Where reading every `runs` row is O(history) (a lake: one Parquet file per run), the store gives
a stamp per run (Session.run_stamps); the rows are kept beside `tau_fits` (table
`tau_fit_runs`, with each run's stamp) and a later fit reads only the `runs` rows of runs that are
new or whose stamp changed since (a retag, a re-segmentation, a re-ingest)."""

from __future__ import annotations

import polars as pl

from pipelines.store import Session, queries

RUNS_TABLE = "tau_fit_runs"
STAMP = "runs_file"
_SCAN_ALL_ABOVE = 50
"""More changed runs than this: one read of the `runs` view instead of one scan per run."""


def current_inputs(session: Session) -> pl.DataFrame:
    """The fit inputs of every measured run now (columns of queries.fit_inputs, plus
    `runs_file` where the store stamps runs: the stamp of the run's `runs` row)."""
    stamps = session.run_stamps()
    if stamps is None:
        return queries.fit_inputs(session.con)
    kept = _stored(session)
    if kept is not None:
        kept = kept.filter(
            pl.struct("run_id", STAMP).map_elements(
                lambda row: stamps.get(row["run_id"]) == row[STAMP], return_dtype=pl.Boolean
            )
        )
    known = set() if kept is None else set(kept["run_id"].to_list())
    changed = sorted(set(stamps) - known)
    fresh = _read(session, changed)
    fresh = fresh.with_columns(
        pl.Series(STAMP, [stamps[run_id] for run_id in fresh["run_id"].to_list()], pl.String)
    )
    parts = [part for part in (kept, fresh) if part is not None and part.height]
    if not parts:
        return fresh
    return pl.concat(parts, how="vertical_relaxed").sort("run_id")


def store_inputs(session: Session, inputs: pl.DataFrame) -> None:
    """Keep `inputs` (current_inputs) for the next fit, when they carry stamps."""
    if STAMP in inputs.columns:
        session.replace_table(RUNS_TABLE, inputs)


def _stored(session: Session) -> pl.DataFrame | None:
    if not queries.relation_exists(session.con, RUNS_TABLE):
        return None
    return queries.read_relation(session.con, RUNS_TABLE)


def _read(session: Session, run_ids: list[str]) -> pl.DataFrame:
    if len(run_ids) > _SCAN_ALL_ABOVE:
        frame = queries.fit_inputs(session.con)
        return frame.filter(pl.col("run_id").is_in(run_ids))
    if not run_ids:
        return queries.fit_inputs(session.con).clear()
    return queries.fit_inputs(session.con, session.runs_relation("runs", run_ids))
