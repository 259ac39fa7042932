"""Scalar functions the SQL files under sql/ may call, registered on every warehouse connection
before the derived views are built (pipelines.store.relations.build). Keep them few: a view that
uses one can only be read through a store's session (pipelines.store), not from a bare DuckDB
shell."""

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


# One op, one name (docs/metrics.md, "Op names"): HCCL ops `hcom_<op>__<group hash>_<index>[_<n>]`
# become `hcom_<op>`, `atomic_memset-<ids>` becomes `atomic_memset`; other names are kept (a
# trailing number is sometimes part of the op: MatMulV2).
OP_NAME_MACRO = (
    "create or replace temp macro op_name(name) as case"
    " when regexp_matches(name, '^hcom_[A-Za-z0-9]+__')"
    " then regexp_extract(name, '^(hcom_[A-Za-z0-9]+)__', 1)"
    " when regexp_matches(name, '^atomic_memset-') then 'atomic_memset'"
    " else name end"
)


def register(con: duckdb.DuckDBPyConnection) -> None:
    """On this connection (idempotent): student_t_quantile(p DOUBLE, df BIGINT) -> DOUBLE and
    the macro op_name(name) -> the normalised op name."""
    con.execute(OP_NAME_MACRO)
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
