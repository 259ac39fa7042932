"""The Parquet-lake store: the canonical tables as hive partitions, one folder per run, no shared
writer (file layout: pipelines.store.lake_layout, docs/lake.md).

Every file is written aside (`<lake>/<table>/.incoming/`, never matched by the views' globs) and
renamed into place (`os.replace`, atomic on one file system), so a reader sees the old file or the
new one, never half of one. A run is written table by table with `runs` last and deleted with
`runs` first, so a run is in `runs` only while its rows are there. Different runs (or ranks) are
different files: processes ingesting them never wait for each other.

Reads go through the lake's own DuckDB file, `<lake>/warehouse.duckdb`: views over the partitions
(and tables computed in Python, such as tau_fits). Ingest needs no view over every run: its
session is an in-memory connection that reads the stored runs from the identity catalog
(pipelines.store.lake_catalog) and one run's rows from that run's own folder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from pipelines.store import catalog, functions, lake_catalog, lake_damage, relations
from pipelines.store.base import HeldSession, Session, Store, StoreError, WriteSessions
from pipelines.store.duck import sql_path
from pipelines.store.duckdb_file import _say, check_warehouse_file, open_duckdb
from pipelines.store.insert import insert_frame
from pipelines.store.lake_layout import (
    INCOMING,
    PART,
    SCHEMA_PARTITION,
    WAREHOUSE_NAME,
    partition_dir,
    rank_file,
    runs_scan,
    view_sql,
)
from pipelines.store.schema import (
    CANONICAL_TABLES,
    QUARANTINE,
    RUN_TABLES,
    canonical_tables,
    ddl_text,
)

_PARQUET = "(format parquet, compression zstd)"
STAMP = "runs_file"
"""The catalog entry's stamp of a run's `runs` file (lake_catalog)."""


# --- files ------------------------------------------------------------------------------------


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


def _incoming(root: Path, table: str) -> Path:
    folder = Path(root) / table / INCOMING
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _copy_aside(scratch: duckdb.DuckDBPyConnection, root: Path, table: str, source: str) -> Path:
    """COPY `source` (a relation of `scratch`) to a new file in the table's .incoming folder."""
    aside = _incoming(root, table) / f"{uuid.uuid4().hex}.parquet"
    target = sql_path(aside).replace("'", "''")
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
    scratch.execute(f"drop table if exists {table}")
    scratch.execute(ddl_text(table))
    rows = insert_frame(scratch, table, frame)
    return _copy_aside(scratch, root, table, table), rows


def write_partitions(
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
        lake_catalog.refresh(root, run_id)  # after runs: the catalog follows the folders
    return counts


def _remove_others(folder: Path, keep: str) -> None:
    """Files of an earlier write of this partition (per-rank files replaced by a whole-run one)."""
    for path in folder.glob("*.parquet"):
        if path.name != keep:
            path.unlink(missing_ok=True)


def remove_whole_run_file(root: Path, table: str, run_id: str) -> None:
    """The whole-run file of one run table, before per-rank files take its place."""
    (partition_dir(root, table, run_id) / PART).unlink(missing_ok=True)


def delete_partitions(root: Path, run_id: str) -> None:
    """Remove every partition of `run_id`, its catalog entry and `runs` first."""
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


def attach_views(
    con: duckdb.DuckDBPyConnection,
    root: Path,
    tables: Iterable[str] = CANONICAL_TABLES,
    temporary: bool = False,
    damaged: Sequence[lake_damage.DamagedFile] = (),
) -> None:
    """Make `tables` of `con` views over the lake at `root` (created if absent), leaving out the
    runs and quarantine batches that hold a `damaged` file."""
    init(root)
    runs, batches = lake_damage.left_out(list(damaged))
    for table in tables:
        skipped = batches if table == QUARANTINE else runs
        con.execute(view_sql(Path(root).resolve(), table, temporary, skipped))


_reported: set[str] = set()
"""Damaged files already named on stderr by this process (a command opens the lake many times)."""


def report_damage(root: Path, damaged: Sequence[lake_damage.DamagedFile]) -> None:
    """One stderr line per damaged file, once per process: what is left out and how to repair."""
    fresh = [item for item in damaged if item.path not in _reported]
    if not fresh:
        return  # the common case: no catalog read for a lake without (new) damage
    origins = {e["run_id"]: e.get("origin") for e in lake_catalog.entries(root)}
    for item in fresh:
        _reported.add(item.path)
        where = os.path.relpath(item.path, root)
        if item.table == QUARANTINE:
            _say(
                f"lake quarantine batch {item.key} left out: {where} is damaged ({item.reason});"
                " move the file aside"
            )
            continue
        origin = origins.get(item.key)
        repair = (
            f"re-ingest {origin} with `tracereplay ingest` to rewrite it"
            if origin
            else "re-ingest its run folder with `tracereplay ingest` to rewrite it"
        )
        _say(f"lake run {item.key} left out: {where} is damaged ({item.reason}); {repair}")


# --- the store --------------------------------------------------------------------------------


class LakeSession(Session):
    """A connection that reads the lake (its views, or only the quarantine for ingest) and the
    writes, each of which touches only the files of the run it names."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        root: Path,
        read_only: bool,
        damaged: Sequence[lake_damage.DamagedFile] = (),
        runs_scanned: bool = True,
    ) -> None:
        self.con = con
        self.root = Path(root).resolve()
        self.read_only = read_only
        self.damaged = tuple(damaged)  # found when the session was opened (its views skip them)
        # False (ingest): only the quarantine was scanned; a stored run's files are checked when
        # ingest relies on that run (run_row_counts)
        self.runs_scanned = runs_scanned

    def runs_relation(self, table: str, run_ids: Sequence[str]) -> str:
        return runs_scan(self.root, table, run_ids)

    def _measured(self) -> list[dict]:
        # a run with a damaged file is not stored as far as ingest knows: re-ingest rewrites it
        broken = set(lake_damage.left_out(list(self.damaged))[0])
        return [e for e in lake_catalog.measured(self.root) if e["run_id"] not in broken]

    def stored_runs(self) -> list[tuple]:
        columns = ("run_id", "origin", "content_hash", "tags", "segmentation", "dropped_rows")
        return [(*(e[c] for c in columns), e["source"]) for e in self._measured()]

    def run_input_files(self) -> list[tuple[str, str, str]]:
        return [(e["run_id"], path, sha) for e in self._measured() for path, sha in e["files"]]

    def run_stamps(self) -> dict[str, str] | None:
        return {e["run_id"]: json.dumps(e.get(STAMP)) for e in self._measured()}

    def run_facts(self) -> pl.DataFrame:
        broken = set(lake_damage.left_out(list(self.damaged))[0])
        entries = [e for e in lake_catalog.entries(self.root) if e["run_id"] not in broken]
        return lake_catalog.facts_frame(entries)

    def run_row_counts(self, run_id: str) -> dict[str, int]:
        if not self.runs_scanned:
            damaged = lake_damage.run_damage(self.root, run_id)
            if damaged:  # ingest rewrites the run (pipelines.ingest.load: a stored file unread)
                report_damage(self.root, damaged)
                raise duckdb.IOException(f"lake run {run_id}: {damaged[0].path} is damaged")
        return super().run_row_counts(run_id)

    def not_null_columns(self) -> dict[str, list[str]]:
        # the DDL's: the lake's tables are views, which DuckDB reports nullable
        return {
            name: [c.name for c in table.columns if not c.nullable]
            for name, table in canonical_tables().items()
        }

    def write_run(
        self,
        run_id: str,
        tables: dict[str, pl.DataFrame | pl.LazyFrame],
        replaces: Iterable[str] = (),
    ) -> dict[str, int]:
        self._writable()
        counts = write_partitions(self.root, run_id, tables)
        for old in replaces:
            if old != run_id:
                delete_partitions(self.root, old)
        return counts

    def write_rank(
        self, run_id: str, rank: int, tables: dict[str, pl.DataFrame | pl.LazyFrame]
    ) -> dict[str, int]:
        """One rank's file of each table given (per-rank ingest); the run's other files stay."""
        self._writable()
        return write_partitions(self.root, run_id, tables, rank=rank)

    def replace_run_rows(
        self,
        run_id: str,
        tables: dict[str, pl.DataFrame],
        run_values: dict[str, object] | None = None,
    ) -> None:
        self._writable()
        tables = dict(tables)
        if run_values:
            row = self.run_row(run_id)
            tables["runs"] = row.with_columns(
                pl.Series(c, [v], dtype=row.schema[c]) for c, v in run_values.items()
            )
        write_partitions(self.root, run_id, tables, partial=True)

    def delete_run(self, run_id: str) -> None:
        self._writable()
        delete_partitions(self.root, run_id)

    def _append_quarantine(self, row: dict[str, object]) -> None:
        frame = pl.DataFrame([row], schema_overrides={"detail": pl.String})
        append_quarantine(self.root, frame)


class LakeStore(Store):
    """A Parquet lake folder and its views file `<lake>/warehouse.duckdb` (or `warehouse`)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        warehouse: str | os.PathLike[str] | None = None,
        wait_s: float | None = None,
    ) -> None:
        self.location = Path(root)
        self.views_file = Path(warehouse) if warehouse else self.location / WAREHOUSE_NAME
        self.warehouse_file = self.views_file
        self.wait_s = wait_s

    def exists(self) -> bool:
        return self.location.is_dir()

    def check(self) -> None:
        if self.location.exists() and not self.location.is_dir():
            raise StoreError(f"lake {self.location} exists and is not a folder")
        check_warehouse_file(self.views_file)

    def open(self, read_only: bool = False) -> LakeSession:
        if read_only and not self.exists():
            raise StoreError(f"no lake at {self.location} (run `tracereplay ingest` first)")
        damaged = lake_damage.damaged_files(self.location)
        report_damage(self.location, damaged)
        if read_only and not self.views_file.exists():
            # the lake's views file, made on first use, with the damaged runs left out
            self._open_views(read_only=False, damaged=damaged).close()
        con = self._open_views(read_only, damaged)
        return LakeSession(con, self.location, read_only, damaged)

    def _open_views(
        self, read_only: bool, damaged: Sequence[lake_damage.DamagedFile] = ()
    ) -> duckdb.DuckDBPyConnection:
        """The views file with the canonical tables as views over the lake (stored when
        writable and stale; temporary when read-only) and the derived views over them, the
        runs with a `damaged` file left out."""
        check_warehouse_file(self.views_file)
        if not read_only:
            self.views_file.parent.mkdir(parents=True, exist_ok=True)
        con = open_duckdb(self.views_file, read_only, self.wait_s, _say)
        try:
            con.execute("set parquet_metadata_cache = true")
            functions.register(con)
            if read_only:
                attach_views(con, self.location, temporary=True, damaged=damaged)
                relations.build(con, temporary=True)
                return con
            held = sorted({t for t, _ in catalog.catalog_tables(con)} & set(CANONICAL_TABLES))
            if held:
                raise StoreError(
                    f"the warehouse file {self.views_file} holds canonical tables"
                    f" ({', '.join(held)}); a lake's views need a warehouse file of their own"
                    " (drop --warehouse: the lake keeps one)"
                )
            signature = relations.views_signature(self.location)
            if damaged:  # the stored views leave these out; a repaired lake gets them back
                left = repr(lake_damage.left_out(list(damaged)))
                signature = hashlib.sha256(f"{signature}\n{left}".encode()).hexdigest()
            init(self.location)
            if not relations.views_current(con, signature):
                # the stored views read the lake's globs at query time: a new run needs none
                attach_views(con, self.location, damaged=damaged)
                relations.build(con)
                relations.store_views_signature(con, signature)
        except Exception:
            con.close()
            raise
        return con

    def open_for_ingest(self, views: bool = False) -> LakeSession:
        """An in-memory connection reading the lake (no file lock: any number of processes).
        views=False: no view over the run tables, whose creation lists every run's folder; the
        session reads the quarantine view, one run through its own folder and the stored runs
        through the identity catalog, and the damage scan covers the quarantine only (a stored
        run's files are checked when ingest relies on it: O(new files), not O(lake))."""
        con = duckdb.connect()
        try:
            # footers of the many small partition files read once per connection; DuckDB checks
            # each file's modification time before using a cached footer
            con.execute("set parquet_metadata_cache = true")
            damaged = lake_damage.damaged_files(self.location, None if views else (QUARANTINE,))
            report_damage(self.location, damaged)
            tables = CANONICAL_TABLES if views else (QUARANTINE,)
            attach_views(con, self.location, tables, True, damaged)
            functions.register(con)
        except Exception:
            con.close()
            raise
        return LakeSession(con, self.location, False, damaged, runs_scanned=views)

    def open_runs(self) -> LakeSession:
        return self.open_for_ingest(views=True)

    @contextmanager
    def writer(self) -> Iterator[WriteSessions]:
        # a lake has no lock to release between runs: one connection for the whole call
        session = self.open_for_ingest()
        try:
            yield HeldSession(session)
        finally:
            session.close()
