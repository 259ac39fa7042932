"""extract_chunks: ingested run -> segmented chunks in the warehouse, idempotent, per-run report."""

from __future__ import annotations

import json
import time
from pathlib import Path

import polars as pl
import pytest

from pipelines.analysis.chunks.chunk_store import extract_chunks
from pipelines.analysis.chunks.segment import (
    DEFAULT_MARKER_REGEX,
    MATCH_TIMEOUT_S,
    PROFILER_STEP_REGEX,
    MarkerRuleError,
)
from pipelines.cli import main
from pipelines.ingest.load import ingest_paths
from pipelines.replay.tables import chunks_frame
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import open_store, queries
from pipelines.store.insert import insert_frame
from pipelines.store.schema import CANONICAL_TABLES

KEY = ["rank", "vstage", "request_id", "chunk_idx"]


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """A two-request VPP run written as Ascend text exports: (result, run folder)."""
    result = simulate(
        [65536, 32768], "vpp", model="qwen3-coder-30b-a3b", chunk_size=16384, noise=0.03, seed=5
    )
    folder = tmp_path_factory.mktemp("raw") / "qwen-vpp"
    write_ascend_pt(result, folder)
    return result, folder


@pytest.fixture
def ingested(simulated, warehouse):
    """(connection, run_id, simulator truth) with the run ingested."""
    result, folder = simulated
    report = ingest_paths([folder], warehouse, progress=False)
    assert report.ok and len(report.runs) == 1
    run_id = report.runs[0].run_id
    return warehouse, run_id, chunks_frame(result, run_id)


def _stored(con, run_id: str) -> pl.DataFrame:
    return con.execute("select * from chunks where run_id = ? order by all", [run_id]).pl()


def test_extract_stores_the_simulators_chunks(ingested) -> None:
    con, run_id, truth = ingested
    report = extract_chunks(con)
    assert [r.run_id for r in report.runs] == [run_id]
    run = report.runs[0]
    assert run.chunks == truth.height == 6 * 4  # (4 + 2 chunks) x 4 virtual stages
    assert run.markers == truth.height and run.empty_markers == 0
    assert run.unassigned_ns == 0 and run.unassigned_fraction == 0.0
    assert run.device_busy_ns == pytest.approx(truth["busy_ns"].sum(), rel=1e-3)
    stored = _stored(con, run_id)
    joined = truth.join(stored, on=KEY, how="inner", suffix="_db")
    assert joined.height == truth.height
    assert ((joined["busy_ns_db"] / joined["busy_ns"] - 1).abs() < 0.01).all()
    assert (joined["tokens"] == joined["tokens_db"]).all()


def test_extract_twice_changes_nothing(ingested) -> None:
    con, run_id, _ = ingested
    extract_chunks(con)
    first = _stored(con, run_id)
    counts = queries.row_counts(con, CANONICAL_TABLES)
    again = extract_chunks(con, [run_id])
    assert again.total_chunks == first.height
    assert queries.row_counts(con, CANONICAL_TABLES) == counts
    assert _stored(con, run_id).equals(first)


def test_unknown_and_simulated_runs_are_not_segmented(ingested) -> None:
    con, run_id, truth = ingested
    sim_id = "replayed~sim"
    insert_frame(
        con, "runs", pl.DataFrame({"run_id": [sim_id], "source": ["sim"], "content_hash": ["x"]})
    )
    insert_frame(con, "chunks", truth.with_columns(pl.lit(sim_id).alias("run_id")))
    report = extract_chunks(con, ["nope", sim_id, run_id])
    assert report.unknown == ["nope"]
    assert [r for r, _ in report.skipped] == [sim_id]
    assert [r.run_id for r in report.runs] == [run_id]
    # the simulator's exact chunks are left alone, also when every run is extracted
    extract_chunks(con)
    assert _stored(con, sim_id).height == truth.height


def test_a_rule_that_matches_nothing_keeps_the_stored_chunks(ingested) -> None:
    con, run_id, _ = ingested
    extract_chunks(con)
    before = _stored(con, run_id)
    report = extract_chunks(con, [run_id], marker_regex=r"^no_such\[(?P<req>\w+),(?P<k>\d+)\]$")
    assert report.runs == [] and [k.run_id for k in report.kept] == [run_id]
    assert report.kept[0].stored_chunks == before.height > 0
    assert "matched no host slice" in report.kept[0].reason
    assert _stored(con, run_id).equals(before)
    assert _rule(con, run_id) is None  # the rule is not recorded either


def test_the_default_rule_clears_the_chunks_of_a_run_without_markers(ingested) -> None:
    con, run_id, _ = ingested
    extract_chunks(con)
    con.execute("delete from slices where run_id = ? and name like 'chunk[%'", [run_id])
    run = extract_chunks(con, [run_id]).runs[0]
    assert (run.chunks, run.markers) == (0, 0)
    assert run.unassigned_fraction == 1.0 and run.unassigned_ns == run.device_busy_ns > 0
    assert _stored(con, run_id).is_empty()


def _rule(con, run_id: str):
    text = con.execute("select segmentation from runs where run_id = ?", [run_id]).fetchone()[0]
    return None if text is None else json.loads(text)


def test_a_stored_rule_is_reapplied_by_extract_without_a_rule(ingested) -> None:
    con, run_id, _ = ingested
    by_steps = extract_chunks(con, [run_id], PROFILER_STEP_REGEX, renumber=True)
    assert by_steps.runs[0].chunks == 2  # one ProfilerStep window per rank
    assert _rule(con, run_id) == {"rule": "profiler_steps"}
    steps = _stored(con, run_id)
    # what `tracereplay ingest` calls: no rule given, the run's stored one is used
    again = extract_chunks(con, [run_id])
    assert again.runs[0].chunks == 2
    assert json.loads(again.runs[0].segmentation) == {"rule": "profiler_steps"}
    assert _stored(con, run_id).equals(steps)
    assert extract_chunks(con).total_chunks == 2  # every run: the same
    # the default rule given explicitly segments by chunk[...] markers and clears the rule
    default = extract_chunks(con, [run_id], DEFAULT_MARKER_REGEX)
    assert default.runs[0].chunks == 24 and default.runs[0].segmentation is None
    assert _rule(con, run_id) is None
    assert extract_chunks(con, [run_id]).runs[0].chunks == 24


def test_a_custom_regex_is_stored_and_reapplied(ingested) -> None:
    con, run_id, _ = ingested
    rule = r"^chunk\[req=(?P<req>[^,]+),k=(?P<k>[0-3])(?:,|\])"  # only k = 0..3, no vs
    first = extract_chunks(con, [run_id], rule).runs[0]
    assert _rule(con, run_id) == {"rule": "marker_regex", "regex": rule, "renumber": False}
    stored = _stored(con, run_id)
    assert first.chunks == stored.height > 0 and set(stored["chunk_idx"]) <= {0, 1, 2, 3}
    assert extract_chunks(con, [run_id]).runs[0].chunks == first.chunks
    assert _stored(con, run_id).equals(stored)


def test_a_warehouse_without_the_segmentation_column(ingested) -> None:
    con, run_id, _ = ingested
    con.execute("alter table runs drop column segmentation")
    assert extract_chunks(con, [run_id]).runs[0].chunks == 24  # no column: the default rule
    extract_chunks(con, [run_id], PROFILER_STEP_REGEX, renumber=True)  # adds the column
    assert _rule(con, run_id) == {"rule": "profiler_steps"}


def test_unusable_rules_raise_before_anything_changes(ingested) -> None:
    con, run_id, _ = ingested
    extract_chunks(con)
    before = _stored(con, run_id)
    for bad, why in (("(", "does not compile"), (r"^chunk\[(?P<k>\d+)", "lacks the named group")):
        with pytest.raises(MarkerRuleError, match=why):
            extract_chunks(con, [run_id], bad)
    assert _stored(con, run_id).equals(before)


def test_chunks_command(ingested, tmp_path: Path, capsys) -> None:
    con, run_id, truth = ingested
    path = tmp_path / "warehouse.duckdb"
    con.close()
    assert main(["chunks", "--warehouse", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["total_chunks"] == truth.height
    assert out["runs"][0]["run_id"] == run_id
    assert main(["chunks", "--warehouse", str(path), "--run", "missing"]) == 2
    assert "no run 'missing'" in capsys.readouterr().err
    assert main(["chunks", "--warehouse", str(tmp_path / "absent.duckdb")]) == 2
    # one ProfilerStep window per rank in a simulated trace: one chunk per rank
    assert main(["chunks", "--warehouse", str(path), "--profiler-steps", "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["runs"][0]
    assert (steps["chunks"], steps["unassigned_ns"]) == (2, 0)


@pytest.mark.real
def test_real_export_without_markers_segments_by_profiler_step(real_dir, warehouse) -> None:
    folder = real_dir / "msinsight" / "test" / "data" / "pytorch" / "text" / "level1"
    run_id = ingest_paths([folder], warehouse, progress=False).runs[0].run_id
    plain = extract_chunks(warehouse).runs[0]
    assert (plain.run_id, plain.chunks, plain.markers) == (run_id, 0, 0)
    assert plain.unassigned_fraction == 1.0
    by_step = extract_chunks(warehouse, [run_id], PROFILER_STEP_REGEX, renumber=True).runs[0]
    assert by_step.chunks == by_step.markers == 2 and by_step.unassigned_ns == 0
    stored = _stored(warehouse, run_id)
    # ProfilerStep#50 on both ranks, renumbered k=0
    assert stored["rank"].to_list() == [0, 1] and stored["chunk_idx"].to_list() == [0, 0]
    assert (stored["busy_ns"] > 0).all()


def _cli_warehouse(ingested, tmp_path: Path) -> tuple[str, str, pl.DataFrame]:
    """Segment the run by the default rule, then close the fixture's connection for the CLI:
    (warehouse path, run_id, its stored chunks)."""
    con, run_id, _ = ingested
    extract_chunks(con)
    stored = _stored(con, run_id)
    con.close()
    return str(tmp_path / "warehouse.duckdb"), run_id, stored


def _reopened(path: str, run_id: str) -> tuple[pl.DataFrame, object]:
    con = open_store(path).open(read_only=True)
    try:
        return _stored(con, run_id), _rule(con, run_id)
    finally:
        con.close()


LONG_NAME = "a" * 5000 + "!"
"""A host slice name on which nested quantifiers over `a` backtrack."""


def _add_long_host_slice(con, run_id: str) -> None:
    con.execute(
        "insert into slices (run_id, rank, lane, name, start_ns, dur_ns)"
        " values (?, 0, 'host', ?, 0, 1)",
        [run_id, LONG_NAME],
    )


@pytest.mark.parametrize(
    ("regex", "message"),
    [
        ("(", "does not compile"),
        (r"^chunk\[req=(?P<req>[^,]+)", "lacks the named group(s) k"),
        (r"^chunk\[k=(?P<k>\d+)", "lacks the named group(s) req"),
        (r"^no_such\[(?P<req>\w+),(?P<k>\d+)\]$", "matched no host slice"),
        # nested quantifiers: exponential in `re` on LONG_NAME, linear in `regex`, no match
        (r"^(?P<req>(a+)+)$(?P<k>\d+)?", "matched no host slice"),
        # exponential in `regex` too: cut off by the time bound
        (r"^(?P<req>(a|aa)+)(?P<k>\d+)$", "ran past its time bound of 0.5 s"),
    ],
)
def test_an_unusable_marker_regex_leaves_the_chunks_alone(
    ingested, tmp_path: Path, capsys, regex: str, message: str
) -> None:
    con, run_id, _ = ingested
    _add_long_host_slice(con, run_id)
    path, run_id, before = _cli_warehouse(ingested, tmp_path)
    capsys.readouterr()
    started = time.perf_counter()
    argv = ["chunks", "--warehouse", path, "--marker-regex", regex, "--match-timeout", "0.5"]
    assert main(argv) == 2
    assert time.perf_counter() - started < 30  # bounded (the unbounded `re` ran > 60 s)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    after, rule = _reopened(path, run_id)
    assert after.equals(before) and before.height == 24
    assert rule is None


@pytest.mark.slow  # waits out the default match time bound (CI runs it: .ci/run)
def test_the_time_bound_applies_without_the_option(ingested, tmp_path: Path, capsys) -> None:
    con, run_id, _ = ingested
    _add_long_host_slice(con, run_id)
    path, run_id, before = _cli_warehouse(ingested, tmp_path)
    started = time.perf_counter()
    assert (
        main(["chunks", "--warehouse", path, "--marker-regex", r"^(?P<req>(a|aa)+)(?P<k>\d)$"]) == 2
    )
    elapsed = time.perf_counter() - started
    assert MATCH_TIMEOUT_S <= elapsed < MATCH_TIMEOUT_S + 30  # a 2-core machine under load
    assert f"time bound of {MATCH_TIMEOUT_S:g} s" in capsys.readouterr().err
    assert _reopened(path, run_id)[0].equals(before)


def test_profiler_steps_are_stored_shown_and_reapplied(ingested, tmp_path: Path, capsys) -> None:
    path, run_id, by_markers = _cli_warehouse(ingested, tmp_path)
    capsys.readouterr()
    assert main(["chunks", "--warehouse", path, "--profiler-steps", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["runs"][0]
    assert (out["chunks"], out["segmentation"]) == (2, {"rule": "profiler_steps"})
    steps, rule = _reopened(path, run_id)
    assert steps.height == 2 and rule == {"rule": "profiler_steps"}
    # without a rule option: each run's stored rule, shown per run
    assert main(["chunks", "--warehouse", path]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].split()[-1] == "rule" and "profiler steps" in text.splitlines()[1]
    assert _reopened(path, run_id)[0].equals(steps)
    # what ingest does after re-ingesting the run
    con = open_store(path).open()
    assert extract_chunks(con, [run_id]).runs[0].chunks == 2
    con.close()
    assert _reopened(path, run_id)[0].equals(steps)
    # the default rule given explicitly: chunk[...] markers again, rule cleared
    assert main(["chunks", "--warehouse", path, "--default-markers", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)["runs"][0]
    assert (out["chunks"], out.get("segmentation")) == (24, None)
    after, rule = _reopened(path, run_id)
    assert after.equals(by_markers) and rule is None
    assert main(["chunks", "--warehouse", path, "--default-markers", "--profiler-steps"]) == 2
    assert "exclude each other" in capsys.readouterr().err


def test_a_custom_regex_from_the_command_line_is_stored(ingested, tmp_path: Path, capsys) -> None:
    path, run_id, _ = _cli_warehouse(ingested, tmp_path)
    regex = r"^chunk\[req=(?P<req>[^,]+),k=(?P<k>[01])(?:,|\])"
    assert main(["chunks", "--warehouse", path, "--marker-regex", regex]) == 0
    assert f"regex {regex}" in capsys.readouterr().out
    stored, rule = _reopened(path, run_id)
    assert rule == {"rule": "marker_regex", "regex": regex, "renumber": False}
    assert set(stored["chunk_idx"]) == {0, 1}
    # the default rule's own text is the default rule: it clears the stored one
    assert main(["chunks", "--warehouse", path, "--marker-regex", DEFAULT_MARKER_REGEX]) == 0
    assert _reopened(path, run_id)[1] is None


def test_several_runs_a_run_the_rule_misses_is_kept(ingested, tmp_path: Path, capsys) -> None:
    con, run_id, _ = ingested
    other = "other-run"
    con.execute(
        "insert into runs select * replace (? as run_id, 'other-hash' as content_hash)"
        " from runs where run_id = ?",
        [other, run_id],
    )
    con.execute(
        "insert into slices select * replace (? as run_id) from slices"
        " where run_id = ? and name not like 'ProfilerStep#%'",
        [other, run_id],
    )
    path, run_id, _ = _cli_warehouse(ingested, tmp_path)
    other_before, _ = _reopened(path, other)
    assert other_before.height == 24
    capsys.readouterr()
    assert (
        main(["chunks", "--warehouse", path, "--profiler-steps", "--json"]) == 0
    )  # a run without steps: kept and said, not an error
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert [r["run_id"] for r in out["runs"]] == [run_id]
    assert [(k["run_id"], k["stored_chunks"]) for k in out["kept"]] == [(other, 24)]
    assert captured.err.strip().splitlines() == [
        f"kept {other}: the rule (profiler steps) matched no host slice of the run; its 24 "
        "stored chunks and its rule (chunk markers) are unchanged"
    ]
    assert _reopened(path, run_id)[1] == {"rule": "profiler_steps"}
    after, rule = _reopened(path, other)
    assert after.equals(other_before) and rule is None


def test_profiler_steps_on_a_run_without_them_is_reported_not_an_error(
    ingested, tmp_path: Path, capsys
) -> None:
    con, run_id, _ = ingested
    con.execute("delete from slices where run_id = ? and name like 'ProfilerStep#%'", [run_id])
    path, run_id, before = _cli_warehouse(ingested, tmp_path)
    capsys.readouterr()
    assert main(["chunks", "--warehouse", path, "--profiler-steps"]) == 0
    assert f"kept {run_id}" in capsys.readouterr().err
    after, _ = _reopened(path, run_id)
    assert after.equals(before)
