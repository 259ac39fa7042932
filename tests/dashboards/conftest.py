"""A small simulated warehouse (`tracereplay demo --quick`: 3 models, CPP at 128K,
3 repeats, replays under cpp / vpp / vpp_pack) and its dashboard site, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_warehouse(quick_demo_warehouse: Path) -> Path:
    """The session's quick demo warehouse (tests/conftest.py), shared, never changed in place."""
    return quick_demo_warehouse


@pytest.fixture(scope="session")
def demo_site(demo_warehouse, tmp_path_factory):
    from dashboards.site import build_site
    from pipelines.store import open_store

    out = tmp_path_factory.mktemp("dash-site")
    con = open_store(demo_warehouse).open(read_only=True)
    try:
        return build_site(con, None, out)
    finally:
        con.close()
