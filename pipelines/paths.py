"""The one place where project paths and their environment overrides are resolved."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SQL_DIR = PROJECT_ROOT / "sql"
DATA_DIR = PROJECT_ROOT / "data"
RAW_DIR = DATA_DIR / "raw"
DEFAULT_WAREHOUSE = DATA_DIR / "warehouse.duckdb"
REAL_TRACES_DIR = PROJECT_ROOT.parent / "shared" / "traces" / "real"


def warehouse_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The explicit argument, else $TRACEREPLAY_WAREHOUSE, else data/warehouse.duckdb."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("TRACEREPLAY_WAREHOUSE")
    return Path(env) if env else DEFAULT_WAREHOUSE


def raw_dir() -> Path:
    """Folder the Dagster sensor watches for new run folders ($TRACEREPLAY_RAW_DIR overrides)."""
    env = os.environ.get("TRACEREPLAY_RAW_DIR")
    return Path(env) if env else RAW_DIR
