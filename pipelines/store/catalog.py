"""What DuckDB's own catalog says about a connection: tables, columns, views, settings, the file.

A leaf of the store: every other store module asks here instead of writing its own catalog query.
No bound parameters where a Python value would be bound only to be compared: binding one makes
DuckDB import pandas (1.2 s, measured with cProfile on opening an in-memory warehouse)."""

from __future__ import annotations

import duckdb


def schema_columns(
    con: duckdb.DuckDBPyConnection, not_null_only: bool = False
) -> list[tuple[str, str]]:
    """(table, column) of every table of the connection's current schema; `not_null_only`:
    only the columns declared NOT NULL."""
    rows = con.execute(
        "select table_name, column_name from duckdb_columns()"
        " where not internal and database_name = current_database()"
        " and schema_name = current_schema()"
        + (" and not is_nullable" if not_null_only else "")
        + " order by table_name, column_index"
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def catalog_tables(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str | None]]:
    """(table, its `comment on table` text) of every user table."""
    return con.execute(
        "select table_name, comment from duckdb_tables() where not internal"
    ).fetchall()


def catalog_columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str, bool, str | None]]:
    """(table, column, DuckDB type, nullable, `comment on column` text) of every user table's
    columns, in declared order."""
    return con.execute(
        "select table_name, column_name, data_type, is_nullable, comment"
        " from duckdb_columns() where not internal order by table_name, column_index"
    ).fetchall()


def relation_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether a table or view `name` is visible to the connection (temp views included)."""
    row = con.execute(
        "select count(*) from information_schema.tables where table_name = ?", [name]
    ).fetchone()
    return bool(row[0])


def checked_name(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """`name` quoted as an identifier, once the connection is known to hold it (CatalogException
    otherwise): table names given as arguments are checked before they reach SQL text."""
    if not relation_exists(con, name):
        raise duckdb.CatalogException(f"no table or view {name!r} in the warehouse")
    return f'"{name}"'


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """Column names of a table or view, in declared order."""
    return [row[0] for row in con.execute(f"describe {checked_name(con, table)}").fetchall()]


def database_path(con: duckdb.DuckDBPyConnection) -> str | None:
    """The file of the connection's current database (None: in memory)."""
    row = con.execute(
        "select path from duckdb_databases() where database_name = current_database()"
    ).fetchone()
    return row[0] if row else None


def setting(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """A DuckDB setting's current value, as text (e.g. memory_limit '18.8 GiB'). `name` is a
    setting's name, never user text."""
    return con.execute(f"select current_setting('{name}')").fetchone()[0]


def stored_view_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    """The names of the views stored in the connection's database (temporary ones left out)."""
    rows = con.execute(
        "select view_name from duckdb_views() where not internal and not temporary"
    ).fetchall()
    return {row[0] for row in rows}


def stored_views_signature(con: duckdb.DuckDBPyConnection, table: str) -> str | None:
    """The signature held in `table` (pipelines.store.relations.views_signature), else None."""
    if not relation_exists(con, table):
        return None
    row = con.execute(f'select signature from "{table}" limit 1').fetchone()
    return row[0] if row else None
