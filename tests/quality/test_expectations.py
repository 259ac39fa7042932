"""Each expectation against a small clean warehouse (it passes) and the same warehouse with one
breakage aimed at it (it fails, and the failing rows name the breakage)."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.quality.check_catalog import EXPECTATIONS, SCHEMA, TABLES, Severity, expectation
from pipelines.quality.checks import run_checks
from pipelines.store import open_store
from pipelines.store.schema import declared_columns

HEX = "a" * 64
STEP = 1


def _clean(con: duckdb.DuckDBPyConnection) -> None:
    """One run, two ranks in one pp group, one step; every expectation holds."""
    con.execute(
        "insert into runs (run_id, source, content_hash, model, schedule, chunk_size, seq_len, pp)"
        " values ('r1', 'ascend_pt', ?, 'qwen3', 'cpp', 4096, 8192, 2)",
        [HEX],
    )
    con.execute("insert into run_inputs values ('r1', '/in/trace_view.json', 100, ?)", [HEX])
    groups = '[{"name": "pp", "ranks": [0, 1]}]'
    con.execute(
        "insert into ranks (run_id, rank, pp_stage, groups)"
        " values ('r1', 0, 0, ?), ('r1', 1, 1, ?)",
        [groups, groups],
    )
    con.execute(
        "insert into slices (run_id, rank, lane, thread, name, start_ns, dur_ns, step) values"
        " ('r1', 0, 'compute', 's0', 'mm', 1000, 9000000, 1),"
        " ('r1', 1, 'compute', 's0', 'mm', 2000, 8000000, 1)"
    )
    con.execute(
        "insert into kernels (run_id, rank, step, name, start_ns, dur_ns, wait_ns, is_comm) values"
        " ('r1', 0, 1, 'mm', 2000, 1000, 0, false)"
    )
    con.execute(
        "insert into comm_ops (run_id, rank, step, op, is_p2p, start_ns, dur_ns, wait_ns) values"
        " ('r1', 0, 1, 'hcom_send', true, 5000, 2000, 100)"
    )
    con.execute(
        "insert into step_breakdown (run_id, rank, step, origin, computing_ns, communication_ns,"
        " comm_not_overlapped_ns, overlapped_ns, free_ns, stage_ns, bubble_ns, complete) values"
        " ('r1', 0, 1, 'derived', 200000, 60000, 50000, 10000, 50000, 250000, 50000, true)"
    )
    con.execute(
        "insert into chunks (run_id, rank, vstage, request_id, chunk_idx, tokens, prefix_tokens,"
        " start_ns, end_ns, busy_ns) values"
        " ('r1', 0, 0, 'req-0', 0, 4096, 0, 10000, 20000, 9000),"
        " ('r1', 0, 0, 'req-0', 1, 4096, 4096, 30000, 45000, 14000)"
    )


def _rename_last_column(table: str) -> str:
    last = declared_columns(table)[-1][0]
    return f'alter table {table} rename column "{last}" to renamed_column'


_POINT = "run_id, origin, content_hash, layout, source, operator, tokens, prefix_tokens, time_ns,"
_POINT += " line, replicate"


def _point(prefix: int, time_ns: float, replicate: int = 1) -> str:
    """One row of a generic latency table (attn, 256 new tokens) for `latency_points`."""
    return (
        f"('lt-1', '/in/table.csv', '{HEX}', 'generic', 'self', 'attn', 256, {prefix},"
        f" {int(time_ns)}, {prefix + replicate}, {replicate})"
    )


BREAKS: dict[str, list[str]] = {
    **{f"{t}.{SCHEMA}": [_rename_last_column(t)] for t in TABLES},
    "runs.facts_for_chunks": ["update runs set seq_len = null"],
    "slices.plausible_span": [  # one start read in ms as if it were µs: 8 days later
        "insert into slices (run_id, rank, lane, thread, name, start_ns, dur_ns, step)"
        " values ('r1', 0, 'compute', 's0', 'mm', 691200000001000, 10, 1)",
    ],
    "slices.chunk_markers_unique": [
        "insert into slices (run_id, rank, lane, thread, name, start_ns, dur_ns, step) values"
        " ('r1', 0, 'host', 't', 'chunk[req=a,k=0,vs=0]', 1000, 10, 1),"
        " ('r1', 0, 'host', 't', 'chunk[req=a,k=0,vs=0]', 5000, 10, 1)",
    ],
    "slices.no_overlapping_copies": [  # the compute task again, 5 µs later on its stream
        "insert into slices (run_id, rank, lane, thread, name, start_ns, dur_ns, step)"
        " values ('r1', 0, 'compute', 's0', 'mm', 6000, 9000000, 1)",
    ],
    "kernels.no_overlapping_copies": [  # the kernel again, 100 ns later
        "insert into kernels (run_id, rank, step, name, start_ns, dur_ns, wait_ns, is_comm)"
        " values ('r1', 0, 1, 'mm', 2100, 1000, 0, false)",
    ],
    "kernels.no_same_stream_overlap": [  # a second kernel starts 5 µs into a 10 µs one
        "insert into kernels (run_id, rank, step, name, start_ns, dur_ns, wait_ns, is_comm) values"
        " ('r1', 0, 1, 'a', 100000, 10000, 0, false), ('r1', 0, 1, 'b', 105000, 10000, 0, false)",
    ],
    "latency_points.in_line_with_neighbours": [  # µs read as s in the middle of a line
        f"insert into latency_points ({_POINT}) values {_point(0, 100000)}, {_point(256, 1e11)},"
        f" {_point(512, 120000)}",
    ],
    "latency_points.replicates_agree": [  # one point given twice, 100x apart
        f"insert into latency_points ({_POINT}) values {_point(0, 100000)}, {_point(0, 1e7, 2)}",
    ],
    "runs.stored_once": [  # the same bytes stored again from another folder
        "insert into runs (run_id, source, content_hash, ingested_at)"
        f" values ('r2', 'ascend_pt', '{HEX}', timestamp '2100-01-01')",
    ],
    "runs.same_device_work_once": [  # r1's kernels again under another run of other bytes
        "insert into runs select * replace ('r2' as run_id, md5('other bytes') as content_hash)"
        " from runs where run_id = 'r1'",
        "insert into kernels select * replace ('r2' as run_id) from kernels where run_id = 'r1'",
    ],
    "runs.measurement_counted_once": [  # a copy reaches the tau_k points (copies not left out)
        "insert into runs select * replace ('r2' as run_id) from runs where run_id = 'r1'",
        "insert into chunks select * replace ('r2' as run_id) from chunks where run_id = 'r1'",
        "create or replace view int_run_copies as"
        " select run_id, content_hash, run_id as copy_of from runs where false",
    ],
    "run_inputs.non_negative_bytes": ["update run_inputs set bytes = -1"],
    "run_inputs.sha256_hex": ["update run_inputs set sha256 = 'ABC'"],
    "run_inputs.run_exists": [f"insert into run_inputs values ('ghost', '/in/x', 1, '{HEX}')"],
    "run_inputs.one_run_per_input": [
        f"insert into runs (run_id, source, content_hash) values ('r2', 'ascend_pt', '{HEX}')",
        f"insert into run_inputs values ('r2', '/in/trace_view.json', 100, '{HEX}')",
    ],
    "ranks.unique_rank": ["insert into ranks select * from ranks where rank = 1"],
    "ranks.pp_groups_complete": ["delete from ranks where rank = 1"],
    "slices.non_negative_durations": ["update slices set dur_ns = -5 where rank = 1"],
    "slices.no_duplicated_events": ["insert into slices select * from slices where rank = 1"],
    "kernels.non_negative_durations": ["update kernels set wait_ns = -1"],
    "kernels.no_duplicated_events": ["insert into kernels select * from kernels"],
    "kernels.not_written_twice": ["insert into kernels select * from kernels"],
    "slices.steps_consecutive": [
        "insert into slices select * replace (3 as step, start_ns + 10 as start_ns) from slices"
    ],
    "step_breakdown.steps_consecutive": [
        "insert into step_breakdown select * replace (3 as step) from step_breakdown"
    ],
    "step_breakdown.bubble_within_comm_not_overlapped": [
        "update step_breakdown set bubble_ns = comm_not_overlapped_ns + 1"
    ],
    # the marts are views over the tables above: most break through the rows they read
    "fct_run_metrics.non_negative_values": ["update chunks set tokens = -tokens"],
    "fct_run_metrics.plausible_ratios_and_bounds": [
        "update step_breakdown set overlapped_ns = 2 * communication_ns"
    ],
    "fct_request_ttft.positive_ttft": ["update chunks set end_ns = 5000, busy_ns = 0"],
    "fct_request_ttft.positive_prompt_tokens": ["update chunks set tokens = 0"],
    "fct_rank_time_split.parts_add_up_to_window": [
        "update step_breakdown set free_ns = free_ns + 5000"
    ],
    "fct_rank_time_split.non_negative_parts": ["update step_breakdown set free_ns = -1"],
    # n = count(*) and the interval around the mean cannot go wrong through data: these guard
    # the mart's SQL, so the breakage is a wrong definition shadowing it on this connection
    "fct_config_metrics.n_at_least_one": [
        "create temp view fct_config_metrics as"
        " select * replace (0 as n) from main.fct_config_metrics"
    ],
    "fct_config_metrics.interval_contains_mean": [
        "create temp view fct_config_metrics as"
        " select * replace (mean + 1 as ci_lo) from main.fct_config_metrics"
    ],
    "kernels.inside_run_span": ["update kernels set start_ns = start_ns + 1000000000000"],
    "kernels.not_longer_than_step": ["update kernels set dur_ns = 400000"],
    "kernels.shorter_than_a_minute": ["update kernels set dur_ns = 60000000000"],
    "comm_ops.non_negative_durations": ["update comm_ops set wait_ns = -1"],
    "comm_ops.no_duplicated_events": ["insert into comm_ops select * from comm_ops"],
    "comm_ops.inside_run_span": ["update comm_ops set dur_ns = 20000000"],
    "step_breakdown.non_negative_components": ["update step_breakdown set bubble_ns = -1"],
    "step_breakdown.breakdown_identity": ["update step_breakdown set stage_ns = stage_ns + 1001"],
    "step_breakdown.overlap_within_communication": [
        "update step_breakdown set overlapped_ns = communication_ns + 1"
    ],
    "step_breakdown.derived_rows_complete": [
        "update step_breakdown set complete = false, incomplete_reason = 'kernel_coverage 5.6 %'"
    ],
    "step_breakdown.unique_step_origin": [
        "insert into step_breakdown select * from step_breakdown"
    ],
    "chunks.indices_contiguous": ["update chunks set chunk_idx = 2 where chunk_idx = 1"],
    "chunks.indices_in_time_order": [
        "update chunks set start_ns = 5000, end_ns = 6000, busy_ns = 900 where chunk_idx = 1"
    ],
    "chunks.busy_within_span": ["update chunks set busy_ns = end_ns - start_ns + 1"],
    "chunks.inside_run_span": ["update chunks set end_ns = 20000000 where chunk_idx = 1"],
    # a rank that kept only summaries (no kernel, no compute slice): the run is partial
    "ranks.device_work_on_every_rank": [
        "delete from kernels where rank = 1",
        "delete from slices where rank = 1 and lane = 'compute'",
    ],
    "quarantine.nothing_quarantined": [
        "insert into quarantine values ('/in/bad.json', 'truncated_json', 'at byte 7', null, now())"
    ],
    # GX-only rules added with the suites (pipelines/quality/suites/*.json)
    "runs.run_id_unique": [  # the primary key refuses the copy: shadow the table with one
        "create temp table runs as select * from main.runs union all select * from main.runs"
    ],
    "slices.lane_known": ["update slices set lane = 'gpu' where rank = 1"],
    "kernels.work_class_known": ["update kernels set work_class = 'matmul'"],
    "step_breakdown.origin_known": ["update step_breakdown set origin = 'profile'"],
}


@pytest.fixture
def clean(tmp_path) -> duckdb.DuckDBPyConnection:
    con = open_store(tmp_path / "warehouse.duckdb").open()
    _clean(con)
    yield con
    con.close()


def _verdict(con: duckdb.DuckDBPyConnection, key: str):
    item = expectation(key)
    report = run_checks(con, tables=[item.table])
    return next(r for r in report.results if r.expectation.key == key)


def test_every_expectation_has_a_breakage() -> None:
    assert sorted(BREAKS) == sorted(e.key for e in EXPECTATIONS)


def test_severity_is_error_except_the_metadata_warnings() -> None:
    warnings = {e.key for e in EXPECTATIONS if e.severity is Severity.WARNING}
    assert warnings == {
        "runs.facts_for_chunks",
        "runs.stored_once",
        "kernels.no_duplicated_events",
        "step_breakdown.bubble_within_comm_not_overlapped",
        "step_breakdown.derived_rows_complete",
        "quarantine.nothing_quarantined",
        "ranks.device_work_on_every_rank",
    }


@pytest.mark.parametrize("key", sorted(BREAKS))
def test_expectation_passes_on_clean_data(clean, key: str) -> None:
    result = _verdict(clean, key)
    assert result.passed, result.example_dicts()
    assert result.failing == 0


@pytest.mark.parametrize("key", sorted(BREAKS))
def test_expectation_fails_on_broken_data(clean, key: str) -> None:
    for statement in BREAKS[key]:
        clean.execute(statement)
    result = _verdict(clean, key)
    assert not result.passed
    assert result.failing >= 1
    assert result.examples, "a failure shows example rows"
    assert result.blocks == (result.expectation.severity is Severity.ERROR)


def test_incomplete_row_is_exempt_from_the_identity(clean) -> None:
    clean.execute(
        "update step_breakdown set stage_ns = stage_ns + 99999, complete = false,"
        " incomplete_reason = 'stage 16.4 ms vs profiler 294.6 ms'"
    )
    assert _verdict(clean, "step_breakdown.breakdown_identity").passed
    warning = _verdict(clean, "step_breakdown.derived_rows_complete")
    assert not warning.passed and not warning.blocks
    assert warning.example_dicts()[0]["incomplete_reason"].startswith("stage 16.4 ms")


def test_identity_tolerates_one_microsecond(clean) -> None:
    clean.execute("update step_breakdown set stage_ns = stage_ns + 1000")
    assert _verdict(clean, "step_breakdown.breakdown_identity").passed


def test_selected_runs_only(clean) -> None:
    clean.execute("update slices set dur_ns = -5 where rank = 1")
    report = run_checks(clean, run_ids=["other"], tables=["slices"])
    assert report.runs_checked == 1
    assert all(r.passed for r in report.results if r.expectation.name != SCHEMA)


def test_a_repeated_kernel_row_warns_a_rank_written_twice_errs(clean) -> None:
    """The profiler's own repeat (compute_advice kernel_details.csv: one row 4 times among 29)
    is a warning; every kernel of a rank stored twice is the pipeline's fault, an error."""
    clean.execute(
        "insert into kernels (run_id, rank, step, name, start_ns, dur_ns, wait_ns, is_comm) values"
        " ('r1', 0, 1, 'fa', 4000, 500, 0, false), ('r1', 0, 1, 'fa', 4000, 500, 0, false),"
        " ('r1', 0, 1, 'fa', 4000, 500, 0, false)"
    )
    repeated = _verdict(clean, "kernels.no_duplicated_events")
    assert not repeated.passed and not repeated.blocks
    assert repeated.failing == 3  # GX counts every row of the repeated key
    assert {row["start_ns"] for row in repeated.example_dicts()} == {4000}
    assert _verdict(clean, "kernels.not_written_twice").passed
    clean.execute("insert into kernels select * from kernels where name = 'mm'")
    twice = _verdict(clean, "kernels.not_written_twice")
    assert twice.blocks
    assert twice.example_dicts()[0]["fewest_copies"] == 2


def test_steps_need_not_start_at_zero(clean) -> None:
    """torch_npu numbers ProfilerStep#N from the schedule's first recorded step (50, 551, ...)."""
    clean.execute("update slices set step = step + 549")
    clean.execute(
        "insert into slices select * replace (551 as step, start_ns + 1 as start_ns) from slices"
    )
    clean.execute("update step_breakdown set step = 550")
    assert _verdict(clean, "slices.steps_consecutive").passed
    assert _verdict(clean, "step_breakdown.steps_consecutive").passed


def test_config_interval_holds_the_mean_over_two_runs(clean) -> None:
    """A second run of the same configuration gives n = 2 and a real Student-t interval."""
    for table in ("runs", "ranks", "slices", "kernels", "comm_ops", "step_breakdown", "chunks"):
        clean.execute(f"insert into {table} select * replace ('r2' as run_id) from {table}")
    clean.execute("update chunks set end_ns = end_ns + 7000 where run_id = 'r2'")
    rows = clean.execute(
        "select n, ci_lo, mean, ci_hi from fct_config_metrics where metric = 'ttft_ns'"
    ).fetchall()
    assert rows and rows[0][0] == 2 and rows[0][1] < rows[0][2] < rows[0][3]
    assert _verdict(clean, "fct_config_metrics.interval_contains_mean").passed
    assert _verdict(clean, "fct_config_metrics.n_at_least_one").passed
