"""Where runs are kept: the one place a backend is chosen (`open_store`).

    store = open_store()                      # data/warehouse.duckdb, or the configured lake
    with store.session(read_only=True) as s:  # a Session: s.con and the writes (store.base)
        ...

Two backends with one interface: a DuckDB file (pipelines.store.duckdb_file) and a Parquet lake
(pipelines.store.parquet_lake, docs/lake.md). Everything below this package (schema, relation
runner, inserts, catalog lookups, named reads) is shared by both; nothing outside it asks which
backend it has."""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator

import duckdb

from pipelines import paths
from pipelines.store.base import Session, Store, StoreError
from pipelines.store.duckdb_file import FileSession, FileStore
from pipelines.store.parquet_lake import LakeSession, LakeStore

__all__ = [
    "FileSession",
    "FileStore",
    "LakeSession",
    "LakeStore",
    "Session",
    "Store",
    "StoreError",
    "open_store",
    "storage_error",
    "use_lake",
]


_PARQUET_FILE = re.compile(r"['\"](?P<path>[^'\"]+\.parquet)['\"]")


def storage_error(error: BaseException) -> StoreError | None:
    """The one-line StoreError for an error a store's files caused (a truncated or foreign
    Parquet file in a lake, a full disk), else None: the CLI prints it instead of a traceback."""
    text = str(error).splitlines()[0] if str(error) else ""
    if (isinstance(error, OSError) and error.errno == errno.ENOSPC) or "No space left" in text:
        return StoreError(f"the disk is full ({text}); free space and run again")
    if not isinstance(error, duckdb.Error):
        return None
    match = _PARQUET_FILE.search(text)
    if match and ("magic bytes" in text or "Parquet" in text or "parquet" in text):
        return StoreError(
            f"lake file {match['path']} is damaged ({text.split(': ', 1)[-1][:160]}); move it"
            " aside and re-ingest its run folder with `tracereplay ingest` to rewrite it"
        )
    return None


@contextlib.contextmanager
def use_lake(lake: str | os.PathLike[str] | None) -> Iterator[None]:
    """Inside the block, `lake` (when given) is the lake of every `open_store()` of this process
    and its subprocesses (`tracereplay --lake DIR`); None leaves the configuration as it is.
    Afterwards the variable is as it was: a `--lake` call through `pipelines.cli.main` in one
    process (the tests, a notebook) made every later call of that process use the lake."""
    before = os.environ.get(paths.LAKE_ENV)
    if lake:
        os.environ[paths.LAKE_ENV] = os.path.abspath(lake)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(paths.LAKE_ENV, None)
        else:
            os.environ[paths.LAKE_ENV] = before


def open_store(
    warehouse: str | os.PathLike[str] | None = None,
    lake: str | os.PathLike[str] | None = None,
    *,
    wait_s: float | None = None,
) -> Store:
    """The store to use: a lake when `lake` is given or configured (`tracereplay --lake`,
    $TRACEREPLAY_LAKE, `lake =` in tracereplay.toml; its views file is `warehouse` when given,
    else `<lake>/warehouse.duckdb`), else the DuckDB file `warehouse` (default
    $TRACEREPLAY_WAREHOUSE, else data/warehouse.duckdb). Opens nothing."""
    root = paths.lake_path(lake)
    if root is not None:
        explicit = warehouse or os.environ.get("TRACEREPLAY_WAREHOUSE") or None
        return LakeStore(root, warehouse=explicit, wait_s=wait_s)
    return FileStore(paths.warehouse_path(warehouse), wait_s=wait_s)
