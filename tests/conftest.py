"""Shared fixtures. Tests that read ../shared/traces/real skip when it is absent, unless
TRACEREPLAY_REQUIRE_REAL=1 (set by .ci/run under CI=true), in which case they fail."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path

import pytest

from pipelines.paths import REAL_TRACES_DIR

# The CLI's tables take the terminal's width, at most 120 columns. Tests read them as a user of a
# wide terminal would, under pytest and under pytest-xdist alike (xdist gives its workers
# COLUMNS=80 when it runs without a terminal).
os.environ["COLUMNS"] = "120"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): one worker per CPU this process may run on, at most 4 (each
    worker builds the session fixtures it needs, the quick demo warehouse among them: ~1 GB);
    a container's CPU count can be the host's. PYTEST_XDIST_AUTO_NUM_WORKERS overrides it, and
    `-n 0` runs everything in one process."""
    return max(1, min(4, len(os.sched_getaffinity(0))))


def _require_real() -> bool:
    return os.environ.get("TRACEREPLAY_REQUIRE_REAL", "") not in ("", "0", "false")


@pytest.fixture(scope="session")
def real_dir() -> Path:
    """Root of the shared real traces (../shared/traces/real)."""
    if not REAL_TRACES_DIR.is_dir():
        message = f"real traces not found at {REAL_TRACES_DIR}"
        if _require_real():
            pytest.fail(message + " and TRACEREPLAY_REQUIRE_REAL is set")
        pytest.skip(message)
    return REAL_TRACES_DIR


@pytest.fixture(scope="session")
def empty_warehouse_file(tmp_path_factory) -> Path:
    """A warehouse file holding the canonical schema and the derived views, built once per
    session (creating them takes ~0.5 s; reopening a copy ~0.05 s: the views carry the signature
    of the sql/ files they were built from, so an unchanged copy is not rebuilt)."""
    from pipelines.store import open_store

    path = tmp_path_factory.mktemp("empty-warehouse") / "warehouse.duckdb"
    open_store(path).open().close()
    return path


@pytest.fixture
def warehouse(tmp_path: Path, empty_warehouse_file: Path):
    """A fresh on-disk warehouse connection with the canonical schema (a copy of the session's
    empty warehouse, opened as every command opens one)."""
    from pipelines.store import open_store

    target = tmp_path / "warehouse.duckdb"
    shutil.copyfile(empty_warehouse_file, target)
    con = open_store(target).open()
    yield con
    con.close()


@pytest.fixture(scope="session")
def quick_demo_warehouse(tmp_path_factory) -> Path:
    """The warehouse of `tracereplay demo --quick`, built once per session for every test that
    only reads it (a test that changes it works on a copy). Without the demo's own pages
    (--no-dashboards: they write nothing to the warehouse, and took 12.1 of the demo's 38.9 s under
    load; tests/dashboards builds its site from this warehouse)."""
    from pipelines.cli import main

    out = tmp_path_factory.mktemp("quick-demo")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["demo", "--quick", "--no-dashboards", "--out", str(out), "--json"]) == 0
    return out / "warehouse.duckdb"
