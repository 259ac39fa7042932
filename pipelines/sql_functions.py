"""Scalar functions the SQL files under sql/ may call, registered on every warehouse connection
before the derived views are built (pipelines.sql_runner.build). Keep them few: a view that uses
one can only be read through `pipelines.warehouse.connect`, not from a bare DuckDB shell."""

from __future__ import annotations

import contextlib

import duckdb
from duckdb import sqltypes


def _student_t_quantile(p: float | None, df: int | None) -> float | None:
    """scipy.stats.t.ppf(p, df); NULL for df < 1 (scipy is imported on the first call only)."""
    if p is None or df is None or df < 1:
        return None
    from scipy import stats

    return float(stats.t.ppf(p, df))


def register(con: duckdb.DuckDBPyConnection) -> None:
    """student_t_quantile(p DOUBLE, df BIGINT) -> DOUBLE on this connection (idempotent)."""
    with contextlib.suppress(
        duckdb.CatalogException, duckdb.InvalidInputException, duckdb.NotImplementedException
    ):
        con.create_function(
            "student_t_quantile",
            _student_t_quantile,
            [sqltypes.DOUBLE, sqltypes.BIGINT],
            sqltypes.DOUBLE,
            null_handling="special",
        )
