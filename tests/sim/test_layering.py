"""sim/ simulates and writes traces: it imports no reader, warehouse or replay code, and the readers
import nothing from sim/ or replay/ (shared names live in pipelines/vocabulary/profiler_names.py,
the overlap derivation in pipelines/vocabulary/overlap.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pipelines

PACKAGE = Path(pipelines.__file__).parent
SIM_FORBIDDEN = (
    "pipelines.ingest",
    "pipelines.replay",
    "pipelines.store",
    "pipelines.analysis",
    "pipelines.defs",
    "duckdb",
    "dagster",
)
INGEST_FORBIDDEN = ("pipelines.sim", "pipelines.replay")
STORE_FORBIDDEN = (
    "pipelines.ingest",
    "pipelines.analysis",
    "pipelines.sim",
    "pipelines.replay",
    "pipelines.defs",
    "pipelines.cli",
    "pipelines.demo",
    "dagster",
)


def imported_modules(source: str) -> set[str]:
    """Every module an import statement of `source` names, at any depth (function-local too)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def violations(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    out = {}
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        bad = sorted(
            m
            for m in imported_modules(path.read_text(encoding="utf-8"))
            if any(m == f or m.startswith(f + ".") for f in forbidden)
        )
        if bad:
            out[path.name] = bad
    return out


def test_imports_are_found_at_any_depth() -> None:
    source = "import duckdb\ndef f():\n    from pipelines.ingest.readers.hccl import P2P_REGEX\n"
    assert {"duckdb", "pipelines.ingest.readers.hccl"} <= imported_modules(source)
    assert "pipelines.replay" in imported_modules("from pipelines import replay")
    assert imported_modules("from . import sibling") == set()  # relative: not a layer name


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [("sim", SIM_FORBIDDEN), ("ingest", INGEST_FORBIDDEN), ("store", STORE_FORBIDDEN)],
)
def test_layer_imports_stay_inside_their_layer(folder: str, forbidden: tuple[str, ...]) -> None:
    assert len(list((PACKAGE / folder).rglob("*.py"))) > 5
    assert violations(folder, forbidden) == {}
