"""The import graph of pipelines/: no cycle (function-local imports counted), and the store
imports nothing above it (docs/store.md)."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pipelines

PACKAGE = Path(pipelines.__file__).parent
STORE_MAY_IMPORT = (
    "pipelines.store",
    "pipelines.paths",
    "pipelines.memory",
    "pipelines.profiler_names",
)


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the project modules its import statements name, at any depth; `from p import
    m` names module p.m when there is one, else p."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.append(full if full in modules else node.module)
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        return list(exc.args[1])
    return None


def test_the_check_finds_a_cycle(tmp_path: Path) -> None:
    package = tmp_path / "pipelines"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pipelines import b\n")
    (package / "b.py").write_text("def f():\n    from pipelines.a import x\n")
    graph = import_graph(package)
    assert graph["pipelines.a"] == {"pipelines.b"} and graph["pipelines.b"] == {"pipelines.a"}
    assert cycle_in(graph) is not None


def test_pipelines_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 150
    assert cycle_in(graph) is None


def test_the_store_imports_nothing_above_it() -> None:
    graph = import_graph()
    store = {name: deps for name, deps in graph.items() if name.startswith("pipelines.store")}
    assert len(store) >= 10
    upward = {
        name: sorted(d for d in deps if not d.startswith(STORE_MAY_IMPORT))
        for name, deps in store.items()
    }
    assert {name: deps for name, deps in upward.items() if deps} == {}
