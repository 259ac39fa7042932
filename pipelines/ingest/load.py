"""Ingest paths into the warehouse: discover runs, assemble each, write it, record quarantine.

The identity rule (docs/run_identity.md): a run is identified by its origin (the folder that groups
its ranks); every input file belongs to at most one current run. For each discovered run:

* the inputs of the run already stored at that origin (and of a run whose files are a superset
  of these, when only part of it, say one rank folder, was given) that still exist are added,
  so ingesting one rank folder of a known run refreshes that run instead of adding a second one;
* when the warehouse holds a run at the same origin, the files are hashed *before* parsing: the
  same bytes are `unchanged` (nothing parsed or written; tags given now are merged into the row);
* new bytes replace the stored run in one transaction (`replaced`, with the replaced run ids);
  tags given earlier survive (a tag given again overrides) and so does the chunk rule;
* every failure of one run (a reader bug, an unreadable file, a row the warehouse refuses)
  becomes a quarantine row written as it happens; the other runs still load.

`target` is a store (pipelines.store), which gives the sessions to write through under its own
policy (a DuckDB file is opened per write, so its lock is held only to write; a lake keeps one
session), or an open session held by the caller.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipelines import memory_budget, stop
from pipelines.ingest.assemble import (
    FileDigest,
    apply_tags,
    assemble_run,
    combined_hash,
    file_digests,
    file_sha256,
)
from pipelines.ingest.discover import CLUSTER_DIR, Discovery, RunInput, discover
from pipelines.ingest.frames import Quarantined, RunFrames, stored_path
from pipelines.ingest.latency_load import TableReport, ingest_table
from pipelines.ingest.readers.ascend_text import OUTPUT_DIR
from pipelines.store import Session, Store, StoreError
from pipelines.store.base import HeldSession, WriteSessions


@dataclass
class RunReport:
    """What one run put into the warehouse. status: loaded (new), replaced (new bytes at a known
    origin), unchanged (same bytes: nothing parsed), retagged (same bytes, new tags)."""

    run_id: str
    source: str
    origin: str
    ranks: int
    rows: dict[str, int]
    quarantined: list[Quarantined] = field(default_factory=list)
    status: str = "loaded"
    replaced: list[str] = field(default_factory=list)
    dropped_rows: dict[str, int] = field(default_factory=dict)
    duplicate_of: str | None = None
    """A stored run with the same input bytes (another folder): the same measurement, which the
    statistics count once (by the earlier run)."""

    @property
    def dropped(self) -> dict[str, int]:
        """Rows set aside per reason (the same as dropped_rows)."""
        return self.dropped_rows

    @property
    def events(self) -> int:
        """Events read from the run's inputs: its stored slices without the overlap lanes the
        reader derived for an input that has none of its own (Kineto, the SQLite export)."""
        return self.rows.get("slices", 0) - self.rows.get("derived_slices", 0)

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "replaced": self.replaced,
            "source": self.source,
            "origin": self.origin,
            "ranks": self.ranks,
            "events": self.events,
            "kernels": self.rows.get("kernels", 0),
            "comm_ops": self.rows.get("comm_ops", 0),
            "step_breakdown": self.rows.get("step_breakdown", 0),
            "dropped_rows": self.dropped_rows,
            "duplicate_of": self.duplicate_of,
            "quarantined": [q.__dict__ for q in self.quarantined],
        }


@dataclass
class IngestReport:
    """The outcome of one `ingest_paths` call."""

    runs: list[RunReport] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)  # every input set aside
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why: no reader)
    ignored: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)  # runs removed: their origin is gone
    tables: list[TableReport] = field(default_factory=list)  # operator-latency tables

    @property
    def ok(self) -> bool:
        return not self.quarantined

    @property
    def changed_run_ids(self) -> list[str]:
        """Runs whose rows were (re)written by this call."""
        return [r.run_id for r in self.runs if r.status in ("loaded", "replaced")]

    @property
    def changed_table_ids(self) -> list[str]:
        """Latency tables whose points were (re)written by this call (their id keys run_id)."""
        return [t.table_id for t in self.tables if t.status in ("loaded", "replaced")]

    def as_json(self) -> dict[str, Any]:
        return {
            "runs": [r.as_json() for r in self.runs],
            "quarantined": [q.__dict__ for q in self.quarantined],
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "ignored": len(self.ignored),
            "pruned": self.pruned,
            "tables": [t.as_json() for t in self.tables],
        }


@dataclass
class StoredRun:
    """A current run of the warehouse, as ingest needs to know it."""

    run_id: str
    origin: str
    content_hash: str
    tags: dict[str, str]
    segmentation: str | None
    ranks: int
    rows: dict[str, int]
    files: dict[str, str]  # path -> sha256 (empty for runs stored before run_inputs existed)
    dropped_rows: dict[str, int]
    source: str


def _json_dict(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def stored_runs(session: Session) -> dict[str, StoredRun]:
    """Every measured run of the warehouse (reruns made by `replay` excluded), by run_id."""
    rows = session.stored_runs()
    files: dict[str, dict[str, str]] = {}
    for run_id, path, sha in session.run_input_files():
        files.setdefault(run_id, {})[path] = sha
    out = {}
    for row in rows:
        run_id = row[0]
        out[run_id] = StoredRun(
            run_id=run_id,
            origin=row[1],
            content_hash=row[2],
            tags={str(k): str(v) for k, v in _json_dict(row[3]).items()},
            segmentation=row[4],
            dropped_rows={str(k): int(v) for k, v in _json_dict(row[5]).items()},
            source=row[6],
            ranks=0,  # counted when needed (_Ingest.unchanged)
            rows={},
            files=files.get(run_id, {}),
        )
    return out


class _Known:
    """The warehouse's current runs, kept up to date as this call writes."""

    def __init__(self, runs: dict[str, StoredRun]) -> None:
        self.runs = runs

    def at_origin(self, origin: str) -> StoredRun | None:
        return next((r for r in self.runs.values() if r.origin == origin), None)

    def owners(self, paths: Iterable[str]) -> list[StoredRun]:
        wanted = set(paths)
        return [r for r in self.runs.values() if wanted & set(r.files)]


def _containers(paths: Iterable[str]) -> set[Path]:
    """Folders (rank folders, cluster_analysis_output/) or files that discovery turns back into
    the runs these input files came from."""

    out: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        cluster = next((p for p in path.parents if p.name == CLUSTER_DIR), None)
        if cluster is not None:
            out.add(cluster)
        elif path.parent.name == OUTPUT_DIR:
            out.add(path.parent.parent)
        elif path.name.startswith("profiler_info") or path.name.endswith(".db"):
            out.add(path.parent)
        else:
            out.add(path)
    return {p for p in out if p.exists()}


def _widen(run: RunInput, known: _Known) -> tuple[RunInput, StoredRun | None]:
    """`run` completed with the still-present inputs of the stored run it belongs to (same
    origin, or a stored run holding all of its files), and that stored run."""
    files = {str(p) for p in run.files}
    stored = known.at_origin(stored_path(run.origin))
    if stored is None:
        covering = [r for r in known.owners(files) if files <= set(r.files)]
        stored = covering[0] if len(covering) == 1 else None
    if stored is None or not (set(stored.files) - files):
        return run, stored
    paths = _containers(set(stored.files) | files)
    for candidate in discover(sorted(paths)).runs:
        if stored_path(candidate.origin) == stored.origin:
            return candidate, stored
    return run, stored


def _merged_tags(stored: StoredRun | None, tags: dict[str, str]) -> dict[str, str]:
    return {**(stored.tags if stored else {}), **tags}


def _drop_null_keys(
    tables: dict[str, pl.DataFrame], required: dict[str, list[str]]
) -> tuple[dict[str, pl.DataFrame], dict[str, int]]:
    """Rows with NULL in a column the warehouse declares NOT NULL are dropped and counted under
    `missing_<column>` (a trace event without a name spoils its row, not its run)."""
    dropped: dict[str, int] = {}
    out = {}
    for table, frame in tables.items():
        for column in required.get(table, []):
            if column not in frame.collect_schema().names():
                continue
            nulls = frame.select(pl.col(column).null_count())
            count = int((nulls.collect() if isinstance(nulls, pl.LazyFrame) else nulls).item())
            if count:
                dropped[f"missing_{column}"] = dropped.get(f"missing_{column}", 0) + count
                frame = frame.filter(pl.col(column).is_not_null())
        out[table] = frame
    return out, dropped


def _write_run(
    session: Session,
    frames: RunFrames,
    origin: str,
    replace: list[str],
    segmentation: str | None,
) -> tuple[dict[str, int], list[str], dict[str, int]]:
    """Replace the runs at `origin` and the runs in `replace` by this run, in one transaction.
    Returns (rows per table, run ids replaced, rows dropped per reason)."""
    tables = frames.conformed()
    tables, dropped = _drop_null_keys(tables, session.not_null_columns())
    if dropped:
        previous = _json_dict(tables["runs"]["dropped_rows"][0])
        merged = {**previous}
        for reason, count in dropped.items():
            merged[reason] = int(merged.get(reason, 0)) + count
        tables["runs"] = tables["runs"].with_columns(
            pl.lit(json.dumps(merged, sort_keys=True)).alias("dropped_rows")
        )
    if segmentation is not None:
        tables["runs"] = tables["runs"].with_columns(pl.lit(segmentation).alias("segmentation"))
    all_dropped = {str(k): int(v) for k, v in _json_dict(tables["runs"]["dropped_rows"][0]).items()}
    run_id = frames.run_id
    here = session.run_ids_at_origin(origin)
    gone = sorted({*here, *replace} - {run_id})
    counts = session.write_run(run_id, tables, replaces=gone)
    counts = {t: n for t, n in counts.items() if t in tables}
    if counts.get("slices"):
        counts["derived_slices"] = session.derived_slice_count(run_id)
    return counts, gone, all_dropped


def write_frames(session: Session, frames: RunFrames) -> tuple[str, dict[str, int]]:
    """Write one run read outside `ingest_paths`, replacing whatever its origin held."""
    counts, _, _ = _write_run(session, frames, frames.run["origin"], [], None)
    return frames.run_id, counts


def _retag(session: Session, stored: StoredRun, tags: dict[str, str]) -> None:
    """Store merged tags on an unchanged run (and the run facts they set)."""
    row = session.run_row(stored.run_id)
    updated = apply_tags(row.row(0, named=True), tags)
    columns = [c for c in row.columns if c != "run_id" and updated.get(c) != row[c][0]]
    if columns:
        session.replace_run_rows(stored.run_id, {}, {c: updated[c] for c in columns})


def _record(session: Session, items: Iterable[Quarantined]) -> None:
    for item in items:
        path = Path(item.path)
        digest = item.content_hash
        if digest is None and path.is_file():
            try:
                digest = file_sha256(path)
            except OSError:
                digest = None
        session.record_quarantine(item.path, item.reason, item.detail, digest)


def _vanished(run: RunInput) -> Quarantined | None:
    """The quarantine row of a run some of whose files, found by discovery, are gone before it
    is read (a folder removed or rewritten during the call): nothing of it is stored, rather
    than a run missing those files."""
    files = list(run.files)
    missing = [p for p in files if not os.path.lexists(p)]
    if not missing:
        return None
    origin = stored_path(run.origin)
    if not os.path.lexists(run.origin):
        detail = "the run folder was removed after it was found; nothing of it was stored"
    else:
        detail = (
            f"{len(missing)} of its {len(files)} files were removed after it was found (first:"
            f" {stored_path(missing[0])}); nothing of it was stored: ingest it again when complete"
        )
    return Quarantined(origin, "removed_during_ingest", detail)


def _failure(run: RunInput, exc: BaseException, stage: str) -> Quarantined:
    """The quarantine row of a run that failed as a whole."""
    if isinstance(exc, OSError):
        where = exc.filename or run.origin
        return Quarantined(str(where), "unreadable", f"{exc.strerror or exc}")
    detail = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    return Quarantined(stored_path(run.origin), f"{stage}_error", detail)


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


class _Ingest:
    """One `ingest_discovered` call: the report and the runs known so far."""

    def __init__(
        self,
        target: WriteSessions,
        tags: dict[str, str],
        report: IngestReport,
    ) -> None:
        self.target = target
        self.tags = tags
        self.report = report
        with target.open() as con:
            self.known = _Known(stored_runs(con))
        self.done: set[str] = set()  # origins handled in this call

    def quarantine(self, items: list[Quarantined]) -> None:
        """Record quarantine rows now (not at the end), so a later crash keeps them."""
        if not items:
            return
        self.report.quarantined.extend(items)
        with self.target.open() as con:
            _record(con, items)

    def unchanged(self, stored: StoredRun, run: RunInput, tags: dict[str, str]) -> None:
        status = "unchanged"
        with self.target.open() as con:
            if not stored.rows:
                counts = con.run_row_counts(stored.run_id)
                stored.ranks = counts.pop("ranks", 0)
                stored.rows = counts
            if tags != stored.tags:
                _retag(con, stored, tags)
                stored.tags = tags
                status = "retagged"
        self.report.runs.append(
            RunReport(
                run_id=stored.run_id,
                source=stored.source,
                origin=stored.origin,
                ranks=stored.ranks,
                rows=dict(stored.rows, ranks=stored.ranks, runs=1),
                status=status,
                dropped_rows=stored.dropped_rows,
            )
        )

    def one(self, given: RunInput) -> None:
        gone = _vanished(given)
        if gone is not None:
            self.quarantine([gone])
            return
        run, stored = _widen(given, self.known)
        origin = stored_path(run.origin)
        if origin in self.done:
            return  # two given paths led to the same run
        self.done.add(origin)
        tags = _merged_tags(stored, self.tags)
        digests: list[FileDigest] | None = None
        if stored is not None:
            digests = file_digests(list(run.files))
            if combined_hash(digests) == stored.content_hash and stored.origin == origin:
                try:
                    self.unchanged(stored, run, tags)
                    return
                except duckdb.Error:
                    pass  # a stored file of the run cannot be read (a damaged lake file): rewrite
        frames, quarantined, skipped = assemble_run(run, tags, digests)
        self.report.skipped.extend(skipped)
        if frames is None:
            self.quarantine(quarantined)
            return
        inputs = set(frames.tables["run_inputs"]["path"].to_list())
        overlapping = [r.run_id for r in self.known.owners(inputs)]
        replace = sorted({*overlapping, *([stored.run_id] if stored else [])})
        try:
            with self.target.open() as con:
                _record(con, quarantined)
                counts, gone, dropped = _write_run(
                    con, frames, origin, replace, stored.segmentation if stored else None
                )
        finally:
            self.report.quarantined.extend(quarantined)
        for run_id in gone:
            self.known.runs.pop(run_id, None)
        run_frame = frames.run
        twins = sorted(
            r.run_id
            for r in self.known.runs.values()
            if r.content_hash == run_frame["content_hash"] and r.run_id != frames.run_id
        )
        self.known.runs[frames.run_id] = StoredRun(
            run_id=frames.run_id,
            origin=origin,
            content_hash=run_frame["content_hash"],
            tags=tags,
            segmentation=stored.segmentation if stored else None,
            ranks=counts.get("ranks", 0),
            rows=counts,
            files={
                p: s
                for p, s in zip(
                    *(frames.tables["run_inputs"][c] for c in ("path", "sha256")), strict=True
                )
            },
            dropped_rows=dropped,
            source=run.source,
        )
        self.report.runs.append(
            RunReport(
                run_id=frames.run_id,
                source=run.source,
                origin=origin,
                ranks=counts.get("ranks", 0),
                rows=counts,
                quarantined=quarantined,
                status="replaced" if gone else "loaded",
                replaced=gone,
                dropped_rows=dropped,
                duplicate_of=twins[0] if twins else None,
            )
        )

    def table(self, path: Path) -> None:
        """Store one operator-latency table (pipelines.ingest.latency_load); a table that cannot
        be read is quarantined, the others go on."""
        try:
            with self.target.open() as con:
                done = ingest_table(con, path, self.tags)
        except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
            self.quarantine([Quarantined(str(path), "unreadable_table", str(exc)[:300])])
            return
        self.quarantine(done.quarantined)
        self.report.tables.append(done)

    def prune(self, folders: list[Path]) -> None:
        """Remove stored runs whose origin lies under one of `folders` and was not produced by
        this call (the folder no longer holds them)."""
        produced = {r.run_id for r in self.report.runs}
        stale = [
            r.run_id
            for r in self.known.runs.values()
            if r.run_id not in produced
            and any(Path(r.origin).is_relative_to(folder) for folder in folders)
        ]
        if not stale:
            return
        with self.target.open() as con:
            for run_id in stale:
                con.delete_run(run_id)
        for run_id in stale:
            self.known.runs.pop(run_id, None)
        self.report.pruned.extend(stale)


def ingest_discovered(
    found: Discovery,
    target: Store | Session,
    tags: dict[str, str] | None = None,
    progress: bool = True,
    prune: Iterable[str | Path] = (),
) -> IngestReport:
    """Assemble and write every discovered run (module docstring: the identity rule).

    prune: folders whose stored runs that this call did not produce are removed (the Dagster
    partition of a folder uses it; `tracereplay ingest --prune` too)."""
    if isinstance(target, Store):
        with target.writer() as sessions:
            return _ingest(found, sessions, tags, progress, prune)
    return _ingest(found, HeldSession(target), tags, progress, prune)


def _ingest(
    found: Discovery,
    sessions: WriteSessions,
    tags: dict[str, str] | None,
    progress: bool,
    prune: Iterable[str | Path],
) -> IngestReport:
    report = IngestReport()
    report.ignored = [str(p) for p in found.ignored if p not in found.ignored_reasons]
    # inputs left unread for a reason worth a line (a lone topology): listed as skipped
    report.skipped.extend((str(p), why) for p, why in found.ignored_reasons.items())
    state = _Ingest(sessions, dict(tags or {}), report)
    state.quarantine(list(found.quarantined))
    sizes = {id(run): _size(run) for run in found.runs}
    bar = _progress(progress, sum(sizes.values()))
    try:
        for run in found.runs:
            if bar is not None:
                bar.update(bar.task_ids[0], description=run.origin.name)
            try:
                state.one(run)
            except StoreError:
                raise
            except Exception as exc:  # one run's failure never stops the others
                stop.raise_if_requested()  # a stop DuckDB surfaced as an error is no run's fault
                stage = "write" if isinstance(exc, duckdb.Error) else "read"
                state.quarantine([_failure(run, exc, stage)])
            finally:
                memory_budget.release_spills()  # a streamed trace's spill, once its run is written
            if bar is not None:
                bar.advance(bar.task_ids[0], sizes[id(run)])
    finally:
        if bar is not None:
            bar.stop()
    for path in found.tables:
        state.table(path)
    folders = [Path(p).resolve() for p in prune]
    if folders:
        state.prune(folders)
    return report


def _size(run: RunInput) -> int:
    try:
        return run.total_bytes
    except OSError:
        return 0


def ingest_paths(
    paths: Iterable[str | Path],
    target: Store | Session,
    tags: dict[str, str] | None = None,
    progress: bool = True,
    prune: bool = False,
) -> IngestReport:
    """Discover runs under `paths` (files or folders, searched recursively) and load them.
    prune: also remove stored runs under the given folders that they no longer hold."""
    paths = list(paths)
    found = discover(paths)
    folders = [p for p in paths if Path(p).is_dir()] if prune else []
    return ingest_discovered(found, target, tags=tags, progress=progress, prune=folders)
