"""The DuckDB side of the checks: the runs to check, each custom expectation's query counted
and sampled in the warehouse, and the batches the GX suites validate.

A custom query returns only the rows that break its expectation, and only the first
`sample_rows` of them leave DuckDB, with the total count. A GX suite's batch leaves DuckDB as a
pandas frame of the columns its rules read, a few runs at a time (`batches_by_run`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb

from pipelines.paths import SQL_DIR
from pipelines.quality.check_catalog import SCHEMA, Expectation
from pipelines.store.schema import CANONICAL_TABLES, RUN_TABLES, declared_columns

if TYPE_CHECKING:
    import pandas as pd

SAMPLE_ROWS = 5


@dataclass(frozen=True)
class Probe:
    """What one expectation's query found: how many rows break it, and the first few."""

    expectation: Expectation
    failing: int
    columns: tuple[str, ...] = ()
    examples: tuple[tuple[object, ...], ...] = field(default=())


def select_runs(con: duckdb.DuckDBPyConnection, run_ids: list[str] | None) -> int:
    """Fill the temporary table `checked_runs` the queries filter on: the given runs, or (None)
    every run id found in any run table, orphans included. Returns how many."""
    con.execute("create or replace temp table checked_runs (run_id varchar)")
    if run_ids is None:
        present = {r[0] for r in con.execute("show tables").fetchall()}
        parts = [f"select run_id from {t}" for t in RUN_TABLES if t in present]
        if parts:
            con.execute(f"insert into checked_runs {' union '.join(parts)}")
    elif run_ids:
        con.execute("insert into checked_runs select unnest(?)", [run_ids])
    return con.execute("select count(*) from checked_runs").fetchone()[0]


def _schema_query(con: duckdb.DuckDBPyConnection, table: str) -> tuple[str, list[object]]:
    declared = declared_columns(table)
    values = ", ".join("(?, ?)" for _ in declared)
    params: list[object] = [x for pair in declared for x in pair]
    sql = f"""
        with declared(column_name, expected_type) as (values {values}),
        actual as (
            select column_name, data_type as actual_type
            from information_schema.columns
            where table_schema = current_schema() and table_name = ?
        )
        select d.column_name, d.expected_type, coalesce(a.actual_type, 'missing') as actual_type
        from declared d left join actual a using (column_name)
        where a.actual_type is distinct from d.expected_type
        order by d.column_name
    """
    return sql, [*params, table]


def quality_sql(item: Expectation) -> str:
    """The query of sql/quality/<table>/<name>.sql (the rows that break the expectation)."""
    return (SQL_DIR / "quality" / item.table / f"{item.name}.sql").read_text()


def probe(
    con: duckdb.DuckDBPyConnection, item: Expectation, sample_rows: int = SAMPLE_ROWS
) -> Probe:
    """Run one expectation's query (checked_runs must be filled: select_runs)."""
    if item.name == SCHEMA:
        sql, params = _schema_query(con, item.table)
    else:
        sql, params = quality_sql(item), []
    try:
        cursor = con.execute(
            f"select count(*) over () as failing_rows, * from ({sql}) limit {int(sample_rows)}",
            params,
        )
    except (duckdb.CatalogException, duckdb.BinderException) as exc:
        # a table or column the query needs is missing: the schema expectation names it
        return Probe(item, 1, ("error",), ((str(exc).splitlines()[0],),))
    columns = tuple(d[0] for d in cursor.description)
    rows = cursor.fetchall()
    failing = rows[0][0] if rows else 0
    return Probe(item, failing, columns[1:], tuple(tuple(r[1:]) for r in rows))


def batches_by_run(
    con: duckdb.DuckDBPyConnection, table: str, batch_rows: int
) -> list[list[str] | None]:
    """The checked runs that have rows in `table`, packed in order into groups of at most
    `batch_rows` rows (a run larger than that is a group of its own); [None] (one batch of every
    checked run) when none has rows."""
    if table not in CANONICAL_TABLES:
        raise ValueError(f"batch_by_run names {table!r}, not a canonical table")
    sizes = con.execute(
        f"select run_id, count(*) from {table}"
        " where run_id in (select checked_runs.run_id from checked_runs)"
        " group by run_id order by run_id"
    ).fetchall()
    groups: list[list[str] | None] = []
    current: list[str] = []
    rows = 0
    for run_id, n in sizes:
        if current and rows + n > batch_rows:
            groups.append(current)
            current, rows = [], 0
        current.append(run_id)
        rows += n
    if current:
        groups.append(current)
    return groups or [None]


@contextmanager
def restrict_checked_runs(
    con: duckdb.DuckDBPyConnection, run_ids: list[str] | None
) -> Iterator[None]:
    """Within the block, `checked_runs` holds only `run_ids` (None: left as it is)."""
    if run_ids is None:
        yield
        return
    con.execute("create or replace temp table checked_runs_all (run_id varchar)")
    con.execute("insert into checked_runs_all select run_id from checked_runs")
    con.execute("delete from checked_runs")
    con.execute("insert into checked_runs select unnest(?)", [run_ids])
    try:
        yield
    finally:
        con.execute("delete from checked_runs")
        con.execute("insert into checked_runs select run_id from checked_runs_all")


def fetch_batch(con: duckdb.DuckDBPyConnection, sql: str) -> pd.DataFrame:
    """One GX batch: the rows of a suite's batch query (sql/quality/gx/<suite>.sql)."""
    return con.execute(sql).df()


def row_hashes_by_run(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[str, int, str, int]]:
    """Per run of a batch query's rows (`sql`, which has a run_id column): the row count, the sum
    of DuckDB's row hashes (as text: a hugeint) and their XOR: a fingerprint of the run's rows that
    does not depend on their order."""
    return con.execute(
        "select b.run_id, count(*), sum(hash(b)::hugeint)::varchar, bit_xor(hash(b))"
        f" from ({sql}) b group by b.run_id"
    ).fetchall()
