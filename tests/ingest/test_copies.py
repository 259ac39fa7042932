"""One measurement, one run in the statistics: a byte-identical copy of a run folder is stored
(it is another origin) but said to be a duplicate, left out of the tau_k points and of run
selections, and a data check fails when a copy reaches the points (docs/run_identity.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines.analysis.chunks.chunk_store import extract_chunks
from pipelines.analysis.tau.tau_points import load_tau_points
from pipelines.ingest.load import ingest_paths
from pipelines.quality.checks import run_checks
from pipelines.selectors import select_run_ids
from pipelines.sim.run import simulate
from pipelines.sim.writers_ascend import write_ascend_pt
from pipelines.store import FileStore, relations

EXCLUSION = "and c.run_id not in (select cp.run_id from int_run_copies as cp)"


@pytest.fixture
def two_copies(tmp_path: Path):
    first = tmp_path / "raw" / "a" / "cpp"
    write_ascend_pt(simulate([32768], "cpp", chunk_size=16384, pp=2), first)
    second = tmp_path / "raw" / "b" / "cpp"
    shutil.copytree(first, second)
    store = FileStore(tmp_path / "w.duckdb")
    a = ingest_paths([first], store, progress=False).runs[0]
    b = ingest_paths([second], store, progress=False).runs[0]
    with store.open_runs() as session:
        assert {r.chunks for r in extract_chunks(session).runs} == {4}  # as `tracereplay ingest`
    return store, a, b


def test_a_copy_is_stored_said_and_counted_once(two_copies) -> None:
    store, a, b = two_copies
    assert a.run_id != b.run_id and a.duplicate_of is None
    assert b.duplicate_of == a.run_id and b.as_json()["duplicate_of"] == a.run_id
    with store.session(read_only=True) as session:
        points, _ = load_tau_points(session)
        assert set(points["run_id"].to_list()) == {a.run_id}
        assert select_run_ids(session, None) == [a.run_id]
        assert sorted(select_run_ids(session, None, copies=True)) == sorted([a.run_id, b.run_id])
        assert select_run_ids(session, f"runs={b.run_id}") == [b.run_id]  # named: selected


def test_the_check_fails_when_a_copy_reaches_the_points(two_copies) -> None:
    store = two_copies[0]
    with store.session(read_only=True) as session:
        report = run_checks(session, tables=["runs"])
        by_name = {r.expectation.name: r for r in report.results}
        assert by_name["measurement_counted_once"].passed
        assert not by_name["stored_once"].passed  # the copy is listed (a warning)
        # the points as they were before copies were left out: the check must catch it
        select = relations.project_relations()[0]["int_chunk_tau"].select
        assert EXCLUSION in select
        session.execute(
            f"create or replace temp view int_chunk_tau as {select.replace(EXCLUSION, '')}"
        )
        report = run_checks(session, tables=["runs"])
        failed = {r.expectation.name for r in report.results if not r.passed}
        assert "measurement_counted_once" in failed
