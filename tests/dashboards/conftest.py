"""A small simulated warehouse (`tracereplay demo --quick`: 3 models, CPP at 128K,
3 repeats, replays under cpp / vpp / vpp_pack) and its dashboard site, built once per session."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from pipelines.cli import main


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dash-demo")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["demo", "--quick", "--no-dashboards", "--out", str(out), "--json"]) == 0
    return out / "warehouse.duckdb"


@pytest.fixture(scope="session")
def demo_site(demo_warehouse, tmp_path_factory):
    from dashboards.site import build_site
    from pipelines import warehouse

    out = tmp_path_factory.mktemp("dash-site")
    con = warehouse.connect(demo_warehouse, read_only=True)
    try:
        return build_site(con, None, out)
    finally:
        con.close()
