"""Segmentation reads only the args keys it uses (issue 37 item 1: a marked 2 GB trace's args no
longer reach memory whole), cut in SQL, and segments exactly as with every arg."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipelines.analysis.chunks.chunk_store import (
    SEGMENT_ARGS_KEYS,
    SEGMENT_LANES,
    segment_run,
    segment_slices,
)
from pipelines.analysis.chunks.segment import DEFAULT_MARKER_REGEX, segment_chunks
from pipelines.bench.generate import generate_rank
from pipelines.ingest.load import ingest_paths
from pipelines.store import insert, open_store, queries
from pipelines.store.catalog import setting

LEVEL1 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"


def _read_as_readers_do(args: pl.Series) -> dict[str, list[str | None]]:
    """Per key, what `link_ids` / `work_slices` take from each row: `json_path_match` of the key
    where the args name it (the substring test they filter on first), else None."""
    frame = pl.DataFrame({"args": args})
    out = {}
    for key in SEGMENT_ARGS_KEYS:
        named = pl.col("args").str.contains(json.dumps(key), literal=True)
        value = pl.when(named).then(pl.col("args").str.json_path_match(f"$['{key}']"))
        out[key] = frame.select(value).to_series().to_list()
    return out


ARGS = [
    '{"connection_id": 12, "Task Type": "AI_CORE", "Call stack": "a.py(1); b.py(2)"}',
    None,
    '{"Input Dims": [[1, 2]]}',
    '{"flow_links": ["HostToDevice:936#0", "async_npu:17"], "External id": "a\\"}\\"b"}',
    '{"correlation": "}", "connection_ids": [1, 2, 3], "Task Type": null}',
    '{"nested": {"connection_id": 5}}',
    '{"External id": 1.50, "connection_id": "\\u00e9x", "correlation": 1e3}',
    '{"connection_id": 9223372036854775807, "Task Type": "EVENT_WAIT_SQE", "x": {"y": [1]}}',
    '{"correlation": {"a": [1, "b"]}, "flow_links": []}',
]


def test_the_cut_args_read_the_same_as_the_full_ones() -> None:
    con = duckdb.connect()
    frame = pl.DataFrame(
        {
            "run_id": "r",
            "rank": 0,
            "lane": ["host", "compute", "comm"] * 3,
            "name": "n",
            "category": None,
            "start_ns": range(9),
            "dur_ns": 1,
            "args": ARGS,
        },
        schema_overrides={"category": pl.String},
    )
    con.register("frame", frame)
    con.execute("create table slices as select * from frame")
    lean = queries.run_slices_args_cut(con, "r", SEGMENT_LANES, SEGMENT_ARGS_KEYS)
    assert lean.height == len(ARGS)
    assert _read_as_readers_do(lean["args"]) == _read_as_readers_do(frame["args"])
    # rows that name no key read nothing and carry no args; the others only the keys read
    assert lean["args"].null_count() == 3
    assert "Call stack" not in (lean["args"][0] or "")
    assert lean["args"].str.len_bytes().sum() < frame["args"].str.len_bytes().sum()


@pytest.mark.parametrize("repeat_ids", [False, True])
def test_same_chunks_from_the_cut_args(real_dir: Path, tmp_path: Path, repeat_ids: bool) -> None:
    trace = generate_rank(
        tmp_path / "gen", 3, real_dir / LEVEL1, repeat_ids=repeat_ids, markers=True
    )
    con = open_store(tmp_path / "w.duckdb").open()
    try:
        (run,) = ingest_paths([trace.rank_dir], con, progress=False).runs
        every = queries.run_slices(con, run.run_id, SEGMENT_LANES)
        lean = segment_slices(con, run.run_id)
        assert lean.height == every.height
        columns = ["rank", "lane", "name", "category", "start_ns", "dur_ns"]
        assert lean.select(columns).equals(every.select(columns))
        assert _read_as_readers_do(lean["args"]) == _read_as_readers_do(every["args"])
        full = every["args"].str.len_bytes().sum()
        assert lean["args"].str.len_bytes().sum() < 0.5 * full  # the cut is most of the bytes
        want_chunks, want_report = segment_chunks(every, run.run_id, DEFAULT_MARKER_REGEX)
        got_chunks, got_report = segment_run(con, run.run_id)
    finally:
        con.close()
    assert got_chunks.height == trace.copies
    assert got_report["n_flow_linked"].sum() > 0  # links decide anchors here
    assert got_chunks.equals(want_chunks)
    assert got_report.equals(want_report)


def test_release_buffers_lets_the_cache_go_and_keeps_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(insert, "RELEASE_LIMIT", "8MiB")  # a small table is enough then
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    con.execute("set memory_limit = '1GiB'")
    con.execute(
        "create table t as select md5(i::varchar) || md5((i + 1)::varchar)"
        " || md5((i + 2)::varchar) as s from range(500000) r(i)"
    )
    con.execute("checkpoint")
    con.execute("select count(distinct s) from t").fetchall()

    def cached() -> int:
        return con.execute(
            "select sum(memory_usage_bytes) from duckdb_memory() where tag = 'BASE_TABLE'"
        ).fetchone()[0]

    before = cached()
    assert before > 12 << 20
    insert.release_buffers(con)
    assert cached() <= 8 << 20
    assert setting(con, "memory_limit") == "1.0 GiB"
    con.close()
