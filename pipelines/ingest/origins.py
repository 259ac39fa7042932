"""Which warehouse runs came from a partition's folder (runs.origin holds resolved paths)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from pipelines.store import queries


def runs_under(con: duckdb.DuckDBPyConnection, folder: Path) -> list[str]:
    """run_ids whose origin is `folder` (resolved) or lies inside it, sorted."""
    root = str(folder.resolve())
    return queries.run_ids_under(con, root)
