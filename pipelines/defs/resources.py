"""Resources of the code location: the store (a DuckDB warehouse file or a Parquet lake, under
the resource key `warehouse`) and the raw folder runs are dropped into.

Both resolve their path when used, so an empty config means $TRACEREPLAY_WAREHOUSE or
data/warehouse.duckdb, and $TRACEREPLAY_RAW_DIR or data/raw (pipelines/paths.py).

The default executor is the in-process one: a step subprocess costs 3-4 s of start-up, more than
the work of one partition (docs/stack.md §2). Every asset that writes the warehouse runs in
the concurrency pool `duckdb_write`, because a DuckDB file accepts one writer process at a time;
limit the pool to 1 in the instance (`dagster instance concurrency set duckdb_write 1`, or
`concurrency: {pools: {default_limit: 1}}` in dagster.yaml) when several runs may overlap.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from pipelines import paths
from pipelines.store import Session, Store, open_store

WRITE_POOL = "duckdb_write"


class StoreResource(dg.ConfigurableResource):
    """The store (pipelines.store.open_store), the resource `warehouse` of every asset that
    reads or writes runs: the DuckDB warehouse file `path` (empty:
    $TRACEREPLAY_WAREHOUSE or data/warehouse.duckdb), or the Parquet lake `lake` (empty:
    $TRACEREPLAY_LAKE or `lake` in tracereplay.toml, else none)."""

    path: str = ""
    lake: str = ""

    @property
    def store(self) -> Store:
        return open_store(self.path or None, self.lake or None)

    @property
    def file(self) -> Path:
        return self.store.warehouse_file

    @contextmanager
    def connect(self, read_only: bool = False) -> Iterator[Session]:
        """A session for one step (canonical schema created when writable), closed after."""
        with self.store.session(read_only=read_only) as session:
            yield session


class RawDirResource(dg.ConfigurableResource):
    """The folder whose sub-folders are runs (empty: $TRACEREPLAY_RAW_DIR or data/raw).

    settle_seconds: a folder whose newest file is younger than this is still being written and
    is left for a later sensor tick.
    """

    path: str = ""
    settle_seconds: float = 10.0

    @property
    def root(self) -> Path:
        return Path(self.path) if self.path else paths.raw_dir()

    def folder(self, partition_key: str) -> Path:
        """The run folder of a partition: one path component directly under the root."""
        if partition_key in ("", ".", "..") or Path(partition_key).name != partition_key:
            raise ValueError(f"partition key {partition_key!r} is not a folder name")
        return self.root / partition_key


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={"warehouse": StoreResource(), "raw_dir": RawDirResource()},
        executor=dg.in_process_executor,
    )
