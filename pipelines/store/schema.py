"""The canonical tables as sql/schema/<table>.sql declares them: the one source of their columns,
types and descriptions (the DDL's `comment on table` / `comment on column` statements).

The DDL is run in a scratch in-memory DuckDB and read back from DuckDB's catalog
(`duckdb_tables()`, `duckdb_columns()`), so the Polars frame schemas (`pipelines.ingest.frames
.SCHEMAS`) and the Dagster table descriptions are derived from what the warehouse will really hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import duckdb

from pipelines.paths import SQL_DIR
from pipelines.store import catalog

if TYPE_CHECKING:
    import polars as pl

CANONICAL_TABLES = (
    "runs",
    "run_inputs",
    "ranks",
    "slices",
    "kernels",
    "comm_ops",
    "step_breakdown",
    "chunks",
    "latency_points",
    "quarantine",
)
"""Canonical tables in dependency order; each has sql/schema/<name>.sql. `latency_points` holds
operator-latency tables (docs/latency_tables.md), keyed like a run table by the table's id."""
QUARANTINE = "quarantine"
RUN_TABLES = tuple(t for t in CANONICAL_TABLES if t != QUARANTINE)
"""Tables whose rows belong to one run (deleted and rewritten together on re-ingest)."""


@dataclass(frozen=True)
class Column:
    name: str
    duckdb_type: str  # as DuckDB reports it: VARCHAR, BIGINT, INTEGER, BOOLEAN, TIMESTAMP ...
    nullable: bool
    description: str | None


@dataclass(frozen=True)
class Table:
    name: str
    description: str | None
    columns: tuple[Column, ...]


def ddl_text(table: str) -> str:
    """Text of sql/schema/<table>.sql."""
    return (SQL_DIR / "schema" / f"{table}.sql").read_text()


@cache
def canonical_tables() -> dict[str, Table]:
    """Every canonical table as its DDL declares it, in CANONICAL_TABLES order."""
    scratch = duckdb.connect()
    try:
        for table in CANONICAL_TABLES:
            scratch.execute(ddl_text(table))
        tables = dict(catalog.catalog_tables(scratch))
        columns = catalog.catalog_columns(scratch)
    finally:
        scratch.close()
    by_table: dict[str, list[Column]] = {}
    for table, name, kind, nullable, comment in columns:
        by_table.setdefault(table, []).append(Column(name, kind, bool(nullable), comment))
    return {t: Table(t, tables[t], tuple(by_table[t])) for t in CANONICAL_TABLES}


def declared_columns(table: str) -> tuple[tuple[str, str], ...]:
    """(name, type) of each column sql/schema/<table>.sql declares."""
    return tuple((c.name, c.duckdb_type) for c in canonical_tables()[table].columns)


def table_description(table: str) -> str:
    """The table's `comment on table` text (every canonical table has one)."""
    description = canonical_tables()[table].description
    if not description:
        raise ValueError(f"sql/schema/{table}.sql has no `comment on table {table}`")
    return description


def column_descriptions(table: str) -> dict[str, str]:
    """Column name -> its `comment on column` text, for the columns that have one."""
    return {c.name: c.description for c in canonical_tables()[table].columns if c.description}


_POLARS_TYPES = {
    "VARCHAR": "String",
    "BIGINT": "Int64",
    "INTEGER": "Int32",
    "BOOLEAN": "Boolean",
    "DOUBLE": "Float64",
}


def polars_schema(table: str) -> dict[str, pl.DataType]:
    """Column name -> Polars dtype of the table's DDL (TIMESTAMP: microsecond Datetime)."""
    import polars as pl

    schema: dict[str, pl.DataType] = {}
    for column in canonical_tables()[table].columns:
        if column.duckdb_type == "TIMESTAMP":
            schema[column.name] = pl.Datetime("us")
        elif column.duckdb_type in _POLARS_TYPES:
            schema[column.name] = getattr(pl, _POLARS_TYPES[column.duckdb_type])
        else:
            raise ValueError(f"{table}.{column.name}: no Polars dtype for {column.duckdb_type}")
    return schema
