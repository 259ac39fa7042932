"""A copy of the real SQLite export's rank (msinsight Level1 rank 0, read in place under the
real traces folder) with one SQL statement applied: the hostile rounds' one bad value in an
otherwise good `ascend_pytorch_profiler_0.db`."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

DB_RANK = Path("msinsight/test/data/pytorch/db/level1/rank0_ascend_pt")


def rank_with_sql(real_dir: Path, tmp_path: Path, sql: str) -> Path:
    """`tmp_path/rank0_ascend_pt`: the real rank with `sql` run on its database (skipped where
    the real traces are absent)."""
    if not (real_dir / DB_RANK).is_dir():
        pytest.skip(f"{real_dir / DB_RANK} not found")
    rank = tmp_path / "rank0_ascend_pt"
    shutil.copytree(real_dir / DB_RANK, rank)
    db = rank / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    db.chmod(0o644)
    con = sqlite3.connect(db)
    con.execute(sql)
    con.commit()
    con.close()
    return rank
