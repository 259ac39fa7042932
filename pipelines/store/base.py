"""The store's one interface: a `Store` opens `Session`s; a session is a DuckDB connection that
shows the canonical tables and derived views, plus the writes and run lookups whose form depends
on where the rows live. Two implementations: pipelines.store.duckdb_file (one DuckDB file) and
pipelines.store.parquet_lake (a folder of Parquet partitions, docs/lake.md).

Readers take `session.con` and the named reads of pipelines.store.queries; only the methods here
differ by backend, so no code outside pipelines/store asks which backend it has."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

import duckdb
import polars as pl

from pipelines.paths import stored_path
from pipelines.store import lake_catalog, queries


class StoreError(Exception):
    """The store cannot be used (not a DuckDB file, locked for too long, absent, damaged)."""


class Session(ABC):
    """One open connection to a store and the writes it allows. Close it (or use it in a `with`
    block); a read-only session refuses writes."""

    con: duckdb.DuckDBPyConnection
    read_only: bool
    owns_connection: bool = True

    # --- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        if self.owns_connection:
            self.con.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __getattr__(self, name: str):
        """The connection's methods (execute, sql, register ...), so a session stands wherever
        a DuckDB connection is read from."""
        if name == "con":
            raise AttributeError(name)
        return getattr(self.con, name)

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError("this store was opened read-only")

    # --- run lookups that depend on where rows live -------------------------------------------

    @abstractmethod
    def runs_relation(self, table: str, run_ids: Sequence[str]) -> str:
        """SQL of a relation holding the rows of `run_ids` in run table `table` (reading only
        those runs' data where the backend can)."""

    @abstractmethod
    def stored_runs(self) -> list[tuple]:
        """queries.STORED_RUN_COLUMNS of every measured run (replays excluded)."""

    @abstractmethod
    def run_input_files(self) -> list[tuple[str, str, str]]:
        """(run_id, path, sha256) of every measured run's input files."""

    @abstractmethod
    def run_stamps(self) -> dict[str, str] | None:
        """run_id -> a stamp that changes when the run's `runs` row may have changed, for
        backends where reading every `runs` row is O(history) (a lake); None where one read of
        `runs` is cheap (a DuckDB file)."""

    def run_facts(self) -> pl.DataFrame:
        """run_id and lake_catalog.FACT_COLUMNS (the configuration, collected_at, replay_of) of
        every run the `runs` table shows, by run_id: a lake answers from its identity catalog
        (no Parquet file opened)."""
        return queries.run_columns(self.con, None, lake_catalog.FACT_COLUMNS)

    def run_ids_at_origin(self, origin: str) -> list[str]:
        """Measured runs (not replays) read from exactly `origin`."""
        return sorted(row[0] for row in self.stored_runs() if row[1] == origin)

    def run_row(self, run_id: str) -> pl.DataFrame:
        """The `runs` row of `run_id` (empty frame when there is none)."""
        return queries.run_row(self.con, run_id, self.runs_relation("runs", [run_id]))

    def run_row_counts(self, run_id: str) -> dict[str, int]:
        """Rows of one run in each of queries.STORED_RUN_COUNTED, and `derived_slices`."""
        relations = {t: self.runs_relation(t, [run_id]) for t in queries.STORED_RUN_COUNTED}
        counts = queries.run_row_counts(self.con, run_id, relations)
        return counts | {"derived_slices": self.derived_slice_count(run_id)}

    def derived_slice_count(self, run_id: str) -> int:
        """Slices of one run its reader derived (queries.derived_slice_count)."""
        return queries.derived_slice_count(self.con, self.runs_relation("slices", [run_id]))

    def rows_of_runs(self, table: str, run_ids: Sequence[str]) -> pl.DataFrame:
        """Every row of `run_ids` in run table `table`."""
        return queries.rows_of(self.con, self.runs_relation(table, run_ids))

    # --- writes -------------------------------------------------------------------------------

    @abstractmethod
    def write_run(
        self,
        run_id: str,
        tables: dict[str, pl.DataFrame | pl.LazyFrame],
        replaces: Iterable[str] = (),
    ) -> dict[str, int]:
        """Replace one run's rows (and remove the runs in `replaces`) so that a reader sees the
        old run or the new one, never a mix; returns rows written per table."""

    @abstractmethod
    def replace_run_rows(
        self,
        run_id: str,
        tables: dict[str, pl.DataFrame],
        run_values: dict[str, object] | None = None,
    ) -> None:
        """Replace the rows of one run in the given tables only, and set `run_values` (column ->
        value) on its `runs` row, together."""

    @abstractmethod
    def delete_run(self, run_id: str) -> None:
        """Remove every row of one run."""

    @abstractmethod
    def _append_quarantine(self, row: dict[str, object]) -> None:
        """Add one quarantine row (columns of sql/schema/quarantine.sql)."""

    def record_quarantine(
        self, path: str, reason: str, detail: str, content_hash: str | None = None
    ) -> None:
        """Add a quarantine row unless the same (path, reason, content) is already there."""
        self._writable()
        # a path with bytes that are not UTF-8 (a str with surrogates) cannot be bound
        path, detail = (stored_path(text) for text in (path, detail))
        if queries.quarantine_has(self.con, path, reason, content_hash):
            return
        seen_at = datetime.now(UTC).replace(tzinfo=None)
        self._append_quarantine(
            {
                "path": path,
                "reason": reason,
                "detail": detail,
                "content_hash": content_hash,
                "seen_at": seen_at,
            }
        )

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction on this session's connection: committed, or rolled back on any
        exception."""
        self._writable()
        self.con.execute("begin transaction")
        try:
            yield
            self.con.execute("commit")
        except BaseException:
            self.con.execute("rollback")
            raise

    def replace_table(self, table: str, frame: pl.DataFrame) -> None:
        """Store a frame computed in Python (tau_fits ...) as table `table`, replacing it: a
        table of the DuckDB file in both backends (a lake keeps them in its views file)."""
        with self.transaction():
            self.con.execute(f'drop table if exists "{table}"')
            self.con.from_arrow(frame.to_arrow()).create(table)

    @abstractmethod
    def not_null_columns(self) -> dict[str, list[str]]:
        """Columns each canonical table refuses NULL in, as the store enforces them."""


class Store(ABC):
    """Where runs are kept. `open` gives a session; `writer` gives sessions for a sequence of
    writes under the store's own locking policy."""

    location: Path
    """The file or folder the store is."""
    warehouse_file: Path
    """The DuckDB file readers open (the store itself, or a lake's views file)."""

    @abstractmethod
    def open(self, read_only: bool = False) -> Session:
        """An open session (the caller closes it). StoreError when the store cannot be used;
        a read-only open of a store that does not exist is a StoreError, never a new store."""

    @abstractmethod
    def check(self) -> None:
        """StoreError when the store's path cannot be used (before any work is done)."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether there is something to read."""

    def open_runs(self) -> Session:
        """A writable session for run rows only (chunks, reruns), with every table readable;
        unlike `open`, a store that keeps other tables in a file of their own (a lake) does not
        hold that file."""
        return self.open()

    @contextmanager
    def session(self, read_only: bool = False) -> Iterator[Session]:
        """`open` for the block."""
        session = self.open(read_only=read_only)
        try:
            yield session
        finally:
            session.close()

    @contextmanager
    def writer(self) -> Iterator[WriteSessions]:
        """Sessions for a run of writes (an ingest): by default one session held throughout;
        a store whose writers exclude each other (a DuckDB file) opens one per write instead."""
        with self.session() as session:
            yield HeldSession(session)


class WriteSessions(ABC):
    """Sessions for one write at a time (Store.writer)."""

    @abstractmethod
    def open(self) -> AbstractContextManager[Session]:
        """A session for one write."""


class HeldSession(WriteSessions):
    """Every write through one session opened by the caller."""

    def __init__(self, session: Session) -> None:
        self.held = session

    @contextmanager
    def open(self) -> Iterator[Session]:
        yield self.held
