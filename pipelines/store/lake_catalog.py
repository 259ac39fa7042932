"""The lake's identity catalog: one small JSON file per run, so ingest never scans the history.

Ingest needs, of every stored run, only what the identity rule asks (docs/run_identity.md): its
origin, content hash, tags, segmentation, dropped rows, source, whether it is a replay, and the
(path, sha256) of its input files. Reading those from `runs` and `run_inputs` opens one Parquet
file per run and table; here they sit in ``<lake>/_catalog/run_id=<id>.json`` (a few hundred
bytes), written aside and renamed like every lake file, refreshed by the lake store
(pipelines.store.parquet_lake) after the run's `runs` partition is renamed in and removed before
its partitions are.

The `runs` folders stay the truth: `entries` lists `<lake>/runs/` and rebuilds the entry of a run
whose entry is missing or older than its `runs` file (the entry records that file's mtime and
size), and ignores an entry without a run folder. So a crash between the two renames, a lake
written by an older version or files copied in by hand heal on the next read, and processes
writing different runs touch different entries (no shared writer).
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import polars as pl

from pipelines.store import lake_damage
from pipelines.store import lake_layout as lake
from pipelines.store.schema import polars_schema
from pipelines.vocabulary.configuration import RUN_CONFIG_KEYS

FOLDER = lake.CATALOG
PREFIX = "run_id="
SUFFIX = ".json"
RUN_COLUMNS = ("origin", "content_hash", "tags", "segmentation", "dropped_rows", "source")
FACT_COLUMNS = (*RUN_CONFIG_KEYS, "collected_at", "replay_of")
"""`runs` columns an entry also keeps under "facts" (Session.run_facts: the configuration a fit
counts a run in and whether it was collected, pipelines.analysis.changes.segments.may_split),
collected_at as integer microseconds (TIMESTAMP's resolution), so no run's Parquet file is opened
to answer them."""
VERSION = 2
"""Entries of another version (version 1: no "facts") are rebuilt from the run's files."""
_EPOCH = datetime(1970, 1, 1)


def _entry_path(root: Path, run_id: str) -> Path:
    return Path(root) / FOLDER / f"{PREFIX}{quote(run_id, safe='')}{SUFFIX}"


def _runs_file(root: Path, run_id: str) -> Path:
    return lake.partition_dir(root, "runs", run_id) / lake.PART


def _stamp(path: Path) -> list[int] | None:
    stat = _stat(str(path))
    return list(stat) if stat else None


def _partition_frame(root: Path, table: str, run_id: str, columns: list[str]) -> pl.DataFrame:
    files = sorted(lake.partition_dir(root, table, run_id).glob("*.parquet"))
    if not files:
        return pl.DataFrame()
    return pl.concat(
        [pl.read_parquet(f, columns=columns, glob=False) for f in files], how="vertical"
    )


def refresh(root: Path, run_id: str) -> dict[str, Any] | None:
    """Rewrite the entry of `run_id` from its own `runs` and `run_inputs` partitions (removed
    when the run has no `runs` row). Returns the entry."""
    root = Path(root)
    runs_file = _runs_file(root, run_id)
    stamp = _stamp(runs_file)
    if stamp and lake_damage.file_damage(str(runs_file)) is not None:
        return None  # no entry until re-ingest rewrites the file (lake_damage names it)
    runs = pl.read_parquet(runs_file, glob=False) if stamp else pl.DataFrame()
    if runs.is_empty():
        remove(root, run_id)
        return None
    row = runs.row(0, named=True)
    inputs = _partition_frame(root, "run_inputs", run_id, ["path", "sha256"])
    facts = {c: row.get(c) for c in FACT_COLUMNS}
    if isinstance(facts["collected_at"], datetime):
        facts["collected_at"] = (facts["collected_at"] - _EPOCH) // timedelta(microseconds=1)
    entry = {
        "run_id": run_id,
        **{c: row.get(c) for c in RUN_COLUMNS},
        "replay_of": row.get("replay_of"),
        "files": inputs.rows() if not inputs.is_empty() else [],
        "runs_file": stamp,
        "facts": facts,
        "version": VERSION,
    }
    target = _entry_path(root, run_id)
    aside = root / FOLDER / lake.INCOMING / f"{uuid.uuid4().hex}{SUFFIX}"
    aside.parent.mkdir(parents=True, exist_ok=True)
    aside.write_text(json.dumps(entry, default=str))
    os.replace(aside, target)
    return entry


def remove(root: Path, run_id: str) -> None:
    """Drop the entry of `run_id` (before its partitions are removed)."""
    _entry_path(root, run_id).unlink(missing_ok=True)


_parsed: dict[tuple[str, str], tuple[tuple[int, int], dict[str, Any]]] = {}
"""(lake, run_id) -> (the entry file's (mtime_ns, size), its entry): one ingest reads the
catalog more than once; an unchanged file is not parsed again."""


def _stat(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def _read_entry(root: Path, run_id: str, path: str) -> dict[str, Any] | None:
    stat = _stat(path)
    if stat is None:
        return None
    cached = _parsed.get((str(root), run_id))
    if cached is not None and cached[0] == stat:
        return cached[1]
    try:
        with open(path, encoding="utf-8") as handle:
            entry = json.load(handle)
    except (OSError, ValueError):
        return None
    _parsed[(str(root), run_id)] = (stat, entry)
    return entry


_unquoted: dict[str, str] = {}
"""A run folder's name -> its run id (unquote once per process)."""


def _run_ids(runs_folder: str) -> list[tuple[str, str]]:
    """(run id, folder name) of each run folder under `runs/`, by run id."""
    try:
        with os.scandir(runs_folder) as listed:
            names = [e.name for e in listed if e.name.startswith(PREFIX)]
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        if name == lake.SCHEMA_PARTITION:
            continue
        run_id = _unquoted.get(name)
        if run_id is None:
            run_id = _unquoted[name] = unquote(name[len(PREFIX) :])
        out.append((run_id, name))
    out.sort()
    return out


def entries(root: Path) -> list[dict[str, Any]]:
    """The entry of every run in the lake (replays included), rebuilt where stale or missing.
    Cost: one listing of `runs/`, a stat of each run's `runs` file and (unless parsed for that
    file already) a stat and a small JSON read of its entry; plain os.path strings, as
    pathlib's per-path cost dominated at 1,000 runs."""
    root = Path(root)
    base, folder = str(root), str(root / FOLDER)
    out = []
    for run_id, name in _run_ids(f"{base}/runs"):
        runs_stamp = _stat(f"{base}/runs/{name}/{lake.PART}")
        stamp = list(runs_stamp) if runs_stamp else None
        # an entry is a function of its runs file (run_inputs is written before it): one parsed
        # for this stamp needs no stat of its own file
        cached = _parsed.get((base, run_id))
        entry = None if cached is None else cached[1]
        if not _current(entry, stamp):
            path = f"{folder}/{PREFIX}{quote(run_id, safe='')}{SUFFIX}"
            entry = _read_entry(root, run_id, path)
        if not _current(entry, stamp):
            entry = refresh(root, run_id)
        if entry is not None:
            out.append(entry)
    return out


def _current(entry: dict[str, Any] | None, stamp: list[int] | None) -> bool:
    """Whether `entry` was made from the run's `runs` file as it is now, by this version."""
    return entry is not None and entry.get("runs_file") == stamp and entry.get("version") == VERSION


def facts_frame(entries: list[dict[str, Any]]) -> pl.DataFrame:
    """run_id and FACT_COLUMNS of `entries`, typed as the `runs` DDL types them (the frame
    queries.run_columns reads from the `runs` table)."""
    types = polars_schema("runs")
    columns: dict[str, list] = {c: [] for c in ("run_id", *FACT_COLUMNS)}
    for entry in entries:
        columns["run_id"].append(entry["run_id"])
        facts = entry["facts"]
        for column in FACT_COLUMNS:
            columns[column].append(facts.get(column))
    schema = {"run_id": pl.String, **{c: types[c] for c in FACT_COLUMNS}}
    schema["collected_at"] = pl.Int64
    frame = pl.DataFrame(columns, schema=schema)
    return frame.with_columns(pl.col("collected_at").cast(types["collected_at"])).sort("run_id")


def measured(root: Path) -> list[dict[str, Any]]:
    """Entries of measured runs (replays made by `replay` excluded)."""
    return [e for e in entries(root) if e.get("replay_of") is None]
