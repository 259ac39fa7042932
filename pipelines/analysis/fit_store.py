"""The fit step: tau_k points (segmenting runs that have chunk markers but no chunk rows yet),
the fits with their verdicts, stored as the warehouse table `tau_fits`. `tracereplay fit`, the
demo and the Dagster asset `tau_fits` all call `fit_and_store`, so the same warehouse gives the
same stored rows whichever door ran it."""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import polars as pl

from pipelines import warehouse, warehouse_queries

FIT_TABLE = "tau_fits"


@dataclass(frozen=True)
class FitOptions:
    """Options of pipelines.analysis.curves.fit_curves (and whether to segment first)."""

    segment: bool = True
    drop_partial: bool = True
    level: float = 0.95
    n_boot: int = 1000
    seed: int = 0


@dataclass
class FitReport:
    """The stored fit table, how many points it was fitted on, and the runs segmented here."""

    fits: pl.DataFrame
    points: int
    segmented: list[str] = field(default_factory=list)


def store_fits(con: duckdb.DuckDBPyConnection, fits: pl.DataFrame) -> None:
    """Replace the `tau_fits` table with `fits`, in one transaction."""
    warehouse.replace_table(con, FIT_TABLE, fits)


def fit_and_store(con: duckdb.DuckDBPyConnection, options: FitOptions = FitOptions()) -> FitReport:
    """Fit every tau_k curve of the warehouse and store the result as `tau_fits`.
    Runs with chunk markers but no chunk rows are segmented in memory with their default rule
    (`options.segment`; pipelines.analysis.tau_points.load_tau_points)."""
    # statsmodels takes seconds to import: only when fitting
    from pipelines.analysis.curves import fit_curves
    from pipelines.analysis.tau_points import load_tau_points

    points, segmented = load_tau_points(con, segment=options.segment)
    fits = fit_curves(
        points,
        drop_partial=options.drop_partial,
        level=options.level,
        n_boot=options.n_boot,
        seed=options.seed,
    )
    store_fits(con, fits)
    return FitReport(fits, points.height, segmented)


def load_fits(con: duckdb.DuckDBPyConnection) -> pl.DataFrame | None:
    """The stored fit table, or None when no fit was ever stored in this warehouse."""
    if not warehouse_queries.relation_exists(con, FIT_TABLE):
        return None
    return warehouse_queries.read_relation(con, FIT_TABLE)
