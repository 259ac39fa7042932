"""tau_k points of operator-latency tables: the `int_table_tau` relation
(sql/intermediate/int_table_tau.sql over the canonical table `latency_points`), in the columns of
`int_chunk_tau` plus `operator`, and what their fits depend on (for fit_store's fingerprints).
docs/latency_tables.md describes the layouts and the curves."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import duckdb
import polars as pl

from pipelines.store import queries

TABLE_PREFIX = "lt-"
"""Ids of latency tables (latency_points.run_id) start with this; run ids never do."""
RELATION = "int_table_tau"


def is_table_id(key: str) -> bool:
    return key.startswith(TABLE_PREFIX)


def table_tau_points(
    con: duckdb.DuckDBPyConnection, table_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Rows of int_table_tau: every table's, or those of `table_ids` only."""
    if not queries.relation_exists(con, RELATION) or (table_ids is not None and not table_ids):
        return pl.DataFrame()
    return queries.table_tau(con, table_ids)


def table_fit_inputs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per table and curve configuration: run_id (the table id), content_hash, a NULL
    segmentation and the configuration columns with `operator`. The content hash is one digest
    over every stored table, since a `layer` curve reads two files (attention and MLP): a
    changed table refits every table curve, never leaves one stale."""
    if not queries.relation_exists(con, RELATION):
        return pl.DataFrame()
    hashes = queries.latency_table_hashes(con, TABLE_PREFIX)
    if not hashes:
        return pl.DataFrame()
    digest = hashlib.sha256(repr(hashes).encode()).hexdigest()
    return queries.table_curve_configs(con).with_columns(
        pl.lit(digest).alias("content_hash"), pl.lit(None, pl.String).alias("segmentation")
    )
