"""The in-memory DuckDB connection the file readers scan with."""

from __future__ import annotations

import duckdb


def scratch_connection() -> duckdb.DuckDBPyConnection:
    """A fresh in-memory connection with DuckDB's progress bar off (it would draw on the
    terminal in the middle of `tracereplay ingest` output for long scans)."""
    con = duckdb.connect()
    con.execute("set enable_progress_bar = false")
    return con
