"""Flow events (s/f) -> links between the slices they bind to: binding rules on a synthetic trace
and the torch_to_npu flows of the real set B1, read in memory and streamed."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipelines import memory_budget
from pipelines.analysis.chunks.segment import segment_chunks
from pipelines.ingest.readers.trace_view import read_trace_view
from pipelines.ingest.steps.flows import FLOW_LINKS_KEY
from pipelines.ingest.steps.launch_links import link_ids

B1_RANK0 = "msinsight/test/data/pytorch/text/level1/rank0_ascend_pt"
TRACE = "ASCEND_PROFILER_OUTPUT/trace_view.json"
TINY = 1  # a one-byte budget: the streamed path


def _links(frame: pl.DataFrame) -> dict[str, list[str]]:
    """name -> the flow links in its args."""
    links = frame.select(
        "name",
        pl.col("args")
        .str.json_path_match(f"$.{FLOW_LINKS_KEY}")
        .str.json_decode(pl.List(pl.String))
        .alias("links"),
    ).filter(pl.col("links").is_not_null())
    return {name: sorted(v) for name, v in links.iter_rows()}


def _meta(pid: int, name: str) -> dict:
    return {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}


def _x(name: str, pid: int, tid: int, ts: str, dur: float, **args) -> dict:
    return {"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _flow(ph: str, fid, pid: int, tid: int, ts: str, cat: str = "async_npu", **extra) -> dict:
    return {"ph": ph, "name": "torch_to_npu", "id": fid, "cat": cat, "pid": pid, "tid": tid,
            "ts": ts, **extra}  # fmt: skip


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    big = 1736408883700059821  # a 19-digit id, as torch_npu writes: not exact as a double
    events = [
        _meta(1, "Python"),
        _meta(2, "Ascend Hardware"),
        _x("ProfilerStep#1", 1, 1, "100.000", 100),
        _x("outer", 1, 1, "110.000", 50),
        _x("child", 1, 1, "112.000", 3),  # ends before the flow at 120: outer encloses it
        _x("op", 1, 1, "130.000", 5),
        _x("k_enclosing", 2, 2, "170.000", 4, connection_id=7),
        _x("k_next", 2, 2, "180.000", 4),
        _x("k_other_stream", 2, 3, "175.000", 40),
        _x("k_orphan", 2, 2, "190.000", 4),
        _flow("s", big, 1, 1, "120.000"),  # enclosing: outer (the latest-starting, child, ended)
        _flow("f", big, 2, 2, "171.000", bp="e"),  # enclosing k_enclosing
        _flow("s", 5, 1, 1, "130.000"),  # op starts here: op, not ProfilerStep
        _flow("f", 5, 2, 2, "176.000"),  # no bp: the next slice of stream 2, k_next
        _flow("s", 5, 1, 1, "131.000", cat="other_cat"),  # same id, other cat: no partner
        _flow("f", 9, 2, 2, "191.000", bp="e"),  # no s: no link
    ]
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps(events))
    return path


@pytest.mark.parametrize("budget", [None, TINY])
def test_binding_points(synthetic: Path, budget) -> None:
    trace = read_trace_view(synthetic, max_memory=budget)
    try:
        slices = trace.slices if isinstance(trace.slices, pl.DataFrame) else trace.slices.collect()
    finally:
        memory_budget.release_spills()
    assert _links(slices) == {
        "outer": ["async_npu:1736408883700059821"],
        "k_enclosing": ["async_npu:1736408883700059821"],
        "op": ["async_npu:5"],
        "k_next": ["async_npu:5"],
    }
    assert trace.flows == {"flows": 2, "linked": 2, "unbound_ends": 0}
    args = dict(slices.select("name", "args").iter_rows())
    assert json.loads(args["k_enclosing"])["connection_id"] == 7  # existing args kept


def test_flows_anchor_device_work_at_their_host_op(synthetic: Path) -> None:
    """The kernels start after their host ranges ended: time containment gives them to no
    marker, the flows give each to the range that launched it."""
    trace = read_trace_view(synthetic)
    slices = trace.slices.with_columns(
        pl.lit(0, pl.Int32).alias("rank"),
        pl.col("name").replace({"outer": "chunk[req=a,k=0,vs=0]", "op": "chunk[req=a,k=1,vs=0]"}),
    )
    chunks, report = segment_chunks(slices, "x")
    assert dict(chunks.select("chunk_idx", "busy_ns").iter_rows()) == {0: 4_000, 1: 4_000}
    assert report["n_flow_linked"].item() == 2
    by_time, _ = segment_chunks(slices, "x", link="time")
    assert by_time.is_empty()


@pytest.mark.real
@pytest.mark.parametrize("budget", [None, TINY])
def test_b1_torch_to_npu_flows_link_every_launched_task(real_dir: Path, budget) -> None:
    """Set B1 rank 0: 210 torch_to_npu flows, from Python cpu_ops to 206 Ascend Hardware tasks
    and 4 HCCL ops; every flow of the file (also HostToDevice, enqueue_to_dequeue, fwdbwd)
    binds at both ends."""
    trace = read_trace_view(real_dir / B1_RANK0 / TRACE, max_memory=budget)
    try:
        slices = trace.slices if isinstance(trace.slices, pl.DataFrame) else trace.slices.collect()
    finally:
        memory_budget.release_spills()
    assert trace.flows == {"flows": 606, "linked": 606, "unbound_ends": 0}
    torch_to_npu = slices.filter(pl.col("args").str.contains('"async_npu:'))
    device = torch_to_npu.filter(pl.col("lane") != "host")
    assert dict(device.group_by("lane").len().iter_rows()) == {"compute": 206, "comm": 4}
    links = (
        device.select(
            pl.col("args")
            .str.json_path_match(f"$.{FLOW_LINKS_KEY}")
            .str.json_decode(pl.List(pl.String))
            .alias("link")
        )
        .explode("link")
        .filter(pl.col("link").str.starts_with("async_npu:"))
    )
    assert links.height == links["link"].n_unique() == 210  # one flow per launched task
    host = torch_to_npu.filter(pl.col("lane") == "host")
    assert host.height == 127  # an op may launch several tasks (Conv2D: 4)
    assert not host["args"].str.contains("connection_id").any()  # Python ops carry no id


def test_a_reused_flow_id_pairs_its_ends_in_time_order() -> None:
    # one id for three flows (a trace repeated with its ids, as a 2 GB bench trace was built):
    # the i-th start pairs with the i-th finish, never every start with every finish
    from pipelines.ingest.steps.flows import FLOW_SCHEMA, ROW, bind

    slices = pl.DataFrame(
        {
            ROW: pl.Series(range(6), dtype=pl.UInt32),
            "pid": ["1", "1", "1", "2", "2", "2"],
            "tid": ["h", "h", "h", "d", "d", "d"],
            "start_ns": [0, 100, 200, 50, 150, 250],
            "dur_ns": [10, 10, 10, 10, 10, 10],
        }
    ).lazy()
    flows = pl.DataFrame(
        {
            "ph": ["s", "s", "s", "f", "f", "f"],
            "pid": ["1", "1", "1", "2", "2", "2"],
            "tid": ["h", "h", "h", "d", "d", "d"],
            "start_ns": [5, 105, 205, 55, 155, 255],
            "category": ["async_npu"] * 6,
            "flow_id": ["7"] * 6,
            "bp": [None, None, None, "e", "e", "e"],
        },
        schema=FLOW_SCHEMA,
    )
    links, counts = bind(slices, flows)
    by_row = dict(zip(links[ROW].to_list(), links["flow_links"].to_list(), strict=True))
    assert counts["linked"] == 3 and len(by_row) == 6
    for host, device in ((0, 3), (1, 4), (2, 5)):
        assert by_row[host] == by_row[device]  # one link each, shared by its two ends only
    assert len(set(by_row.values())) == 3


def test_merge_links_by_position_equals_the_join() -> None:
    """merge_links of a frame whose _row rises strictly (found by binary search) gives what the
    left join gives: args that are objects, empty, null or no object; a link to a row the
    frame lacks; the same frame shuffled (joined) as the reference."""
    from pipelines.ingest.steps import flows

    frame = pl.DataFrame(
        {
            flows.ROW: pl.Series([0, 2, 3, 7, 9], dtype=pl.UInt32),
            "name": ["a", "b", "c", "d", "e"],
            "args": ['{"x": 1}', None, " { } ", "[1]", '{"y":"}"}'],
        }
    )
    links = pl.DataFrame(
        {
            flows.ROW: pl.Series([2, 3, 4, 7, 9], dtype=pl.UInt32),
            FLOW_LINKS_KEY: [f'{{"flow_links":["c:{i}"]}}' for i in range(5)],
        }
    )
    by_position = flows.merge_links(frame, links)
    shuffled = frame.reverse()  # _row falls: merged through the join
    joined = flows.merge_links(shuffled, links).reverse()
    assert by_position.equals(joined)
    assert by_position["args"].to_list() == [
        '{"x": 1}',
        '{"flow_links":["c:0"]}',
        '{"flow_links":["c:1"]}',
        "[1]",
        '{"y":"}","flow_links":["c:4"]}',
    ]


def _links_by_json_path(frame: pl.DataFrame) -> pl.DataFrame:
    """(row_id, link) of the flow links under `$['flow_links']`, every row's args parsed whole
    (what `launch_links.link_ids` did before it read the appended tail)."""
    value = pl.col("args").str.json_path_match(f"$['{FLOW_LINKS_KEY}']")
    listed = frame.select("row_id", value.alias("link")).filter(pl.col("link").str.starts_with("["))
    return (
        listed.with_columns(pl.col("link").str.json_decode(pl.List(pl.String)))
        .explode("link")
        .select(
            pl.col("row_id").cast(pl.UInt32), (f"{FLOW_LINKS_KEY}=" + pl.col("link")).alias("link")
        )
        .drop_nulls("link")
    )


@pytest.mark.real
@pytest.mark.parametrize("budget", [None, TINY])
def test_flow_link_ids_from_the_appended_tail_equal_the_json_path(real_dir: Path, budget) -> None:
    """link_ids reads the flow links `merge_links` appended from the args' tail; on set B1 rank 0
    (in memory and streamed) and on args where the tail is not ours (an export's own
    `flow_links`, twice, nested, as a value, not a list of strings, not an object) it gives what
    parsing the whole args gives."""
    trace = read_trace_view(real_dir / B1_RANK0 / TRACE, max_memory=budget)
    try:
        slices = trace.slices if isinstance(trace.slices, pl.DataFrame) else trace.slices.collect()
    finally:
        memory_budget.release_spills()
    edge = [
        '{"a":1,"flow_links":["x:1","y\\"z:2"]}',
        '{"flow_links":["q:1"],"flow_links":["r:2"]}',
        '{"x":{"flow_links":["a"]},"y":[1]}',
        '{"x":{"flow_links":["n:1"]}}',
        '{"name":"flow_links","flow_links":["c:3"]}',
        '{"flow_links":"s"}',
        '{"flow_links":[1,2]}',
        '["flow_links"]',
        None,
        '{"flow_links":["\\u00e9:1"] }',
    ]
    frame = pl.concat(
        [
            slices.select("args"),
            pl.DataFrame({"args": edge}, schema={"args": pl.String}),
        ]
    ).with_row_index("row_id")
    got = link_ids(frame, (FLOW_LINKS_KEY,))
    assert got.height >= 2 * 210 + 5  # B1's async_npu links at both ends, and the edge rows'
    assert got.equals(_links_by_json_path(frame))
