"""Names of the Parquet lake's files and the SQL that reads them (docs/lake.md): a leaf shared by
the lake store and its identity catalog.

    <lake>/<table>/run_id=<id>/part.parquet             one run's rows of a run table
    <lake>/<table>/run_id=<id>/part-rank<r>.parquet     ... or one file per rank (per-rank ingest)
    <lake>/<table>/run_id=~schema/part.parquet          zero rows: the table's columns and types
    <lake>/quarantine/batch=<time>-<pid>-<uuid>/part.parquet   one file per quarantine write
    <lake>/warehouse.duckdb                             the views (and tau_fits) of the lake
    <lake>/_catalog/run_id=<id>.json                    a run's identity entry (lake_catalog)
    <lake>/_catalog/checked/<table>.json               files found whole, by stat (lake_damage)

The rank is a file name, not a `rank=` folder: DuckDB (1.5.6) refuses globs whose files sit at
different partition depths ("Hive partition mismatch") and a hive key replaces the file's own
column, turning the INTEGER `rank` into VARCHAR (both measured; docs/lake.md). The run id is
percent-encoded in its folder name; DuckDB decodes it back."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

from pipelines.store.duck import lasting_sql_path
from pipelines.store.schema import QUARANTINE, canonical_tables

PART = "part.parquet"
SCHEMA_PARTITION = "run_id=~schema"
INCOMING = ".incoming"
WAREHOUSE_NAME = "warehouse.duckdb"
CATALOG = "_catalog"
"""The lake's catalog folder: one identity entry per run (lake_catalog) and the record of the
partition files found whole (lake_damage)."""


def partition_dir(root: Path, table: str, run_id: str) -> Path:
    """<lake>/<table>/run_id=<percent-encoded id>."""
    return Path(root) / table / f"run_id={quote(run_id, safe='')}"


def rank_file(rank: int) -> str:
    """File name of one rank's rows inside a run partition."""
    return f"part-rank{int(rank):05d}.parquet"


def _columns(table: str) -> str:
    return ", ".join(f'"{c.name}"' for c in canonical_tables()[table].columns)


def table_glob(root: Path, table: str) -> str:
    """The table's partition files; the root goes through duck.lasting_sql_path (a folder whose
    name holds glob characters is read through a plain-named link that stored views can keep),
    the pattern is ours."""
    key = "batch" if table == QUARANTINE else "run_id"
    return f"{lasting_sql_path(root)}/{table}/{key}=*/*.parquet"


def view_sql(root: Path, table: str, temporary: bool = False, left_out: Sequence[str] = ()) -> str:
    """`create view <table>` over the table's partitions, columns in the DDL's order (the
    quarantine's `batch` key is not one of them). `left_out`: partition keys (run ids, or
    quarantine batches) the view skips; DuckDB prunes their files by the hive key unopened."""
    key = "batch" if table == QUARANTINE else "run_id"
    glob = table_glob(root, table).replace("'", "''")
    # the zero-row schema file first: DuckDB binds the view's columns to the first file it
    # reads, so a foreign file that sorts first is reported by name at query time instead
    # of breaking the view (it also matches the glob: zero rows twice add nothing)
    schema = f"{lasting_sql_path(root)}/{table}/{key}=~schema/{PART}".replace("'", "''")
    scope = "temp " if temporary else ""
    skipped = ", ".join("'" + k.replace("'", "''") + "'" for k in left_out)
    where = f" where {key} not in ({skipped})" if left_out else ""
    return (
        f"create or replace {scope}view {table} as select {_columns(table)} from"
        f" read_parquet(['{schema}', '{glob}'], hive_partitioning = true,"
        f" hive_types = {{'{key}': 'VARCHAR'}}){where}"
    )


def runs_scan(root: Path, table: str, run_ids: Sequence[str]) -> str:
    """A relation (SQL) of the rows of `run_ids` in a run table, columns as its view has them,
    opening only those runs' folders (the table's zero-row schema file when they have none)."""
    base = lasting_sql_path(root)  # the root as in table_glob; the rest is ours
    files = []
    for run_id in run_ids:
        folder = partition_dir(root, table, run_id)
        names = sorted(p.name for p in folder.glob("*.parquet"))
        files.extend(f"{base}/{table}/{folder.name}/{n}" for n in names)
    files = files or [f"{base}/{table}/{SCHEMA_PARTITION}/{PART}"]
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    return (
        f"(select {_columns(table)} from read_parquet([{listed}], hive_partitioning = true,"
        " hive_types = {'run_id': 'VARCHAR'}))"
    )
