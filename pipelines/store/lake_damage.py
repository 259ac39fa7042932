"""Damaged files in a Parquet lake: found before any view reads them, so one bad file costs its
run (left out of the views, named on stderr) instead of every command.

A Parquet file starts and ends with the 4-byte magic `PAR1` and is at least 12 bytes long (magic,
footer length, magic: the Apache Parquet file format specification, "File format"). A file cut
short by a full disk or a killed copy has no closing magic; a file of another kind named
`*.parquet` has no opening one. A whole Parquet file of another schema (a foreign file written
over a partition's, or a stray one beside it) lacks columns of its table: its footer's column
names are compared with those of the table's zero-row schema file (`<key>=~schema/part.parquet`)
and a file missing any of them is damaged too (`foreign schema`), left out by its run like the
others; before, DuckDB failed every view that globbed it ("schema mismatch in glob").

The check runs on every open of the lake that makes views over its tables, incrementally: a
file found whole is remembered in `<lake>/_catalog/checked/<table>.json` by its path, size,
modification time and inode, and is read again only when one of them changes (a file rewritten
in place, truncated, or renamed over it: the writer's rename gives a new inode). So such an open
stats each partition folder and file (docs/lake.md "What an open costs" has the measurements); a
file added or changed since the last open is read as before. The record is a cache: lost (two
processes saving at once, a read-only lake) it only means files are read again, and a damaged
file is never in it. Ingest, which makes no view over the run tables, scans the quarantine only
and checks a stored run's files when it relies on that run (`run_damage`).

The writer never leaves such a file in a partition (every file is written aside and renamed in),
so a damaged file came from outside: a disk, a copy, a hand. Re-ingesting the run's folder
rewrites every partition of the run (pipelines.store.parquet_lake.write_partitions)."""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from pipelines.store.lake_layout import CATALOG, INCOMING, PART
from pipelines.store.schema import QUARANTINE, canonical_tables

WRITTEN_BEFORE_RUNS = ("ranks", "slices", "kernels", "comm_ops", "step_breakdown", "run_inputs")
"""Tables of which both writers (a whole-run write and per-rank ingest) put a file in a run's
partition before its `runs` file: a run with a `runs` file and no file of one of these lost it
(a file moved aside by hand, a partial copy of the lake)."""
MAGIC = b"PAR1"
SMALLEST = 12  # magic + 4-byte footer length + magic


@dataclass(frozen=True)
class DamagedFile:
    """One partition file no reader can open, and whose rows it held."""

    table: str
    key: str  # the run id (run tables) or the quarantine batch
    path: str
    reason: str


def file_damage(path: str) -> str | None:
    """Why the file at `path` cannot be a Parquet file, or None when its frame looks whole."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
            size = os.fstat(handle.fileno()).st_size
            if size < SMALLEST:
                return f"truncated: {size} bytes"
            handle.seek(size - 4)
            tail = handle.read(4)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if head != MAGIC:
        return "not a Parquet file (no PAR1 magic at its start)"
    if tail != MAGIC:
        return "truncated (no Parquet footer at its end)"
    return None


def foreign_columns(path: str, expected: frozenset[str]) -> str | None:
    """Why the whole Parquet file at `path` is not a file of a table with columns `expected`
    (the columns it lacks), or None when it has them all."""
    import pyarrow.parquet as pq  # only a new or changed file's footer is read

    try:
        present = set(pq.read_schema(path).names)  # 0.19 ms a file (polars: 0.59 ms)
    except Exception as exc:
        return f"unreadable Parquet footer ({str(exc).splitlines()[0][:120]})"
    lacking = sorted(expected - present)
    if not lacking:
        return None
    return (
        f"foreign schema: lacks {', '.join(lacking[:4])}{' ...' if len(lacking) > 4 else ''}"
        f" (has {', '.join(sorted(present)[:4])}{' ...' if len(present) > 4 else ''})"
    )


def _expected_columns(root: Path, table: str, key_name: str) -> frozenset[str] | None:
    """The column names of `table`'s zero-row schema file, None when it has none or it is
    unreadable (the schema check is then skipped, as before)."""
    import pyarrow.parquet as pq

    path = os.path.join(str(root), table, f"{key_name}~schema", PART)
    try:
        return frozenset(pq.read_schema(path).names)
    except Exception:
        return None


Stamp = list[int]
"""A file's [size, mtime_ns, inode] when it was found whole (lists: compared as JSON gives
them back, no conversion of thousands of entries on every open)."""
Folder = list
"""A partition folder's [mtime_ns, inode, {file name: Stamp or None}] (None: not found whole,
or too new to trust its stamp): while the folder's own stamp holds, no file was added, removed or
renamed in it, so its listing is not read again."""
RACY_NS = 2_000_000_000
"""A stamp is remembered only when its mtime is this much older than the scan (git's "racily
clean" rule): a file system with coarse timestamps could otherwise hide a change made in the
same tick as the check."""
RECORD_FOLDER = "checked"
"""Under the catalog folder: one record per table, `<table>.json` = {partition folder: Folder}
(a scan of one table, the quarantine for ingest, reads and writes that table's record only)."""

LEGACY = "files"
"""The record of every table in one file (`checked/files.json`), before the per-table records."""

_remembered: dict[tuple[str, str], tuple[tuple[int, int], dict[str, Folder]]] = {}
"""(lake, table) -> (the record file's (mtime_ns, size), its folders): parsed once per process."""


def _record_path(root: Path, table: str) -> str:
    return os.path.join(str(root), CATALOG, RECORD_FOLDER, f"{table}.json")


def _recalled(root: Path, table: str) -> dict[str, Folder]:
    """What an earlier scan found in `table` (empty when there is no record or it cannot be
    read; an entry of the wrong shape only fails to match, so its files are read again)."""
    path = _record_path(root, table)
    try:
        info = os.stat(path)
        cached = _remembered.get((str(root), table))
        if cached is not None and cached[0] == (info.st_mtime_ns, info.st_size):
            return cached[1]
        with open(path, encoding="utf-8") as handle:
            folders = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(folders, dict):
        return {}
    _remembered[(str(root), table)] = ((info.st_mtime_ns, info.st_size), folders)
    return folders


def _remember(root: Path, table: str, folders: dict[str, Folder]) -> None:
    """Save the table's record (written aside and renamed in, like every lake file); a lake that
    cannot be written (read-only, full disk) keeps the old one: its files are read again."""
    target = _record_path(root, table)
    aside = os.path.join(str(root), CATALOG, INCOMING, f"{uuid.uuid4().hex}.json")
    try:
        os.makedirs(os.path.dirname(aside), exist_ok=True)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # one json.dumps: json.dump writes the encoder's chunks one by one (3-4x slower)
        text = json.dumps(folders, separators=(",", ":"))
        with open(aside, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(aside, target)
        info = os.stat(target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(aside)
        return
    _remembered[(str(root), table)] = ((info.st_mtime_ns, info.st_size), folders)


def _legacy(root: Path, table: str) -> dict[str, Folder]:
    """The table's folders in the one-file record of earlier versions (`checked/files.json`,
    keyed `<table>/<folder>`), so an upgraded lake is not read again file by file."""
    folders = _recalled(root, LEGACY)
    prefix = f"{table}/"
    return {k[len(prefix) :]: v for k, v in folders.items() if k.startswith(prefix)}


def forget(root: Path) -> None:
    """Drop what the scans of `root` remember (the next scan reads every file)."""
    for key in [k for k in _remembered if k[0] == str(root)]:
        del _remembered[key]
    folder = os.path.join(str(root), CATALOG, RECORD_FOLDER)
    try:
        with os.scandir(folder) as listed:
            names = [e.name for e in listed if e.name.endswith(".json")]
    except OSError:
        names = []
    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))


def _parquet_names(folder: str) -> list[str]:
    with os.scandir(folder) as listed:
        return sorted(e.name for e in listed if e.name.endswith(".parquet"))


def _unchanged(folder: Folder, path: str) -> bool:
    """Whether every file remembered in `folder` (whose own stamp holds) keeps its stamp: one
    stat a file, no read."""
    for name, stamp in folder[2].items():
        if stamp is None:
            return False
        try:
            info = os.stat(f"{path}/{name}")
        except OSError:
            return False
        if info.st_mtime_ns != stamp[1] or info.st_size != stamp[0] or info.st_ino != stamp[2]:
            return False
    return True


class _Expected:
    """The column names of a table's zero-row schema file, read when a file of the table is
    first checked."""

    def __init__(self, root: Path, table: str, key_name: str) -> None:
        self.root, self.table, self.key_name = root, table, key_name
        self.columns: frozenset[str] | None = None

    def get(self) -> frozenset[str]:
        if self.columns is None:
            self.columns = _expected_columns(self.root, self.table, self.key_name) or frozenset()
        return self.columns


def _file_reason(file: str, folder: str, expected: _Expected) -> str | None:
    """Why one partition file is damaged (magic, then the footer's columns), None when whole."""
    reason = file_damage(file)
    if reason is None and not folder.endswith("=~schema"):
        columns = expected.get()
        reason = foreign_columns(file, columns) if columns else None
    return reason


def _scan_table(root: Path, table: str, settled: int, out: list[DamagedFile]) -> set[str] | None:
    """Check the partitions of one table against its record (appending damaged files to `out`,
    in path order) and save the record when it changed. Returns the partition folders holding
    at least one Parquet file (None: the table has no folder)."""
    key_name = "batch=" if table == QUARANTINE else "run_id="
    base = os.path.join(str(root), table)
    try:
        with os.scandir(base) as listed:
            folders = sorted(e.name for e in listed if e.name.startswith(key_name))
    except (FileNotFoundError, NotADirectoryError):
        return None
    known = _recalled(root, table)
    changed = False
    if not known:
        known = _legacy(root, table)
        changed = bool(known)  # saved in the table's own record
    seen: dict[str, Folder] = {}
    held: set[str] = set()
    expected = _Expected(root, table, key_name)
    for folder in folders:
        path = f"{base}/{folder}"
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        before = known.get(folder)
        valid = isinstance(before, list) and len(before) == 3 and isinstance(before[2], dict)
        if valid and before[0] == info.st_mtime_ns and before[1] == info.st_ino:
            # no file added, removed or renamed in the folder since the record
            if before[2]:
                held.add(folder)
            if _unchanged(before, path):
                seen[folder] = before  # the common case: nothing read, nothing rebuilt
                continue
            names, stamps = sorted(before[2]), before[2]
        else:
            try:
                names = _parquet_names(path)
            except (FileNotFoundError, NotADirectoryError):
                continue
            stamps = before[2] if valid else {}
            if names:
                held.add(folder)
        checked: dict[str, Stamp | None] = {}
        for name in names:
            file = f"{path}/{name}"
            try:
                stat = os.stat(file)
                stamp = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
            except OSError:
                stamp = None
            if stamp is not None and stamps.get(name) == stamp:
                checked[name] = stamp
                continue
            reason = _file_reason(file, folder, expected)
            if reason is not None:
                out.append(DamagedFile(table, unquote(folder[len(key_name) :]), file, reason))
            trusted = reason is None and stamp is not None and stamp[1] < settled
            checked[name] = stamp if trusted else None
        # a folder changed within RACY_NS of this scan is listed again next time
        mtime = info.st_mtime_ns if info.st_mtime_ns < settled else -1
        seen[folder] = [mtime, info.st_ino, checked]
        changed = changed or seen[folder] != before
    if changed or len(seen) != len(known):
        _remember(root, table, seen)
    return held


def damaged_files(root: Path, tables: Iterable[str] | None = None) -> list[DamagedFile]:
    """Every damaged partition file of the lake at `root` (of `tables` only, when given), in
    path order, and every run whose `runs` file has no file of a WRITTEN_BEFORE_RUNS table
    (when every table is scanned).

    A folder whose (mtime, inode) is the one remembered is not listed again, and a file whose
    (size, mtime, inode) is the one remembered is not read again: an unchanged lake costs a
    stat per folder and per file, a changed one also reads its new or changed files."""
    out: list[DamagedFile] = []
    settled = time.time_ns() - RACY_NS
    wanted = None if tables is None else set(tables)
    held: dict[str, set[str]] = {}
    for table in canonical_tables():
        if wanted is None or table in wanted:
            held[table] = _scan_table(root, table, settled, out) or set()
    if wanted is None:
        out += _missing(root, held)
    return out


def _missing(root: Path, held: dict[str, set[str]]) -> list[DamagedFile]:
    """A run with a `runs` file and no file of one of WRITTEN_BEFORE_RUNS lost it."""
    out = []
    for folder in sorted(held.get("runs", set())):
        for table in WRITTEN_BEFORE_RUNS:
            if folder not in held.get(table, set()):
                path = os.path.join(str(root), table, folder)
                reason = "missing: the run's partition holds no file of this table"
                out.append(DamagedFile(table, unquote(folder[len("run_id=") :]), path, reason))
    return out


def run_damage(root: Path, run_id: str) -> list[DamagedFile]:
    """The damaged files of one run: every file of its partitions read (magic and footer, as the
    scan reads a new file) and the missing check, with no record and no other run's folder:
    O(the run's files), for a writer that relies on one stored run without scanning the lake
    (pipelines.store.parquet_lake: ingest finding a run unchanged)."""
    out: list[DamagedFile] = []
    held: dict[str, set[str]] = {}
    folder = f"run_id={quote(run_id, safe='')}"
    for table in canonical_tables():
        if table == QUARANTINE:
            continue
        path = os.path.join(str(root), table, folder)
        try:
            names = _parquet_names(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if names:
            held[table] = {folder}
        expected = _Expected(root, table, "run_id=")
        for name in names:
            file = f"{path}/{name}"
            reason = _file_reason(file, folder, expected)
            if reason is not None:
                out.append(DamagedFile(table, run_id, file, reason))
    return out + _missing(root, held)


def left_out(damaged: list[DamagedFile]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(run ids, quarantine batches) the views leave out because a file of theirs is damaged."""
    runs = sorted({d.key for d in damaged if d.table != QUARANTINE})
    batches = sorted({d.key for d in damaged if d.table == QUARANTINE})
    return tuple(runs), tuple(batches)
