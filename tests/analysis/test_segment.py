"""Segmentation of canonical slices into chunks: markers, time containment, flow links."""

from __future__ import annotations

import json
import re
import time

import polars as pl
import pytest
import regex

from pipelines.analysis.chunks.segment import (
    PROFILER_STEP_REGEX,
    MarkerRuleError,
    compile_marker_regex,
    parse_marker,
    run_totals,
    segment_chunks,
)
from pipelines.ingest.frames import SCHEMAS


def _slices(rows: list[tuple]) -> pl.DataFrame:
    """rows: (rank, lane, name, start_ns, dur_ns, args dict or None)."""
    return pl.DataFrame(
        [
            {
                "run_id": "r1",
                "rank": rank,
                "lane": lane,
                "thread": None,
                "name": name,
                "category": None,
                "start_ns": start,
                "dur_ns": dur,
                "step": None,
                "args": None if args is None else json.dumps(args),
            }
            for rank, lane, name, start, dur, args in rows
        ],
        schema=SCHEMAS["slices"],
    )


def test_marker_grammar_accepts_design_form_in_any_order() -> None:
    fields = parse_marker("chunk[tokens=16384,vs=3,prefix=32768,k=2,req=req-7]")
    assert fields is not None
    assert (fields.request_id, fields.chunk_idx, fields.vstage) == ("req-7", 2, 3)
    assert (fields.tokens, fields.prefix_tokens) == (16384, 32768)
    for bad in (
        "chunk[req=a,k=1]",  # vs missing
        "chunk[req=a,k=1,vs=0,k=2]",  # repeated key
        "chunk[req=a,k=1,vs=0,layer=2]",  # unknown key
        "chunk[req=a,k=-1,vs=0]",
        "my_chunk[req=a,k=1,vs=0]",
        "chunk[req=a,k=1,vs=0] ",
    ):
        assert parse_marker(bad) is None, bad


def test_marker_of_single_device_run_has_stage_minus_one() -> None:
    fields = parse_marker("chunk[req=r0,k=3,vs=-1,tokens=2048,prefix=6144]")
    assert fields is not None
    assert (fields.request_id, fields.chunk_idx, fields.vstage) == ("r0", 3, -1)


def test_time_containment_unions_overlapping_streams_and_reports_leftovers() -> None:
    slices = _slices(
        [
            (0, "host", "chunk[req=a,k=0,vs=0,tokens=8,prefix=0]", 0, 1000, None),
            (0, "host", "chunk[req=a,k=1,vs=0,tokens=8,prefix=8]", 1000, 1000, None),
            (0, "host", "aten::mm", 10, 5, None),  # not a marker
            (0, "compute", "mm", 100, 300, None),  # k0: [100,400)
            (0, "compute", "attn", 200, 400, None),  # k0 other stream: [200,600) -> union 500
            (0, "compute", "mm", 1100, 200, None),  # k1: 200
            (0, "compute", "stray", 2500, 50, None),  # after every marker: unassigned
            (0, "comm", "hcom_send", 1300, 100, None),  # comm not counted by default
        ]
    )
    chunks, unassigned = segment_chunks(slices, "r1")
    assert chunks.columns == list(SCHEMAS["chunks"])
    rows = chunks.sort("chunk_idx").to_dicts()
    assert [r["busy_ns"] for r in rows] == [500, 200]
    assert [(r["start_ns"], r["end_ns"]) for r in rows] == [(100, 600), (1100, 1300)]
    assert rows[1]["tokens"] == 8 and rows[1]["prefix_tokens"] == 8
    report = unassigned.row(0, named=True)
    assert report["device_busy_ns"] == 750
    assert report["unassigned_ns"] == 50
    assert report["unassigned_fraction"] == pytest.approx(50 / 750)
    assert report["n_unassigned_slices"] == 1 and report["n_empty_markers"] == 0

    with_comm, _ = segment_chunks(slices, "r1", include_comm=True)
    assert with_comm.sort("chunk_idx").get_column("busy_ns").to_list() == [500, 300]


def test_flow_ids_link_device_work_launched_while_host_ran_ahead() -> None:
    # the host finished marker k=0 at t=100 and is inside k=1 when the device runs k=0's kernels
    slices = _slices(
        [
            (0, "host", "chunk[req=a,k=0,vs=0]", 0, 100, None),
            (0, "host", "chunk[req=a,k=1,vs=0]", 100, 100, None),
            (0, "host", "AscendCL@launch", 10, 5, {"connection_id": 11}),
            (0, "host", "AscendCL@launch", 110, 5, {"connection_id": 12}),
            (0, "compute", "k0_kernel", 150, 40, {"connection_id": 11}),
            (0, "compute", "k1_kernel", 300, 70, {"connection_id": 12}),
        ]
    )
    auto, report = segment_chunks(slices, "r1")
    assert auto.sort("chunk_idx").get_column("busy_ns").to_list() == [40, 70]
    assert report.get_column("n_flow_linked").to_list() == [2]
    # time containment alone puts k0's kernel in k1 and loses k1's kernel (starts after k1 ended)
    timed, timed_report = segment_chunks(slices, "r1", link="time")
    assert timed.get_column("chunk_idx").to_list() == [1]
    assert timed.get_column("busy_ns").to_list() == [40]
    assert timed_report.get_column("unassigned_ns").to_list() == [70]


def test_kineto_correlation_and_external_id_link_and_ranks_stay_apart() -> None:
    slices = _slices(
        [
            (0, "host", "chunk[req=q,k=0,vs=0]", 0, 100, None),
            (0, "host", "cudaLaunchKernel", 20, 5, {"correlation": 7}),
            (0, "host", "aten::bmm", 30, 5, {"External id": 9}),
            (0, "compute", "gemm", 500, 10, {"correlation": 7}),
            (0, "compute", "bmm_kernel", 520, 30, {"External id": 9}),
            (1, "compute", "gemm", 50, 10, {"correlation": 7}),  # other rank: not linked
        ]
    )
    chunks, report = segment_chunks(slices, "r1", link="flow")
    assert chunks.get_column("busy_ns").to_list() == [40]
    by_rank = {r["rank"]: r for r in report.to_dicts()}
    assert by_rank[1]["unassigned_ns"] == 10 and by_rank[1]["n_markers"] == 0
    assert run_totals(report).row(0, named=True)["unassigned_ns"] == 10


def test_profiler_step_windows_with_renumbering_and_stage_mapping() -> None:
    slices = _slices(
        [
            (0, "host", "ProfilerStep#51", 1000, 1000, None),
            (0, "host", "ProfilerStep#50", 0, 1000, None),
            (2, "host", "ProfilerStep#50", 0, 1000, None),
            (0, "compute", "a", 10, 100, None),
            (0, "compute", "b", 1010, 300, None),
            (2, "compute", "c", 500, 20, None),
        ]
    )
    chunks, _ = segment_chunks(
        slices, "r1", PROFILER_STEP_REGEX, renumber=True, vstage_of_rank={0: 0, 2: 1}
    )
    got = {(r["rank"], r["vstage"], r["chunk_idx"]): r["busy_ns"] for r in chunks.to_dicts()}
    assert got == {(0, 0, 0): 100, (0, 0, 1): 300, (2, 1, 0): 20}


def test_nested_markers_give_events_to_the_innermost_and_other_runs_are_ignored() -> None:
    slices = _slices(
        [
            (0, "host", "chunk[req=o,k=0,vs=0]", 0, 1000, None),
            (0, "host", "chunk[req=i,k=0,vs=0]", 200, 100, None),
            (0, "compute", "x", 250, 10, None),
            (0, "compute", "y", 500, 20, None),
        ]
    )
    other = slices.with_columns(pl.lit("r2").alias("run_id"))
    chunks, _ = segment_chunks(pl.concat([slices, other]), "r1")
    got = dict(zip(chunks["request_id"], chunks["busy_ns"], strict=True))
    assert got == {"i": 10, "o": 20}
    assert set(chunks["run_id"]) == {"r1"}


def test_custom_regex_and_markers_without_device_work() -> None:
    slices = _slices(
        [
            (0, "host", "prefill r=9 c=4", 0, 100, None),
            (0, "host", "prefill r=9 c=5", 100, 100, None),  # no device work: empty marker
            (0, "compute", "k", 10, 10, None),
        ]
    )
    chunks, report = segment_chunks(slices, "r1", r"^prefill r=(?P<req>\d+) c=(?P<k>\d+)$")
    assert chunks.select("request_id", "chunk_idx", "vstage").row(0) == ("9", 4, -1)
    assert report.row(0, named=True)["n_empty_markers"] == 1


def test_a_run_without_markers_leaves_all_device_time_unassigned() -> None:
    slices = _slices([(0, "host", "aten::mm", 0, 10, None), (0, "compute", "x", 0, 10, None)])
    chunks, report = segment_chunks(slices, "r1")
    assert chunks.is_empty() and chunks.columns == list(SCHEMAS["chunks"])
    assert report.row(0, named=True)["unassigned_fraction"] == 1.0


def test_stream_waits_and_hccl_transfers_on_the_compute_lane_are_not_chunk_work() -> None:
    # as in the real set B1 trace: the Ascend Hardware lane also holds EVENT_WAIT_SQE and the
    # SDMA / Notify Wait tasks of HCCL ops (same connection_id as the op on the HCCL lane)
    slices = _slices(
        [
            (0, "host", "chunk[req=a,k=0,vs=0]", 0, 1000, None),
            (0, "compute", "MatMul", 10, 100, {"Task Type": "AI_CORE", "connection_id": 1}),
            (0, "compute", "EVENT_WAIT_SQE", 200, 300, {"Task Type": "EVENT_WAIT_SQE"}),
            (0, "compute", "SDMA", 600, 50, {"Task Type": "SDMA", "connection_id": 7}),
            (0, "comm", "hcom_send__1_0", 600, 50, {"connection_id": 7}),
        ]
    )
    chunks, report = segment_chunks(slices, "r1")
    assert chunks["busy_ns"].to_list() == [100]
    assert report["device_busy_ns"].to_list() == [100]
    with_comm, _ = segment_chunks(slices, "r1", include_comm=True)
    assert with_comm["busy_ns"].to_list() == [150]


def test_a_user_regex_must_compile_and_name_req_and_k() -> None:
    with pytest.raises(MarkerRuleError, match="does not compile"):
        compile_marker_regex("(")
    with pytest.raises(MarkerRuleError, match=r"lacks the named group\(s\) req, k"):
        compile_marker_regex(r"^chunk\[(\d+)\]$")
    # the built-in rules are exempt (ProfilerStep#N has no req) and compile with `re`
    assert isinstance(compile_marker_regex(PROFILER_STEP_REGEX), re.Pattern)
    assert isinstance(compile_marker_regex(r"^(?P<req>\w+)/(?P<k>\d+)$"), regex.Pattern)


def test_a_non_integer_vs_and_a_backtracking_regex_raise() -> None:
    slices = _slices(
        [(0, "host", "step[x]", 0, 10, None), (0, "host", "a" * 3000 + "!", 0, 1, None)]
    )
    with pytest.raises(MarkerRuleError, match=r"group vs captured 'x'.*not an integer"):
        segment_chunks(slices, "r1", r"^(?P<req>step)\[(?P<vs>\w+)\](?P<k>\d*)$")
    started = time.perf_counter()
    with pytest.raises(MarkerRuleError, match=r"time bound of 0\.2 s"):
        segment_chunks(slices, "r1", r"^(?P<req>(a|aa)+)(?P<k>\d+)$", match_timeout_s=0.2)
    assert time.perf_counter() - started < 3


def test_a_label_k_is_ordered_by_start() -> None:
    """`k` need not be an integer: labels (`attn(F)`) are ordered by their first start."""
    slices = _slices(
        [
            (0, "host", "layer[attn(F)]", 0, 10, None),
            (0, "host", "layer[mlp(F)]", 20, 10, None),
            (0, "compute", "kernel_a", 2, 5, None),
            (0, "compute", "kernel_b", 22, 6, None),
        ]
    )
    chunks, _ = segment_chunks(slices, "r1", r"^(?P<req>layer)\[(?P<k>[^\]]+)\]$")
    assert chunks.select("chunk_idx", "busy_ns").rows() == [(0, 5), (1, 6)]
