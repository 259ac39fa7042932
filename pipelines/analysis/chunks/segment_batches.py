"""Chunk segmentation of one stored run read in batches: the same chunks and unassigned report as
`segment_chunks` over the run's slices, in memory that grows with the run's markers, link ids
and device work (a few numbers each), not with its slices and their args.

Segmentation decides each device slice alone once three things of the whole run are known, and
all three are small: the markers (the host slices whose names the rule parses, `marker_names`),
the earliest host start of every launch-link id (`launch_links.host_link_starts`, combined over
batches by their minimum) and the connection ids of the comm lane (which compute-lane tasks are
an HCCL op's transfers, `device_work.work_slices`). So the run is read three times from the
store, each as a stream of Arrow batches (`queries.run_slices_args_cut_batches`): its host slices
(markers and link starts), its comm slices (the transfer ids; with include_comm also device
work), then its compute slices, batch by batch: each batch's work slices get their anchor and
owner (`segment.owned_work`) and only (rank, start, end) and the owner's key are kept. The sums
(`segment.summarize_chunks`: unions of intervals, spans, counts) are taken at the end. DuckDB
runs the reads under a small memory limit (`READ_LIMIT`) and lets its cache go afterwards
(docs/bench_ingest.md, issue 36 item 6 / issue 37 item 1).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import duckdb
import polars as pl

from pipelines.analysis.chunks.segment import (
    DEFAULT_MARKER_REGEX,
    Link,
    OwnedWork,
    Pattern,
    chunk_markers,
    marker_names,
    owned_work,
    prepared_slices,
    summarize_chunks,
)
from pipelines.ingest.steps.launch_links import (
    ANCHOR_SCHEMA,
    LINK_KEYS,
    anchors_from_starts,
    combine_link_starts,
    host_link_starts,
)
from pipelines.store import queries
from pipelines.store.catalog import database_path
from pipelines.store.insert import release_buffers, set_for_block
from pipelines.vocabulary.device_work import COMM_LINK_KEY, work_slices

READ_LIMIT = "96MiB"
"""DuckDB's memory limit while segmentation reads a stored run (a database file only): the
reads are scans with one JSON extraction per row and need little; with the ingest budget's
DuckDB limit (a quarter of it) DuckDB kept every block it had read cached up to that limit
(396 MB of a marked 2 GB run's slices), so a lower one keeps that cache small."""

BATCH_ROWS = 262_144
"""Rows per batch read from the store (~20-40 MB of a marked trace's cut slices in Polars)."""

LINK_BY = ("rank",)
"""Links join only within one rank, as `launch_anchors` does on a run's slices."""


def segment_stored_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    args_keys: tuple[str, ...],
    marker_regex: str | Pattern = DEFAULT_MARKER_REGEX,
    *,
    include_comm: bool = False,
    link: Link = "auto",
    link_keys: tuple[str, ...] = LINK_KEYS,
    renumber: bool = False,
    match_timeout_s: float | None = None,
    batch_rows: int = BATCH_ROWS,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(chunks, unassigned report) of one stored run, as `segment_chunks` gives them for the
    run's host, compute and comm slices with args cut to `args_keys` (the keys it reads), read
    in batches of `batch_rows`.
    Raises MarkerRuleError for a rule that cannot be used."""

    def batches(lane: str, first_row_id: int = 0) -> Iterator[pl.DataFrame]:
        reader = queries.run_slices_args_cut_batches(
            con, run_id, (lane,), args_keys, names, batch_rows
        )
        for batch in reader:
            frame = prepared_slices(pl.from_arrow(batch), first_row_id)
            first_row_id += frame.height
            yield frame

    try:
        with read_limited(con):
            host_names = queries.run_lane_names(con, run_id, "host")
            names = marker_names(host_names, marker_regex, match_timeout_s)
            wanted = set(names)
            host_rows, starts = _host_pass(batches("host"), wanted, link != "time", link_keys)
            markers = chunk_markers(host_rows, marker_regex, None, renumber, match_timeout_s)
            comm_ids, comm_parts = [], []
            for comm in batches("comm"):
                comm_ids.append(comm.filter(_names_key(COMM_LINK_KEY)))
                if include_comm:
                    comm_parts.append(_owned(comm, markers, starts, link, link_keys))
            with_ids = pl.concat(comm_ids) if comm_ids else None
            parts = [
                _owned(_work(compute, with_ids, include_comm), markers, starts, link, link_keys)
                for compute in batches("compute")
            ]
    finally:
        release_buffers(con)
    parts += comm_parts
    if not parts:
        empty = pl.DataFrame(schema={"rank": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64})
        key = markers.select("rank", "request_id", "vstage", "chunk_idx").clear()
        parts = [OwnedWork(empty, key.hstack(empty.drop("rank")), empty.select("rank"))]
    return summarize_chunks(run_id, markers, parts)


@contextlib.contextmanager
def read_limited(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """DuckDB's memory limit set to READ_LIMIT for the block, when the database is a file (an
    in-memory one holds its tables in that memory and keeps its limit)."""
    if database_path(con) is None:
        yield
        return
    with set_for_block(con, "memory_limit", READ_LIMIT):
        yield


def _names_key(key: str) -> pl.Expr:
    return pl.col("args").str.contains(f'"{key}"', literal=True).fill_null(False)


def _host_pass(
    host: Iterator[pl.DataFrame], wanted: set[str], links: bool, link_keys: tuple[str, ...]
) -> tuple[pl.DataFrame, dict[str, pl.DataFrame]]:
    """The host slices that can make a marker (named in `wanted`), and per link key the earliest
    start of every link id over all batches (`host_link_starts`, combined by their minimum)."""
    marker_rows, starts = [], {}
    for frame in host:
        marker_rows.append(frame.filter(pl.col("name").is_in(list(wanted))))
        if not links:
            continue
        for key, part in host_link_starts(frame, link_keys, LINK_BY).items():
            starts[key] = combine_link_starts(starts.get(key), part, LINK_BY)
    if not marker_rows:
        schema = {"rank": pl.Int32, "name": pl.String, "start_ns": pl.Int64, "dur_ns": pl.Int64}
        return pl.DataFrame(schema=schema), starts
    return pl.concat(marker_rows), starts


def _work(compute: pl.DataFrame, comm_ids: pl.DataFrame | None, include_comm: bool) -> pl.DataFrame:
    """The work slices of a batch of compute-lane slices (`work_slices`), told the HCCL ops'
    transfers by the comm slices that carry a connection id (`comm_ids`, the whole run's); with
    include_comm the transfers are kept, the comm slices themselves are added by the caller."""
    frame = compute if comm_ids is None else pl.concat([compute, comm_ids])
    work = work_slices(frame, include_comm)
    if include_comm:
        work = work.filter(pl.col("lane") != "comm")
    return work


def _owned(
    device: pl.DataFrame,
    markers: pl.DataFrame,
    starts: dict[str, pl.DataFrame],
    link: Link,
    link_keys: tuple[str, ...],
) -> OwnedWork:
    device = device.with_columns((pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"))
    linked = pl.DataFrame(schema=ANCHOR_SCHEMA)
    if link != "time" and starts:
        linked = anchors_from_starts(device, starts, link_keys, LINK_BY)
    return owned_work(device, markers, linked, link)
