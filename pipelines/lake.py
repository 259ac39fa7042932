"""The Parquet lake: the canonical tables as hive partitions, one folder per run, no shared writer.

Layout (docs/lake.md)::

    <lake>/<table>/run_id=<id>/part.parquet             one run's rows of a run table
    <lake>/<table>/run_id=<id>/part-rank<r>.parquet     ... or one file per rank (per-rank ingest)
    <lake>/<table>/run_id=~schema/part.parquet          zero rows: the table's columns and types
    <lake>/quarantine/batch=<time>-<pid>-<uuid>/part.parquet   one file per quarantine write
    <lake>/warehouse.duckdb                             the views (and tau_fits) of the lake

Every file is written aside (`<lake>/<table>/.incoming/`, never matched by the views' globs) and
renamed into place (`os.replace`, atomic on one file system), so a reader sees the old file or the
new one, never half of one. A run is written table by table with `runs` last and deleted with
`runs` first, so a run is in `runs` only while its rows are there. Different runs (or ranks) are
different files: processes ingesting them never wait for each other.

The rank is a file name, not a `rank=` folder: DuckDB (1.5.6) refuses globs whose files sit at
different partition depths ("Hive partition mismatch") and a hive key replaces the file's own
column, turning the INTEGER `rank` into VARCHAR (both measured; docs/lake.md). The run id is
percent-encoded in its folder name; DuckDB decodes it back.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import duckdb
import polars as pl

from pipelines.canonical_schema import CANONICAL_TABLES, canonical_tables, ddl_text
from pipelines.ingest import duck

QUARANTINE = "quarantine"
RUN_TABLES = tuple(t for t in CANONICAL_TABLES if t != QUARANTINE)
PART = "part.parquet"
SCHEMA_PARTITION = "run_id=~schema"
INCOMING = ".incoming"
WAREHOUSE_NAME = "warehouse.duckdb"
MARKER_VIEW = "tracereplay_lake"  # a temp view naming the lake a connection reads
_PARQUET = "(format parquet, compression zstd)"


def partition_dir(root: Path, table: str, run_id: str) -> Path:
    """<lake>/<table>/run_id=<percent-encoded id>."""
    return Path(root) / table / f"run_id={quote(run_id, safe='')}"


def rank_file(rank: int) -> str:
    """File name of one rank's rows inside a run partition."""
    return f"part-rank{int(rank):05d}.parquet"


def _glob(root: Path, table: str) -> str:
    """The table's partition files; the root goes through duck.sql_path (a folder whose name
    holds glob characters is read through a plain-named link), the pattern is ours."""
    key = "batch" if table == QUARANTINE else "run_id"
    return f"{duck.sql_path(root)}/{table}/{key}=*/*.parquet"


def view_sql(root: Path, table: str, temporary: bool = False) -> str:
    """`create view <table>` over the table's partitions, columns in the DDL's order (the
    quarantine's `batch` key is not one of them)."""
    columns = ", ".join(f'"{c.name}"' for c in canonical_tables()[table].columns)
    key = "batch" if table == QUARANTINE else "run_id"
    glob = _glob(root, table).replace("'", "''")
    scope = "temp " if temporary else ""
    return (
        f"create or replace {scope}view {table} as select {columns} from read_parquet('{glob}',"
        f" hive_partitioning = true, hive_types = {{'{key}': 'VARCHAR'}})"
    )


def init(root: Path) -> None:
    """Create the lake's folders and each table's zero-row schema file (idempotent)."""
    root = Path(root)
    scratch = duckdb.connect()
    try:
        for table in CANONICAL_TABLES:
            key_dir = "batch=~schema" if table == QUARANTINE else SCHEMA_PARTITION
            target = root / table / key_dir / PART
            if target.exists():
                continue
            scratch.execute(ddl_text(table))
            _publish(_copy_aside(scratch, root, table, table), target)
    finally:
        scratch.close()


def attach(con: duckdb.DuckDBPyConnection, root: Path, temporary: bool = False) -> None:
    """Make the canonical tables of `con` views over the lake at `root` (created if absent)."""
    _attach_marker(con, root, CANONICAL_TABLES, temporary)


def mark(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Name the lake at `root` on `con` (stored_root) without (re)making its views."""
    _attach_marker(con, root, ())


def _attach_marker(
    con: duckdb.DuckDBPyConnection, root: Path, tables: tuple[str, ...], temporary: bool = True
) -> None:
    """Views over `tables` and the temp view naming the lake (stored_root)."""
    root = Path(root).resolve()
    init(root)
    for table in tables:
        con.execute(view_sql(root, table, temporary))
    literal = str(root).replace("'", "''")
    con.execute(f"create or replace temp view {MARKER_VIEW} as select '{literal}' as root")


@contextmanager
def session(root: Path, views: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory connection reading the lake (no file lock: any number of processes).

    views=False (ingest): no view over the run tables, whose creation lists every run's folder;
    the connection knows its lake (stored_root), reads the quarantine view, reads one run through
    `run_scan` and the stored runs through pipelines.lake_catalog."""
    from pipelines import sql_functions

    con = duckdb.connect()
    try:
        # footers of the many small partition files read once per connection; DuckDB checks
        # each file's modification time before using a cached footer
        con.execute("set parquet_metadata_cache = true")
        if views:
            attach(con, root, temporary=True)
        else:
            _attach_marker(con, root, (QUARANTINE,))
        sql_functions.register(con)
        yield con
    finally:
        con.close()


def run_scan(root: Path, table: str, run_id: str) -> str:
    """A relation (SQL) of one run's rows of a run table, columns as its view has them, opening
    only that run's folder (the table's zero-row schema file when the run has none)."""
    folder = partition_dir(root, table, run_id)
    names = sorted(p.name for p in folder.glob("*.parquet"))
    # the root through duck.sql_path (as in _glob), the hive folder and file names are ours
    base = duck.sql_path(root)
    files = [f"{base}/{table}/{folder.name}/{n}" for n in names]
    files = files or [f"{base}/{table}/{SCHEMA_PARTITION}/{PART}"]
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    columns = ", ".join(f'"{c.name}"' for c in canonical_tables()[table].columns)
    return (
        f"(select {columns} from read_parquet([{listed}], hive_partitioning = true,"
        " hive_types = {'run_id': 'VARCHAR'}))"
    )


def _incoming(root: Path, table: str) -> Path:
    folder = Path(root) / table / INCOMING
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _copy_aside(scratch: duckdb.DuckDBPyConnection, root: Path, table: str, source: str) -> Path:
    """COPY `source` (a relation of `scratch`) to a new file in the table's .incoming folder."""
    aside = _incoming(root, table) / f"{uuid.uuid4().hex}.parquet"
    target = duck.sql_path(aside).replace("'", "''")
    scratch.execute(f"copy {source} to '{target}' {_PARQUET}")
    return aside


def _publish(aside: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(aside, target)


@contextmanager
def _scratch(root: Path, spill: bool) -> Iterator[duckdb.DuckDBPyConnection]:
    """A DuckDB connection to type rows by the DDL in; a file one (DuckDB can spill it) when a
    streamed table may be larger than memory."""
    path = _incoming(root, RUN_TABLES[0]) / f"{uuid.uuid4().hex}.duckdb" if spill else None
    scratch = duckdb.connect(str(path) if path else ":memory:")
    try:
        yield scratch
    finally:
        scratch.close()
        if path is not None:
            path.unlink(missing_ok=True)
            Path(f"{path}.wal").unlink(missing_ok=True)


def _conformed_aside(
    scratch: duckdb.DuckDBPyConnection, root: Path, table: str, frame: pl.DataFrame | pl.LazyFrame
) -> tuple[Path, int]:
    """The frame typed and checked by the table's DDL (NOT NULL included) in `scratch`, copied
    to a Parquet file aside; (that file, rows)."""
    from pipelines import warehouse

    scratch.execute(f"drop table if exists {table}")
    scratch.execute(ddl_text(table))
    rows = warehouse.insert_frame(scratch, table, frame)
    return _copy_aside(scratch, root, table, table), rows


def write_run(
    root: Path,
    run_id: str,
    tables: Mapping[str, pl.DataFrame | pl.LazyFrame | None],
    rank: int | None = None,
    partial: bool = False,
) -> dict[str, int]:
    """Replace the partitions of `run_id` for every run table (absent or None: empty), `runs`
    last; `partial`: only the tables given. With `rank`, write that rank's file of each table
    given (per-rank ingest) and leave the run's other files alone.

    Every file is written aside first; nothing is renamed unless all were written."""
    root = Path(root)
    counts: dict[str, int] = {}
    staged: list[tuple[str, Path, Path]] = []
    name = PART if rank is None else rank_file(rank)
    spill = any(isinstance(f, pl.LazyFrame) for f in tables.values())
    try:
        with _scratch(root, spill) as scratch:
            for table in RUN_TABLES:
                frame = tables.get(table)
                if (rank is not None or partial) and table not in tables:
                    continue
                if frame is None:
                    frame = pl.DataFrame()
                aside, counts[table] = _conformed_aside(scratch, root, table, frame)
                staged.append((table, aside, partition_dir(root, table, run_id) / name))
    except BaseException:
        for _, aside, _ in staged:
            aside.unlink(missing_ok=True)
        raise
    staged.sort(key=lambda item: item[0] == "runs")  # runs last
    for _, aside, target in staged:
        _publish(aside, target)
        if rank is None:
            _remove_others(target.parent, keep=target.name)
    if rank is None and {"runs", "run_inputs"} & {t for t, _, _ in staged}:
        from pipelines import lake_catalog

        lake_catalog.refresh(root, run_id)  # after runs: the catalog follows the folders
    return counts


def _remove_others(folder: Path, keep: str) -> None:
    """Files of an earlier write of this partition (per-rank files replaced by a whole-run one)."""
    for path in folder.glob("*.parquet"):
        if path.name != keep:
            path.unlink(missing_ok=True)


def delete_run(root: Path, run_id: str) -> None:
    """Remove every partition of `run_id`, its catalog entry and `runs` first."""
    from pipelines import lake_catalog

    lake_catalog.remove(root, run_id)
    for table in ("runs", *(t for t in RUN_TABLES if t != "runs")):
        folder = partition_dir(root, table, run_id)
        if folder.is_dir():
            # renamed aside first, so the view never lists a half-removed folder
            gone = _incoming(root, table) / f"gone-{uuid.uuid4().hex}"
            os.replace(folder, gone)
            shutil.rmtree(gone, ignore_errors=True)


def append_quarantine(root: Path, frame: pl.DataFrame) -> None:
    """Add quarantine rows as a new batch file of their own (no other writer touches it)."""
    if frame.is_empty():
        return
    with _scratch(root, spill=False) as scratch:
        aside, _ = _conformed_aside(scratch, root, QUARANTINE, frame)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    batch = f"batch={stamp}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    _publish(aside, Path(root) / QUARANTINE / batch / PART)


def stored_root(con: duckdb.DuckDBPyConnection) -> Path | None:
    """The lake a connection reads (attach), else None (a file warehouse)."""
    from pipelines import warehouse_queries

    root = warehouse_queries.lake_root(con)
    return Path(root) if root else None
