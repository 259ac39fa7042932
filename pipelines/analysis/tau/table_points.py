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

CONTEXT_UNIT = 1024
DEFAULT_CONTEXTS = (64 * CONTEXT_UNIT, 128 * CONTEXT_UNIT, 256 * CONTEXT_UNIT, 512 * CONTEXT_UNIT)
"""Request lengths (tokens) a table curve is judged at besides its whole range: the VPP paper's
long-context sequences, 64K-512K (issue 32 states DSA's tau_K/tau_0 at 128K); a length at or past
a curve's whole range adds nothing (docs/tau_k.md §4 "Judged at request lengths")."""
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


def at_contexts(frame: pl.DataFrame, contexts: Sequence[int]) -> pl.DataFrame:
    """`frame` and, for each table curve (run id `lt-...`) and each request length L in
    `contexts` shorter than the curve's whole range (`seq_len`, the longest prefix + chunk
    measured), the same curve read as a request of L tokens: its points of chunks that end
    within L ((chunk_idx + 1) * chunk_size <= L; with no `chunk_idx`, a frame of configurations:
    every row) with `seq_len` = L. A run's rows are never copied: a run measured one request
    length. The rows of one length are one more curve (seq_len is a curve key)."""
    if frame.is_empty() or not contexts:
        return frame
    table = pl.col("run_id").str.starts_with(TABLE_PREFIX)
    ends = (
        (pl.col("chunk_idx") + 1) * pl.col("chunk_size")
        if "chunk_idx" in frame.columns
        else pl.lit(0)
    )
    dtype = frame.schema["seq_len"]
    cuts = [
        frame.filter(table & (pl.col("seq_len") > length) & (ends <= length)).with_columns(
            pl.lit(length, dtype).alias("seq_len")
        )
        for length in sorted(set(contexts))
    ]
    return pl.concat([frame, *cuts], how="vertical")


def parse_contexts(text: str) -> tuple[int, ...]:
    """'64K,128K,1M' (K = 1,024 tokens, M = 1,024 K, or plain tokens) as token counts; 'none':
    no request length but the whole range. ValueError on anything else."""
    if text.strip().lower() == "none":
        return ()
    lengths = []
    for part in text.split(","):
        part = part.strip().upper()
        unit = {"K": CONTEXT_UNIT, "M": CONTEXT_UNIT * CONTEXT_UNIT}.get(part[-1:], 1)
        digits = part[:-1] if unit > 1 else part
        if not (digits.isascii() and digits.isdigit()) or int(digits) <= 0:
            raise ValueError(f"not a request length: {part!r} (e.g. 128K, 1M, 131072)")
        lengths.append(int(digits) * unit)
    return tuple(sorted(set(lengths)))


def request_chunks(seq_len: int | None, chunk_size: int | None) -> int | None:
    """Chunks of a request of `seq_len` tokens at `chunk_size` (None when either is unknown):
    a table curve's N, which its measured chunk indices on a gapped grid (aiconfigurator's
    prefixes 0, 1K, 2K, 4K, 8K, 16K, ...) need not reach."""
    if not seq_len or not chunk_size:
        return None
    return int(seq_len) // int(chunk_size)


def table_fit_inputs(
    con: duckdb.DuckDBPyConnection, contexts: Sequence[int] = DEFAULT_CONTEXTS
) -> pl.DataFrame:
    """One row per table and curve configuration: run_id (the table id), content_hash, a NULL
    segmentation and the configuration columns with `operator`, at the table's whole range and at
    each of `contexts` shorter than it (at_contexts). The content hash is one digest
    over every stored table, since a `layer` curve reads two files (attention and MLP): a
    changed table refits every table curve, never leaves one stale."""
    if not queries.relation_exists(con, RELATION):
        return pl.DataFrame()
    hashes = queries.latency_table_hashes(con, TABLE_PREFIX)
    if not hashes:
        return pl.DataFrame()
    digest = hashlib.sha256(repr(hashes).encode()).hexdigest()
    configs = at_contexts(queries.table_curve_configs(con), contexts)
    return configs.with_columns(
        pl.lit(digest).alias("content_hash"), pl.lit(None, pl.String).alias("segmentation")
    )
