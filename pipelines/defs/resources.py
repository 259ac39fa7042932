"""Resources of the code location: the DuckDB warehouse and the raw folder runs are dropped into.

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
import duckdb

from pipelines import paths
from pipelines import warehouse as wh

WRITE_POOL = "duckdb_write"


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB warehouse file (empty: $TRACEREPLAY_WAREHOUSE or data/warehouse.duckdb)."""

    path: str = ""

    @property
    def file(self) -> Path:
        return paths.warehouse_path(self.path or None)

    @contextmanager
    def connect(self, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one step (canonical schema created when writable), closed after."""
        con = wh.connect(self.file, read_only=read_only)
        try:
            yield con
        finally:
            con.close()


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
        resources={"warehouse": WarehouseResource(), "raw_dir": RawDirResource()},
        executor=dg.in_process_executor,
    )
