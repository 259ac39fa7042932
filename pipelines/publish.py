"""Atomic publishing of a written run folder into the raw folder.

A run is written to a hidden sibling (`.staging-<name>`, which the raw-folder sensor never treats
as a run: pipelines.ingest.folders.usable_key) and moved into place only when its bytes differ
from what is there, so a watcher never sees a half-written folder and re-publishing unchanged
content leaves the folder, its modification times and its signature untouched. A folder that the
simulator did not write (no profiler_metadata.json naming it) is never replaced.
"""

from __future__ import annotations

import filecmp
import json
import shutil
from pathlib import Path
from typing import Literal

SIMULATOR_MARK = "tracereplay"  # profiler_metadata.json "simulator" (pipelines.sim.writers_ascend)

Status = Literal["written", "replaced", "unchanged"]


class NotOurFolder(Exception):
    """The target folder exists and was not written by the simulator: it is left alone."""


def staging_folder(final: Path) -> Path:
    """The hidden sibling a run is written to before it is published as `final`."""
    return final.with_name(f".staging-{final.name}")


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def same_tree(a: Path, b: Path) -> bool:
    """Whether two folders hold the same files with the same bytes."""
    names = _files(a)
    if names != _files(b):
        return False
    return all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def written_by_simulator(folder: Path) -> bool:
    """Whether every profiler_metadata.json under `folder` names this simulator."""
    found = list(folder.rglob("profiler_metadata.json"))
    for path in found:
        try:
            if json.loads(path.read_text()).get("simulator") != SIMULATOR_MARK:
                return False
        except (OSError, ValueError):
            return False
    return bool(found)


def publish(staged: Path, final: Path) -> Status:
    """Move a staged run folder into place: 'written', 'replaced' or 'unchanged'.
    Raises NotOurFolder (and drops the staged copy) when `final` is someone else's folder."""
    if not final.exists():
        staged.rename(final)
        return "written"
    if same_tree(staged, final):
        shutil.rmtree(staged)
        return "unchanged"
    if not written_by_simulator(final):
        shutil.rmtree(staged)
        raise NotOurFolder(f"{final} exists and was not written by the simulator: not replacing it")
    old = final.with_name(f".old-{final.name}")
    shutil.rmtree(old, ignore_errors=True)
    final.rename(old)
    staged.rename(final)
    shutil.rmtree(old)
    return "replaced"
