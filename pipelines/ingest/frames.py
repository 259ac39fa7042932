"""The canonical frame schemas every reader produces, and the container a reader returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

# Polars dtypes of the canonical tables (sql/schema/*.sql is the warehouse-side twin).
SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "runs": {
        "run_id": pl.String,
        "source": pl.String,
        "origin": pl.String,
        "content_hash": pl.String,
        "model": pl.String,
        "schedule": pl.String,
        "chunk_size": pl.Int64,
        "seq_len": pl.Int64,
        "tp": pl.Int32,
        "pp": pl.Int32,
        "vp": pl.Int32,
        "dp": pl.Int32,
        "world_size": pl.Int32,
        "hardware": pl.String,
        "software": pl.String,
        "collected_at": pl.Datetime("us"),
        "replay_of": pl.String,
        "tags": pl.String,
        "ingested_at": pl.Datetime("us"),
        "dropped_rows": pl.String,
        "segmentation": pl.String,
        "attention": pl.String,
    },
    "run_inputs": {
        "run_id": pl.String,
        "path": pl.String,
        "bytes": pl.Int64,
        "sha256": pl.String,
    },
    "ranks": {
        "run_id": pl.String,
        "rank": pl.Int32,
        "device_id": pl.Int32,
        "pp_stage": pl.Int32,
        "groups": pl.String,
        "source_path": pl.String,
    },
    "slices": {
        "run_id": pl.String,
        "rank": pl.Int32,
        "lane": pl.String,
        "thread": pl.String,
        "name": pl.String,
        "category": pl.String,
        "start_ns": pl.Int64,
        "dur_ns": pl.Int64,
        "step": pl.Int32,
        "args": pl.String,
    },
    "kernels": {
        "run_id": pl.String,
        "rank": pl.Int32,
        "step": pl.Int32,
        "name": pl.String,
        "type": pl.String,
        "core": pl.String,
        "start_ns": pl.Int64,
        "dur_ns": pl.Int64,
        "wait_ns": pl.Int64,
        "is_comm": pl.Boolean,
    },
    "comm_ops": {
        "run_id": pl.String,
        "rank": pl.Int32,
        "step": pl.Int32,
        "op": pl.String,
        "op_type": pl.String,
        "group_name": pl.String,
        "group_kind": pl.String,
        "is_p2p": pl.Boolean,
        "peer": pl.Int32,
        "bytes": pl.Int64,
        "start_ns": pl.Int64,
        "dur_ns": pl.Int64,
        "wait_ns": pl.Int64,
        "transit_ns": pl.Int64,
        "sync_ns": pl.Int64,
    },
    "step_breakdown": {
        "run_id": pl.String,
        "rank": pl.Int32,
        "step": pl.Int32,
        "origin": pl.String,
        "computing_ns": pl.Int64,
        "communication_ns": pl.Int64,
        "comm_not_overlapped_ns": pl.Int64,
        "overlapped_ns": pl.Int64,
        "free_ns": pl.Int64,
        "stage_ns": pl.Int64,
        "bubble_ns": pl.Int64,
        "comm_not_overlapped_excl_receive_ns": pl.Int64,
        "preparing_ns": pl.Int64,
        "p2p_bubble_ns": pl.Int64,
        "complete": pl.Boolean,
        "incomplete_reason": pl.String,
    },
    "chunks": {
        "run_id": pl.String,
        "rank": pl.Int32,
        "vstage": pl.Int32,
        "request_id": pl.String,
        "chunk_idx": pl.Int32,
        "tokens": pl.Int64,
        "prefix_tokens": pl.Int64,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "busy_ns": pl.Int64,
    },
}

RUN_TABLE_NAMES = tuple(SCHEMAS)


def empty(table: str) -> pl.DataFrame:
    """An empty frame with the canonical schema of `table`."""
    return pl.DataFrame(schema=SCHEMAS[table])


def conform(table: str, frame: pl.DataFrame) -> pl.DataFrame:
    """Select and cast `frame` to the canonical schema of `table`; absent columns become null."""
    schema = SCHEMAS[table]
    unknown = set(frame.columns) - set(schema)
    if unknown:
        raise ValueError(f"{table}: columns not in the canonical schema: {sorted(unknown)}")
    return frame.select(
        [
            (pl.col(c) if c in frame.columns else pl.lit(None)).cast(dtype).alias(c)
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

    def message(self) -> str:
        """One line for a terminal: control characters (a newline in a folder name) escaped."""
        return printable(f"quarantined {self.path}: {self.reason}: {self.detail}")


def printable(text: str) -> str:
    """`text` with every non-printable character (newline, TAB, ESC, ...) as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


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
