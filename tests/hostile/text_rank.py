"""A writable copy of the real msinsight Level1 rank 0 text export (read in place under
../shared/traces/real), for the hostile cases that change one of its files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

TEXT = Path("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")


def text_rank_copy(real_dir: Path, dest: Path) -> Path:
    """The rank folder copied under `dest` (files 0644: the shared copy is read-only), or a skip
    when the real sets are not there."""
    source = real_dir / TEXT
    if not source.is_dir():
        pytest.skip(f"{source} not found")
    shutil.copytree(source, dest / source.name)
    for path in dest.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest / source.name
