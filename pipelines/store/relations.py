"""The one runner of the derived SQL relations: sql/{staging,intermediate,marts}/<name>.sql.

Each file is one SELECT and defines one relation named after the file (lower-case). A relation's
dependencies are the relations its SELECT reads, as DuckDB's own parser reports them
(`json_serialize_sql`, common table expressions excluded); each must be a
canonical table (sql/schema) or another derived relation, else `SqlLayerError`. `build` creates
the relations as views in dependency order (`graphlib`; a cycle is a `SqlLayerError`), so a view
always shows the canonical tables as they are now. docs/sql_layer.md describes the layers.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any

import duckdb

from pipelines.paths import SQL_DIR
from pipelines.store.catalog import catalog_tables, stored_view_names, stored_views_signature
from pipelines.store.duck import scratch_connection
from pipelines.store.schema import CANONICAL_TABLES

LAYERS = ("staging", "intermediate", "marts")
"""Layers of derived relations, each a folder of sql/ (sql/schema holds the canonical DDL)."""
LAYER_PREFIXES = {"staging": ("stg_",), "intermediate": ("int_",), "marts": ("fct_", "dim_")}
_NAME = re.compile(r"[a-z][a-z0-9_]*")


class SqlLayerError(Exception):
    """The SQL files do not form a buildable layer (bad name, unknown relation, cycle)."""


@dataclass(frozen=True)
class Relation:
    """One derived relation: its file, its SELECT and the relations the SELECT reads."""

    name: str
    layer: str
    path: Path
    select: str
    depends_on: frozenset[str]


def read_relation(path: Path, layer: str) -> Relation:
    """The relation defined by `path` (sql/<layer>/<name>.sql). Raises SqlLayerError for a
    name that is not lower-case snake case or lacks its layer's prefix."""
    name = path.stem
    if not _NAME.fullmatch(name):
        raise SqlLayerError(f"{path}: relation names are lower-case snake case")
    if not name.startswith(LAYER_PREFIXES[layer]):
        prefixes = " or ".join(LAYER_PREFIXES[layer])
        raise SqlLayerError(f"{path}: a {layer} relation is named {prefixes}...")
    select = path.read_text().strip().rstrip(";")
    return Relation(name, layer, path, select, frozenset(referenced_tables(select, path)))


def referenced_tables(select: str, where: Path | str = "query") -> set[str]:
    """Names of the tables and views `select` reads, from DuckDB's parse tree
    (`json_serialize_sql`: parsed, not bound, so the tables need not exist); names of common
    table expressions are left out. Raises SqlLayerError when DuckDB cannot parse it. Parsed on
    a cursor of this thread's scratch database: a database of its own per file cost ~20 ms, 0.45 s
    for the sql/ files a fresh warehouse's views are built from (cProfile of an ingest)."""
    scratch = scratch_connection()
    try:
        # a literal, not a bound parameter: binding a Python value makes DuckDB import pandas
        literal = "'" + select.replace("'", "''") + "'"
        tree = json.loads(scratch.execute(f"select json_serialize_sql({literal})").fetchone()[0])
    finally:
        scratch.close()
    if tree.get("error"):
        raise SqlLayerError(f"{where}: {tree.get('error_message', 'not a SELECT DuckDB parses')}")
    tables: set[str] = set()
    ctes: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE":
                tables.add(node["table_name"].lower())
            cte_map = node.get("cte_map")
            if isinstance(cte_map, dict):
                ctes.update(entry["key"].lower() for entry in cte_map.get("map", []))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return tables - ctes


def discover(sql_dir: Path = SQL_DIR) -> dict[str, Relation]:
    """Every derived relation under `sql_dir`, by name. Raises SqlLayerError when two files
    define the same name."""
    relations: dict[str, Relation] = {}
    for layer in LAYERS:
        for path in sorted((sql_dir / layer).glob("*.sql")):
            relation = read_relation(path, layer)
            if relation.name in relations:
                raise SqlLayerError(
                    f"{path}: {relation.name} is also {relations[relation.name].path}"
                )
            relations[relation.name] = relation
    return relations


def build_order(relations: dict[str, Relation], sources: tuple[str, ...]) -> list[str]:
    """Names of `relations` so that each comes after every relation it reads. `sources`: the
    tables that exist already (the canonical tables). Raises SqlLayerError for a reference to
    something that is neither, and for a cycle."""
    known = set(relations) | set(sources)
    graph: dict[str, set[str]] = {}
    for name, relation in relations.items():
        unknown = sorted(relation.depends_on - known)
        if unknown:
            raise SqlLayerError(f"{relation.path}: reads unknown relation(s) {', '.join(unknown)}")
        graph[name] = {d for d in relation.depends_on if d in relations}
    try:
        return list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise SqlLayerError(
            f"relations read each other in a cycle: {' -> '.join(exc.args[1])}"
        ) from exc


@cache
def project_relations() -> tuple[dict[str, Relation], tuple[str, ...]]:
    """The project's relations (sql/) and their build order, read once per process."""
    relations = discover(SQL_DIR)
    return relations, tuple(build_order(relations, CANONICAL_TABLES))


def upstream(relations: dict[str, Relation], targets: list[str]) -> set[str]:
    """`targets` and every derived relation they read, directly or not."""
    seen: set[str] = set()
    stack = list(targets)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        if name not in relations:
            raise SqlLayerError(f"no relation {name} under sql/")
        seen.add(name)
        stack.extend(d for d in relations[name].depends_on if d in relations)
    return seen


def build(
    con: duckdb.DuckDBPyConnection,
    targets: list[str] | None = None,
    *,
    temporary: bool = False,
) -> list[str]:
    """Create (or replace) the derived relations as views, in dependency order: all of them, or
    `targets` and what they read. `temporary`: temp views, which a read-only connection may
    create and which hide the stored views of the same name for this connection only.
    Returns the names built, in order."""
    relations, order = project_relations()
    wanted = upstream(relations, targets) if targets is not None else set(order)
    kind = "temp view" if temporary else "view"
    built = []
    stale = set() if temporary else stale_tables(con, wanted)
    for name in order:
        if name in wanted:
            if name in stale:  # a derived relation an older version stored as a table
                con.execute(f"drop table {name}")
            con.execute(f"create or replace {kind} {name} as {relations[name].select}")
            built.append(name)
    return built


def stale_tables(con: duckdb.DuckDBPyConnection, names: set[str]) -> set[str]:
    """Those of `names` that exist as base tables (not views) in the connection's schema."""
    return {table for table, _ in catalog_tables(con)} & names


VIEWS_SIGNATURE_TABLE = "views_signature"
"""The table holding the signature (views_signature) a warehouse file's stored views were built
for."""


@cache
def _sql_digest() -> str:
    """sha256 over every file under sql/ (canonical DDL and derived relations), once a process."""
    digest = hashlib.sha256()
    for path in sorted(SQL_DIR.rglob("*.sql")):
        digest.update(str(path.relative_to(SQL_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def views_signature(lake_root: Path | None = None) -> str:
    """What a warehouse file's stored views depend on: every file under sql/ and, for a lake's
    warehouse file, the lake's resolved path. The stored views are current when it matches, so
    opening the warehouse rebuilds nothing: rebuilding every view cost ~0.1 s a connection,
    which `tracereplay ingest` opens once per run (docs/bench_ingest.md "Many small runs"), and a
    lake's views bind every run's files (O(history), docs/lake.md)."""
    # lake:2 = the lake's views bind to the zero-row schema file first (lake_layout.view_sql)
    where = "file" if lake_root is None else f"lake:2:{Path(lake_root).resolve()}"
    return hashlib.sha256(f"{where}\n{_sql_digest()}".encode()).hexdigest()


def views_current(con: duckdb.DuckDBPyConnection, signature: str) -> bool:
    """Whether the stored derived views were built for `signature` and are all there."""
    if stored_views_signature(con, VIEWS_SIGNATURE_TABLE) != signature:
        return False
    return set(project_relations()[1]) <= stored_view_names(con)


def store_views_signature(con: duckdb.DuckDBPyConnection, signature: str) -> None:
    """Record `signature` as the one the stored views were built for."""
    con.execute(f'create or replace table "{VIEWS_SIGNATURE_TABLE}" (signature varchar)')
    con.execute(f"insert into \"{VIEWS_SIGNATURE_TABLE}\" values ('{signature}')")  # hex only
