"""The canonical frame schemas every reader produces, and the container a reader returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import polars as pl

from pipelines.paths import printable, stored_path  # noqa: F401 (their home is pipelines.paths)
from pipelines.store.schema import CANONICAL_TABLES, polars_schema

RUN_TABLE_NAMES = tuple(t for t in CANONICAL_TABLES if t != "quarantine")
"""The tables a reader fills for one run (`quarantine` is the warehouse's own)."""


def __getattr__(name: str) -> Any:
    # SCHEMAS is built on first use from sql/schema (pipelines.store.schema), so importing
    # this module does not start DuckDB.
    if name == "SCHEMAS":
        return _schemas()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _schemas() -> dict[str, dict[str, pl.DataType]]:
    """Polars dtypes of the run tables, derived from their DDL (sql/schema/<table>.sql)."""
    return {table: polars_schema(table) for table in RUN_TABLE_NAMES}


SCHEMAS: dict[str, dict[str, pl.DataType]]


def empty(table: str) -> pl.DataFrame:
    """An empty frame with the canonical schema of `table`."""
    return pl.DataFrame(schema=_schemas()[table])


def conform(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """Select and cast `frame` to the canonical schema of `table`; absent columns become null."""
    schema = _schemas()[table]
    columns = frame.collect_schema().names()
    unknown = set(columns) - set(schema)
    if unknown:
        raise ValueError(f"{table}: columns not in the canonical schema: {sorted(unknown)}")
    return frame.select(
        [
            (pl.col(c) if c in columns else pl.lit(None)).cast(dtype).alias(c)
            for c, dtype in schema.items()
        ]
    )


@dataclass(frozen=True)
class Quarantined:
    """An input file that could not be read: where, a short reason code, and a one-line detail."""

    path: str
    reason: str
    detail: str
    content_hash: str | None = None

    @classmethod
    def entries_set_aside(
        cls,
        path: object,
        lines: list[str],
        count: int | None = None,
        reason: str = "invalid_event",
        shown: int = 3,
    ) -> Quarantined:
        """The quarantine row of a file whose bad entries were set aside one by one (`lines`:
        `<position>: why` of the first ones; `count`: how many in all, default len(lines))
        while the rest of it loaded."""
        count = len(lines) if count is None else count
        detail = f"{count} entr{'y' if count == 1 else 'ies'} set aside, the rest"
        detail += f" loaded: {'; '.join(lines[:shown])}"
        if count > shown:
            detail += f"; {count - shown} more"
        return cls(str(path), reason, detail)

    @classmethod
    def entries_repaired(
        cls, path: object, lines: list[str], count: int | None = None, how: str = "", shown: int = 3
    ) -> Quarantined:
        """The `repaired_rows` row of a file whose bad entries were repaired (`lines`: what was
        repaired in the first ones; `how`: e.g. ' from the sub-tasks of the op') while the rest
        loaded as is."""
        count = len(lines) if count is None else count
        detail = f"{count} entr{'y' if count == 1 else 'ies'} repaired{how}, the rest loaded as is:"
        detail += f" {'; '.join(lines[:shown])}"
        if count > shown:
            detail += f"; {count - shown} more"
        return cls(str(path), "repaired_rows", detail)

    def message(self) -> str:
        """One line for a terminal: control characters (a newline in a folder name) escaped."""
        return printable(f"quarantined {self.path}: {self.reason}: {self.detail}")


@dataclass
class RunFrames:
    """What a reader returns for one run: the `runs` row, the other canonical tables, and the
    inputs it had to set aside. Tables absent from `tables` are empty for this run."""

    run: dict[str, Any]
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    quarantined: list[Quarantined] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return str(self.run["run_id"])

    def conformed(self) -> dict[str, pl.DataFrame]:
        """Every run table in canonical form, `runs` included."""
        out = {"runs": conform("runs", pl.DataFrame([self.run], infer_schema_length=None))}
        for table in RUN_TABLE_NAMES:
            if table == "runs":
                continue
            frame = self.tables.get(table)
            out[table] = empty(table) if frame is None else conform(table, frame)
        return out


@dataclass
class RankFrames:
    """What a per-rank reader returns: the rank's identity, its rows of the canonical tables
    (slices, kernels, comm_ops, step_breakdown; `run_id` may be left out, the assembler adds it),
    run-level facts it found (`info`: software versions, hardware, collected_at, profiler metadata
    such as parallel groups), the files it had to set aside and the rows it dropped (`dropped`:
    reason code -> count, codes in dropped.py)."""

    rank: int | None
    device_id: int | None = None
    source_path: str | None = None
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    quarantined: list[Quarantined] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
