"""Fixtures of the code-location tests: ephemeral instance, tmp resources, tiny simulated runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from pipelines.defs.resources import RawDirResource, StoreResource
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt


def write_tiny_run(folder: Path, seed: int = 0) -> list[Path]:
    """A small simulated 2-rank CPP run (4 chunks) written as torch_npu text exports."""
    result = simulate(
        [16384], "cpp", model="llama3-8b", chunk_size=4096, pp=2, noise=0.03, seed=seed
    )
    return write_ascend_pt(result, folder)


def metadata_by_key(result: dg.ExecuteInProcessResult, node: str) -> dict[str, dict[str, Any]]:
    """Materialisation metadata values of one step, per asset key."""
    return {
        m.asset_key.to_user_string(): {k: v.value for k, v in m.metadata.items()}
        for m in result.asset_materializations_for_node(node)
    }


@pytest.fixture
def instance() -> dg.DagsterInstance:
    with dg.DagsterInstance.ephemeral() as inst:
        yield inst


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    folder = tmp_path / "raw"
    folder.mkdir()
    return folder


@pytest.fixture
def resources(tmp_path: Path, raw: Path) -> dict[str, Any]:
    return {
        "warehouse": StoreResource(path=str(tmp_path / "warehouse.duckdb")),
        "raw_dir": RawDirResource(path=str(raw), settle_seconds=0),
    }
