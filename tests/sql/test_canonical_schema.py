"""One source for the canonical schema: the DDL of sql/schema (columns, types, `comment on`
descriptions); the Polars frame schemas, the warehouse and the Dagster descriptions agree."""

from __future__ import annotations

import polars as pl
import pytest

from pipelines.ingest.frames import RUN_TABLE_NAMES, SCHEMAS, conform, empty
from pipelines.store import open_store, queries
from pipelines.store.insert import insert_frame
from pipelines.store.schema import (
    CANONICAL_TABLES,
    canonical_tables,
    column_descriptions,
    polars_schema,
    table_description,
)


def test_every_table_and_column_is_described_in_the_ddl() -> None:
    tables = canonical_tables()
    assert tuple(tables) == CANONICAL_TABLES
    for name, table in tables.items():
        assert table_description(name), name
        undescribed = [c.name for c in table.columns if not c.description]
        assert not undescribed, f"{name}: no `comment on column` for {undescribed}"
        assert set(column_descriptions(name)) == {c.name for c in table.columns}


@pytest.mark.parametrize("table", RUN_TABLE_NAMES)
def test_frames_round_trip_through_the_warehouse_with_the_ddl_types(table) -> None:
    assert SCHEMAS[table] == polars_schema(table)
    con = open_store(":memory:").open()
    try:
        assert queries.table_columns(con, table) == list(SCHEMAS[table])
        row = {c: None for c in SCHEMAS[table]}
        for column in canonical_tables()[table].columns:
            if not column.nullable:
                row[column.name] = {"String": "x", "Boolean": True}.get(
                    str(SCHEMAS[table][column.name]), 1
                )
        frame = conform(table, pl.DataFrame([row], schema=SCHEMAS[table]))
        assert insert_frame(con, table, frame) == 1
        back = con.execute(f"select * from {table}").pl()
    finally:
        con.close()
    assert back.schema == empty(table).schema


def test_dagster_table_descriptions_come_from_the_ddl() -> None:
    from pipelines.defs.ingest.assets import INGEST_TABLES, TABLE_DESCRIPTIONS, canonical_tables

    assert {t: table_description(t) for t in INGEST_TABLES} == TABLE_DESCRIPTIONS
    specs = {key.path[-1]: spec for key, spec in canonical_tables.specs_by_key.items()}
    assert {t: specs[t].description for t in INGEST_TABLES} == TABLE_DESCRIPTIONS
