"""Store one operator-latency table (pipelines.ingest.readers.latency_tables) in `latency_points`.

A table's id is `lt-` + the first 16 hex digits of the sha256 of its resolved path (so a path
maps to one id in either store backend, and the store's per-id scan finds what it held). The same
bytes at the same path again are `unchanged` (nothing parsed, unless tags are given: then the
facts are read again and the rows replaced); new bytes at a known path replace its rows. Rows
with a bad value are set aside by the reader (quarantine reason `invalid_rows`, each line and
its reason named in the detail)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.ingest.assemble import file_sha256
from pipelines.ingest.frames import Quarantined, stored_path
from pipelines.ingest.readers.latency_tables import read_table, table_id_of
from pipelines.store import Session
from pipelines.store.insert import memory_limited

TABLE = "latency_points"


@dataclass
class TableReport:
    """What one latency table put into the warehouse (status: loaded, replaced: new bytes or
    tags at a known path, unchanged)."""

    table_id: str
    layout: str
    origin: str
    points: int
    status: str = "loaded"
    quarantined: list[Quarantined] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "table_id": self.table_id,
            "status": self.status,
            "layout": self.layout,
            "origin": self.origin,
            "points": self.points,
            "left_out": self.left_out,
            "facts": self.facts,
            "quarantined": [q.__dict__ for q in self.quarantined],
        }

    def line(self) -> str:
        """One line for a terminal."""
        facts = " ".join(f"{k}={_text(v)}" for k, v in self.facts.items() if v is not None)
        parts = [self.table_id, self.status, f"layout={self.layout}", f"points={self.points}"]
        parts += [facts] if facts else []
        if self.left_out:
            parts.append(", ".join(f"{k}={v} not read" for k, v in sorted(self.left_out.items())))
        if self.quarantined:
            parts.append(f"rows set aside: {self.quarantined[0].detail}")
        return "  ".join(parts)


TABLE_FACTS = ("source", "hardware", "model", "tp")


def _text(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def table_facts(points: pl.DataFrame | pl.LazyFrame) -> dict[str, Any]:
    """Each fact of a table's points: its one value, or its values in order where the points
    differ (one Vidur mlp.csv holds tp 1/2/4/8); a fact no point gives is left out."""
    values = points.lazy().select(
        pl.col(k).drop_nulls().unique().sort().implode() for k in TABLE_FACTS
    )
    row = values.collect().row(0, named=True)
    return {k: v[0] if len(v) == 1 else v for k, v in row.items() if v}


def ingest_table(session: Session, path: Path, tags: dict[str, str] | None = None) -> TableReport:
    """Read `path` and store its points under its id, replacing what that path held before."""
    origin = stored_path(Path(path).resolve())
    table_id = table_id_of(origin)
    before = session.rows_of_runs(TABLE, [table_id])
    if before.height and not tags:
        digest = file_sha256(Path(path))
        if before["content_hash"][0] == digest:
            return TableReport(table_id, before["layout"][0], origin, before.height, "unchanged")
    # streamed: a table larger than one block is checked a block at a time and reaches the
    # store from a Parquet spill, within the ingest memory budget (docs/bench_ingest.md)
    table = read_table(Path(path), tags, streamed=True)
    facts = table_facts(table.points) if table.first is not None else {}
    session.replace_run_rows(table_id, {TABLE: table.points})
    if isinstance(table.points, pl.LazyFrame):
        # checkpointed now, under the budget's DuckDB limit: left to the close, the checkpoint
        # of a 100 MB table's 3.7 M points ran at DuckDB's default limit (docs/bench_ingest.md)
        with memory_limited(session.con):
            session.con.execute("checkpoint")
    return TableReport(
        table_id,
        table.layout,
        origin,
        table.count,
        status="replaced" if before.height else "loaded",
        quarantined=table.quarantined,
        left_out=table.left_out,
        facts=facts,
    )
