"""The raw folder as the sensor sees it: one run folder per sub-folder, with a content signature.

The signature is cheap (names, sizes and modification times, no file contents): it decides when
a folder is re-ingested; the warehouse's own content hash still decides whether rows change.
"""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from pipelines.paths import printable, stored_path

# Dagster refuses partition keys holding these (its INVALID_PARTITION_SUBSTRINGS)
_BAD_KEY_PARTS = ("...", "\a", "\b", "\f", "\n", "\r", "\t", "\v", "\0")


@dataclass(frozen=True)
class FolderState:
    """One run folder: its partition key, content signature, size and newest modification."""

    key: str
    path: Path
    signature: str
    files: int
    bytes: int
    newest_mtime: float


def usable_key(name: str) -> bool:
    """Whether a folder name can be a partition key (not hidden, no characters Dagster refuses,
    UTF-8 text: a name with other bytes holds surrogates in Python)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return (
        bool(name)
        and not name.startswith((".", "_"))
        and not any(part in name for part in _BAD_KEY_PARTS)
    )


def folder_state(path: Path) -> FolderState:
    """Signature over (relative path, size, mtime_ns) of every file under `path`."""
    digest = hashlib.sha256()
    files = size = 0
    newest = 0.0
    for folder, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names):
            file = Path(folder) / name
            try:
                stat = file.stat()
            except OSError:
                continue  # vanished or a dangling link: the next tick sees the settled state
            rel = file.relative_to(path).as_posix()
            digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
            files += 1
            size += stat.st_size
            newest = max(newest, stat.st_mtime)
    return FolderState(path.name, path, digest.hexdigest()[:16], files, size, newest)


def unusable_folders(root: Path) -> list[Path]:
    """Sub-folders of `root` that cannot be partitions although they are not hidden (a name
    with a newline, a TAB, `...`, a `/`-like character Dagster refuses, bytes that are not
    UTF-8): the sensor names each in its log instead of passing it over in silence."""
    if not root.is_dir():
        return []
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and not p.name.startswith((".", "_")) and not usable_key(p.name)
    )


def root_problem(root: Path) -> str | None:
    """Why `root` cannot be watched (missing, not a folder), or None: the sensor said only "no
    new or changed run folder" for a raw folder that was a file or a typo."""
    if root.is_dir():
        return None
    if root.exists():
        return f"the raw folder {printable(stored_path(root))} is not a folder"
    return f"the raw folder {printable(stored_path(root))} does not exist"


def not_run_folders(root: Path) -> list[tuple[Path, str]]:
    """Entries directly under `root` that are neither run folders nor hidden, with why: a file
    (a trace dropped beside the run folders), a broken link, a link loop. The sensor logs each
    (they were passed over without a word)."""
    if not root.is_dir():
        return []
    found = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if entry.is_dir():
            continue
        if not entry.is_symlink():
            why = "a file, not a run folder: put it in a sub-folder of its own"
        else:
            try:
                os.stat(entry)
                why = "a link to a file, not to a run folder"
            except OSError as exc:
                why = "a link loop" if exc.errno == errno.ELOOP else "a broken link"
        found.append((entry, why))
    return found


def run_folders(root: Path) -> list[Path]:
    """Sub-folders of `root` (links to folders included) that can be partitions, sorted."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if usable_key(p.name) and p.is_dir())
