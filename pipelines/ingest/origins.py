"""Which warehouse runs came from a partition's folder (runs.origin holds resolved paths)."""

from __future__ import annotations

from pathlib import Path

import duckdb


def runs_under(con: duckdb.DuckDBPyConnection, folder: Path) -> list[str]:
    """run_ids whose origin is `folder` (resolved) or lies inside it, sorted."""
    root = str(folder.resolve())
    rows = con.execute(
        "select run_id from runs where origin = ? or starts_with(origin, ?) order by run_id",
        [root, root.rstrip("/") + "/"],
    ).fetchall()
    return [row[0] for row in rows]
