"""Ingest paths into the warehouse: discover runs, assemble each, write it, record quarantine.

Idempotent: a run's rows are replaced as a whole (warehouse.write_run) under a run_id derived from
its content hash; when the warehouse already holds a run with the same content hash, its run_id
and first ingestion time are kept, so re-ingesting the same bytes changes nothing. A bad input
never stops the others: every failure becomes a quarantine row with a reason code.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines import warehouse
from pipelines.ingest.assemble import assemble_run, file_sha256
from pipelines.ingest.discover import Discovery, RunInput, discover
from pipelines.ingest.frames import Quarantined, RunFrames


@dataclass
class RunReport:
    """What one run put into the warehouse."""

    run_id: str
    source: str
    origin: str
    ranks: int
    rows: dict[str, int]
    quarantined: list[Quarantined] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows set aside

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "source": self.source,
            "origin": self.origin,
            "ranks": self.ranks,
            "events": self.rows.get("slices", 0),
            "kernels": self.rows.get("kernels", 0),
            "comm_ops": self.rows.get("comm_ops", 0),
            "step_breakdown": self.rows.get("step_breakdown", 0),
            "quarantined": [q.__dict__ for q in self.quarantined],
            "dropped_rows": dict(self.dropped),
        }


@dataclass
class IngestReport:
    """The outcome of one `ingest_paths` call."""

    runs: list[RunReport] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)  # every input set aside
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why: no reader)
    ignored: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.quarantined

    def as_json(self) -> dict[str, Any]:
        return {
            "runs": [r.as_json() for r in self.runs],
            "quarantined": [q.__dict__ for q in self.quarantined],
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "ignored": len(self.ignored),
        }


def _existing_run(con: duckdb.DuckDBPyConnection, content_hash: str) -> tuple[str, Any] | None:
    row = con.execute(
        "select run_id, ingested_at from runs where content_hash = ? order by ingested_at limit 1",
        [content_hash],
    ).fetchone()
    return (row[0], row[1]) if row else None


def _rename_run(frames: RunFrames, run_id: str, ingested_at: Any) -> dict[str, pl.DataFrame]:
    tables = frames.conformed()
    out = {}
    for name, frame in tables.items():
        if "run_id" in frame.columns:
            frame = frame.with_columns(pl.lit(run_id, pl.String).alias("run_id"))
        if name == "runs" and ingested_at is not None:
            frame = frame.with_columns(
                pl.lit(ingested_at).cast(frame["ingested_at"].dtype).alias("ingested_at")
            )
        out[name] = frame
    return out


def write_frames(con: duckdb.DuckDBPyConnection, frames: RunFrames) -> tuple[str, dict[str, int]]:
    """Write one run, reusing the run_id of an earlier run with the same content hash."""
    run_id = frames.run_id
    existing = _existing_run(con, frames.run["content_hash"])
    ingested_at = None
    if existing is not None:
        run_id, ingested_at = existing
    tables = _rename_run(frames, run_id, ingested_at)
    return run_id, warehouse.write_run(con, run_id, tables)


def _record(con: duckdb.DuckDBPyConnection, items: Iterable[Quarantined]) -> None:
    for item in items:
        path = Path(item.path)
        digest = item.content_hash
        if digest is None and path.is_file():
            try:
                digest = file_sha256(path)
            except OSError:
                digest = None
        warehouse.record_quarantine(con, item.path, item.reason, item.detail, digest)


def _progress(enabled: bool, total: int) -> Any:
    if not enabled or not sys.stderr.isatty():
        return None
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("ingest {task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        transient=True,
    )
    progress.start()
    progress.add_task("", total=total)
    return progress


def ingest_discovered(
    found: Discovery,
    con: duckdb.DuckDBPyConnection,
    tags: dict[str, str] | None = None,
    progress: bool = True,
) -> IngestReport:
    """Assemble and write every discovered run; record all quarantined inputs."""
    report = IngestReport(quarantined=list(found.quarantined))
    report.ignored = [str(p) for p in found.ignored]
    sizes = {id(run): _size(run) for run in found.runs}
    bar = _progress(progress, sum(sizes.values()))
    try:
        for run in found.runs:
            if bar is not None:
                bar.update(bar.task_ids[0], description=run.origin.name)
            frames, quarantined, skipped = assemble_run(run, tags)
            report.quarantined.extend(quarantined)
            report.skipped.extend(skipped)
            if frames is not None:
                run_id, rows = write_frames(con, frames)
                report.runs.append(
                    RunReport(
                        run_id=run_id,
                        source=run.source,
                        origin=str(run.origin),
                        ranks=rows.get("ranks", 0),
                        rows=rows,
                        quarantined=quarantined,
                        dropped=json.loads(frames.run.get("dropped_rows") or "{}"),
                    )
                )
            if bar is not None:
                bar.advance(bar.task_ids[0], sizes[id(run)])
    finally:
        if bar is not None:
            bar.stop()
    _record(con, report.quarantined)
    return report


def _size(run: RunInput) -> int:
    try:
        return run.total_bytes
    except OSError:
        return 0


def ingest_paths(
    paths: Iterable[str | Path],
    con: duckdb.DuckDBPyConnection,
    tags: dict[str, str] | None = None,
    progress: bool = True,
) -> IngestReport:
    """Discover runs under `paths` (files or folders, searched recursively) and load them."""
    return ingest_discovered(discover(paths), con, tags=tags, progress=progress)
