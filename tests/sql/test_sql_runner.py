"""The SQL runner: build order from the files' references, errors for cycles and unknown names,
every relation of sql/ built on connect, and no warehouse SQL outside the allowed modules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import polars as pl
import pytest

from pipelines.analysis.tau.tau_points import flag_partial_chunks
from pipelines.paths import SQL_DIR
from pipelines.store import open_store, queries
from pipelines.store import relations as runner
from pipelines.store.schema import CANONICAL_TABLES

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _layer(tmp_path: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_order_follows_the_references_whatever_the_file_order(tmp_path) -> None:
    root = _layer(
        tmp_path,
        {
            "marts/fct_a.sql": "select * from int_b join int_c using (run_id)",
            "intermediate/int_b.sql": "with x as (select * from int_c) select * from x",
            # a chain of USING joins over tables that do not exist: parsed, not bound
            "marts/fct_d.sql": "select * from int_b join int_c using (a) join runs using (a)",
            "intermediate/int_c.sql": "select run_id from stg_runs",
            "staging/stg_runs.sql": "select * from runs",
        },
    )
    relations = runner.discover(root)
    assert relations["int_b"].depends_on == {"int_c"}  # the CTE name x is not a relation
    assert relations["fct_a"].depends_on == {"int_b", "int_c"}
    assert relations["fct_d"].depends_on == {"int_b", "int_c", "runs"}
    order = runner.build_order(relations, CANONICAL_TABLES)
    assert order[:3] == ["stg_runs", "int_c", "int_b"] and set(order[3:]) == {"fct_a", "fct_d"}


def test_a_cycle_is_an_error(tmp_path) -> None:
    root = _layer(
        tmp_path,
        {
            "intermediate/int_a.sql": "select * from int_b",
            "intermediate/int_b.sql": "select * from int_a",
        },
    )
    with pytest.raises(runner.SqlLayerError, match="cycle"):
        runner.build_order(runner.discover(root), CANONICAL_TABLES)


def test_an_unknown_relation_is_an_error(tmp_path) -> None:
    root = _layer(tmp_path, {"marts/fct_a.sql": "select * from chunks join int_missing using (x)"})
    with pytest.raises(runner.SqlLayerError, match=r"unknown relation.*int_missing"):
        runner.build_order(runner.discover(root), CANONICAL_TABLES)


@pytest.mark.parametrize(
    ("relative", "why"),
    [("marts/Fct_A.sql", "lower-case"), ("marts/int_a.sql", "fct_"), ("staging/s.sql", "stg_")],
)
def test_names_are_lower_case_and_carry_their_layer_prefix(tmp_path, relative, why) -> None:
    root = _layer(tmp_path, {relative: "select 1 as one"})
    with pytest.raises(runner.SqlLayerError, match=why):
        runner.discover(root)


def test_every_file_of_sql_is_built_on_connect_and_read_only_sees_them() -> None:
    relations, order = runner.project_relations()
    files = {p.stem for layer in runner.LAYERS for p in (SQL_DIR / layer).glob("*.sql")}
    assert set(order) == files == set(relations)
    assert order.index("int_chunk_flags") < order.index("int_chunk_tau")
    assert order.index("int_chunk_tau") < order.index("fct_tau_by_chunk")
    con = open_store(":memory:").open()
    try:
        for name in order:
            assert queries.relation_exists(con, name), name
            queries.read_relation(con, name)  # binds and runs on the empty tables
    finally:
        con.close()


def test_read_only_connection_of_a_warehouse_without_views_gets_them(tmp_path) -> None:
    path = tmp_path / "old.duckdb"
    con = open_store(path).open()
    for name in reversed(runner.project_relations()[1]):
        con.execute(f"drop view {name}")  # as a warehouse written before the views existed
    con.close()
    reader = open_store(path).open(read_only=True)
    try:
        assert queries.measured_chunk_tau(reader).is_empty()
    finally:
        reader.close()


def test_partial_flag_of_a_frame_is_the_sql_rule() -> None:
    chunks = pl.DataFrame(
        {
            "run_id": ["a"] * 4 + ["b"] * 2,
            "vstage": [0] * 6,
            "request_id": ["r"] * 6,
            "chunk_idx": [0, 1, 2, 3, 0, 1],
            "tokens": [100, 100, 100, 30, 100, 100],
            "tau_ns": [1, 2, 3, 1, 1, 2],
        }
    )
    flagged = flag_partial_chunks(chunks).sort("run_id", "chunk_idx")
    assert flagged["is_partial"].to_list() == [False, False, False, True, False, False]
    assert flagged["is_last_chunk"].to_list() == [False, False, False, True, False, True]
    assert flagged["tau_ns"].to_list() == chunks["tau_ns"].to_list()  # passed through


# Modules that may hold SQL text with SELECT, and why (docs/sql_layer.md):
ALLOWED_SELECT = {
    "pipelines/store/queries.py": "the named warehouse queries",
    "pipelines/store/catalog.py": "DuckDB's own catalog (duckdb_columns, duckdb_views ...)",
    "pipelines/store/insert.py": "insert_frame appends a registered Arrow frame (a write)",
    "pipelines/store/duckdb_file.py": "one run's rows of a table, the relation a session gives",
    "pipelines/store/lake_layout.py": "the lake's views and per-run scans over read_parquet",
    "pipelines/bench/scale.py": "rewrites a copied runs partition (benchmark set-up)",
    "pipelines/store/parquet_lake.py": "COPY of a run's rows to Parquet",
    "pipelines/ingest/readers/ascend_db.py": "reads a profiler SQLite export (an input)",
    "pipelines/ingest/readers/trace_view.py": "read_json over an input trace",
    "pipelines/ingest/readers/csv_text.py": "read_csv over an input file",
    "pipelines/ingest/readers/kernel_details.py": "scans an input CSV view",
    "pipelines/ingest/readers/step_trace.py": "scans an input CSV view",
    "pipelines/ingest/readers/cluster.py": "scans an input CSV view",
    "pipelines/ingest/readers/json_keys.py": "json_keys over an input trace's raw entries",
    "pipelines/bench/ingest_children.py": "DuckDB's own read_json as a benchmark baseline",
    "pipelines/quality/check_queries.py": "counts and samples the rows a sql/quality check returns",
}
_SQL_SELECT = re.compile(r"\bselect\b", re.IGNORECASE)
_BUILDS = re.compile(r"\bcreate\s+(or\s+replace\s+)?(temp\s+)?(table|view)\b.*\bas\b", re.I)


def _sql_literals(path: Path) -> list[tuple[int, str]]:
    """String literals of a module (f-string parts included), docstrings left out."""
    tree = ast.parse(path.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_sql_selects_live_only_in_the_query_module_and_the_input_readers() -> None:
    found = []
    for path in sorted((PROJECT_ROOT / "pipelines").rglob("*.py")):
        relative = path.relative_to(PROJECT_ROOT).as_posix()
        for line, text in _sql_literals(path):
            is_query = _SQL_SELECT.search(text) and " from " in f" {text.lower()} "
            if is_query and relative not in ALLOWED_SELECT:
                found.append(f"{relative}:{line}: {text.strip()[:60]}")
            if _BUILDS.search(text) and relative != "pipelines/bench/ingest_children.py":
                found.append(f"{relative}:{line}: builds a relation: {text.strip()[:60]}")
    assert not found, "\n".join(found)


def test_the_scan_finds_an_inline_query(tmp_path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""select x from y (a docstring)"""\nq = "select a from runs"\n')
    assert _sql_literals(module) == [(2, "select a from runs")]
