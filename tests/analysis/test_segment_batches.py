"""A stored run segmented in batches (`segment_batches.segment_stored_run`, what `segment_run` and
so `tracereplay ingest` use) gives the chunks and unassigned report that `segment_chunks` gives
on the run's slices read whole with every arg (issue 36 item 6 / issue 37 item 1: a marked 4 GB
trace is segmented in bounded memory, docs/bench_ingest.md)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipelines.analysis.chunks.chunk_store import SEGMENT_ARGS_KEYS, SEGMENT_LANES, segment_run
from pipelines.analysis.chunks.segment import (
    DEFAULT_MARKER_REGEX,
    PROFILER_STEP_REGEX,
    marker_names,
    segment_chunks,
)
from pipelines.analysis.chunks.segment_batches import segment_stored_run
from pipelines.bench.generate import generate_rank
from pipelines.ingest.load import ingest_paths
from pipelines.ingest.steps import launch_links
from pipelines.store import open_store, queries

LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"


@pytest.fixture(scope="module", params=[False, True], ids=["ids-renumbered", "ids-repeated"])
def marked_run(request, real_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """A 3 MB marked trace built from the real level1 export (one chunk marker per copy), in
    both flow-id shapes, ingested without segmentation."""
    root = tmp_path_factory.mktemp("marked")
    source = real_dir / LEVEL1
    trace = generate_rank(root / "gen", 3, source, repeat_ids=request.param, markers=True)
    con = open_store(root / "w.duckdb").open()
    (run,) = ingest_paths([trace.rank_dir], con, progress=False).runs
    yield con, run.run_id, trace
    con.close()


@pytest.mark.parametrize("link", ["auto", "time", "flow"])
@pytest.mark.parametrize("include_comm", [False, True])
@pytest.mark.parametrize("rule", ["markers", "profiler_steps"])
def test_batches_give_the_chunks_of_the_whole_run(marked_run, link, include_comm, rule) -> None:
    con, run_id, trace = marked_run
    regex, renumber = (
        (DEFAULT_MARKER_REGEX, False) if rule == "markers" else (PROFILER_STEP_REGEX, True)
    )
    every = queries.run_slices(con, run_id, SEGMENT_LANES)  # every arg, every host slice
    want = segment_chunks(
        every, run_id, regex, include_comm=include_comm, link=link, renumber=renumber
    )
    # 5,000-row batches: a 3 MB trace is read in ~3 host, 1 comm and 2 compute batches, so link
    # starts are combined across batches and a chunk's work comes from several of them
    got = segment_stored_run(
        con,
        run_id,
        SEGMENT_ARGS_KEYS,
        regex,
        include_comm=include_comm,
        link=link,
        renumber=renumber,
        batch_rows=5_000,
    )
    assert want[0].height == trace.copies
    assert got[0].equals(want[0])
    assert got[1].equals(want[1])
    if link != "time":
        assert got[1]["n_flow_linked"].sum() > 0  # the links decided anchors


def test_segment_run_reads_only_the_host_slices_that_can_matter(marked_run) -> None:
    """Host slices that neither carry a link key nor have a marker's name are left in the store:
    most of a level1-built trace's host slices."""
    con, run_id, _ = marked_run
    names = marker_names(queries.run_lane_names(con, run_id, "host"), DEFAULT_MARKER_REGEX)
    kept = queries.run_slices_args_cut(con, run_id, ("host",), SEGMENT_ARGS_KEYS, names)
    every = queries.run_slices(con, run_id, ("host",))
    assert kept.height < 0.5 * every.height
    markers = every.filter(pl.col("name").str.starts_with("chunk["))
    assert markers.height > 0
    assert markers["name"].is_in(kept["name"].implode()).all()
    chunks, report = segment_run(con, run_id)
    assert chunks.height == markers.height and report["n_markers"].sum() == markers.height


def test_a_run_without_device_work(tmp_path: Path) -> None:
    """Markers only: no batch of device work at all; the report still has the marked rank."""
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        frame = _store_slices(
            con, [(0, "host", "chunk[req=a,k=0,vs=0]", 0, 10, None), (0, "host", "x", 5, 1, None)]
        )
        got = segment_stored_run(con, "r", SEGMENT_ARGS_KEYS)
    finally:
        con.close()
    want = segment_chunks(frame, "r")
    assert got[0].equals(want[0]) and got[0].is_empty()
    assert got[1].equals(want[1]) and got[1]["n_markers"].to_list() == [1]


SLICE_COLUMNS = ("rank", "lane", "name", "start_ns", "dur_ns", "args")
SLICE_TYPES = (pl.Int32, pl.String, pl.String, pl.Int64, pl.Int64, pl.String)


def _store_slices(con, rows: list[tuple]) -> pl.DataFrame:
    """`rows` (SLICE_COLUMNS) as the slices of run r, stored and returned."""
    schema = dict(zip(SLICE_COLUMNS, SLICE_TYPES, strict=True))
    frame = pl.DataFrame(rows, schema=schema, orient="row").with_columns(
        pl.lit("r").alias("run_id"),
        pl.lit(None, pl.String).alias("thread"),
        pl.lit(None, pl.String).alias("category"),
        pl.lit(None, pl.Int32).alias("step"),
    )
    con.register("frame", frame)
    con.execute("insert into slices by name select * from frame")
    con.unregister("frame")
    return frame


def test_a_link_id_shared_across_batches_anchors_at_its_earliest_host(tmp_path: Path) -> None:
    """One connection id on two host slices read in different batches (one row a batch): the
    device slice anchors at the earlier one, in chunk 0, as over the whole run; a flow link, the
    first key, decides before it (chunk 1)."""
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        frame = _store_slices(
            con,
            [
                (0, "host", "chunk[req=a,k=0,vs=0]", 0, 100, None),
                (0, "host", "chunk[req=a,k=1,vs=0]", 100, 100, None),
                (0, "host", "launch", 10, 5, '{"connection_id": 7}'),
                (0, "host", "launch", 150, 5, '{"connection_id": 7, "flow_links": ["f:1"]}'),
                (0, "compute", "k1", 160, 10, '{"connection_id": 7}'),
                (0, "compute", "k2", 170, 10, '{"connection_id": 7, "flow_links": ["f:1"]}'),
            ],
        )
        got = segment_stored_run(con, "r", SEGMENT_ARGS_KEYS, batch_rows=1)
    finally:
        con.close()
    want = segment_chunks(frame, "r")
    assert got[0].equals(want[0]) and got[1].equals(want[1])
    assert got[0].select("chunk_idx", "busy_ns").rows() == [(0, 10), (1, 10)]


def test_launch_anchors_in_parts_are_the_anchors_of_the_whole(marked_run, monkeypatch) -> None:
    """`launch_anchors` parses link ids a part of the rows at a time (LINK_BATCH_ROWS): parts of
    500 rows give the anchors of one part (the chunks and report, which count them, equal)."""
    con, run_id, _ = marked_run
    every = queries.run_slices(con, run_id, SEGMENT_LANES)
    whole = segment_chunks(every, run_id)
    monkeypatch.setattr(launch_links, "LINK_BATCH_ROWS", 500)
    parts = segment_chunks(every, run_id)
    assert parts[0].equals(whole[0]) and parts[1].equals(whole[1])
    assert whole[1]["n_flow_linked"].sum() > 0
