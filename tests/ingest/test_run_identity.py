"""One origin, one current run; same bytes change nothing; one bad run never aborts the call;
the warehouse path is what it says; concurrent writers queue (docs/run_identity.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.ingest.load import ingest_paths
from pipelines.store import FileStore, open_store, queries
from tests.ingest.malformed.corpus import GOOD_KERNELS, OUT, STEP_HEADER, good_run, rank_folder


def _two_rank_job(root: Path) -> Path:
    """A two-rank text export (rank folders with profiler_info under one parent = one run)."""
    job = root / "job"
    for rank in (0, 1):
        folder = rank_folder(job, rank)
        (folder / OUT / "kernel_details.csv").write_text(GOOD_KERNELS)
        (folder / OUT / "step_trace_time.csv").write_text(
            STEP_HEADER + "3,100.0,60.0,40.0,100.0,0.0,110.25,100.0,-40.0,5.0\n"
        )
    return job


def _edit_one_kernel_row(job: Path, rank: int = 0) -> None:
    csv = job / f"rank{rank}_ascend_pt" / OUT / "kernel_details.csv"
    csv.write_text(csv.read_text().replace("add_1,Add", "add_1_edited,Add"))


def _runs(con) -> list[tuple]:
    return con.execute("select run_id, origin from runs order by run_id").fetchall()


def test_edited_csv_replaces_the_run_and_fit_counts_it_once(tmp_path: Path, warehouse) -> None:
    job = _two_rank_job(tmp_path)
    first = ingest_paths([job], warehouse, progress=False).runs[0]
    _edit_one_kernel_row(job)
    second = ingest_paths([job], warehouse, progress=False).runs[0]
    assert second.status == "replaced" and second.replaced == [first.run_id]
    assert _runs(warehouse) == [(second.run_id, str(job.resolve()))]
    names = warehouse.execute("select name from kernels where rank = 0 order by name").fetchall()
    assert ("add_1_edited",) in names and ("add_1",) not in names
    assert queries.row_counts(warehouse, ["kernels", "ranks"]) == {"kernels": 6, "ranks": 2}
    inputs = warehouse.execute("select distinct run_id from run_inputs").fetchall()
    assert inputs == [(second.run_id,)]


def test_rank_subfolder_of_an_ingested_run_refreshes_that_run(tmp_path: Path, warehouse) -> None:
    job = _two_rank_job(tmp_path)
    first = ingest_paths([job], warehouse, progress=False).runs[0]
    again = ingest_paths([job / "rank1_ascend_pt"], warehouse, progress=False).runs[0]
    assert (again.status, again.run_id) == ("unchanged", first.run_id)
    _edit_one_kernel_row(job, rank=1)
    refreshed = ingest_paths([job / "rank1_ascend_pt"], warehouse, progress=False).runs[0]
    assert refreshed.status == "replaced" and refreshed.replaced == [first.run_id]
    assert refreshed.ranks == 2  # the whole run, not a one-rank run beside it
    assert len(_runs(warehouse)) == 1
    assert queries.row_counts(warehouse, ["kernels"]) == {"kernels": 6}


def test_rank_folders_given_one_at_a_time_make_one_run(tmp_path: Path, warehouse) -> None:
    job = _two_rank_job(tmp_path)
    ingest_paths([job / "rank0_ascend_pt"], warehouse, progress=False)
    second = ingest_paths([job / "rank1_ascend_pt"], warehouse, progress=False).runs[0]
    assert second.status == "replaced" and second.ranks == 2
    assert len(_runs(warehouse)) == 1


def test_same_bytes_are_unchanged_and_keep_earlier_tags(tmp_path: Path, warehouse) -> None:
    job = _two_rank_job(tmp_path)
    tags = {"model": "qwen3-8b", "schedule": "vpp"}
    first = ingest_paths([job], warehouse, tags=tags, progress=False).runs[0]
    again = ingest_paths([job], warehouse, progress=False).runs[0]
    assert (again.status, again.run_id) == ("unchanged", first.run_id)
    row = warehouse.execute("select model, schedule, tags, ingested_at from runs").fetchone()
    assert row[:2] == ("qwen3-8b", "vpp") and json.loads(row[2]) == tags
    retag = ingest_paths([job], warehouse, tags={"schedule": "cpp"}, progress=False).runs[0]
    assert retag.status == "retagged" and retag.run_id == first.run_id
    row2 = warehouse.execute("select model, schedule, tags, ingested_at from runs").fetchone()
    assert row2[:2] == ("qwen3-8b", "cpp") and row2[3] == row[3]
    assert json.loads(row2[2]) == {"model": "qwen3-8b", "schedule": "cpp"}
    # new bytes keep the merged tags too
    _edit_one_kernel_row(job)
    replaced = ingest_paths([job], warehouse, progress=False).runs[0]
    assert replaced.status == "replaced"
    assert warehouse.execute("select model, schedule from runs").fetchone() == ("qwen3-8b", "cpp")


def test_unchanged_bytes_are_not_parsed(tmp_path: Path, warehouse, monkeypatch) -> None:
    job = _two_rank_job(tmp_path)
    ingest_paths([job], warehouse, progress=False)
    import pipelines.ingest.load as load

    def fail(*_args, **_kwargs):
        raise AssertionError("unchanged bytes were parsed")

    monkeypatch.setattr(load, "assemble_run", fail)
    assert ingest_paths([job], warehouse, progress=False).runs[0].status == "unchanged"


def test_cli_says_unchanged(tmp_path: Path, capsys) -> None:
    job = _two_rank_job(tmp_path)
    argv = ["ingest", str(job), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"]
    assert main(argv) == 0
    assert " loaded " in capsys.readouterr().out
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert " unchanged " in out and "1 runs (1 unchanged)" in out


def test_prune_removes_runs_the_folder_no_longer_holds(tmp_path: Path, warehouse) -> None:
    raw = tmp_path / "raw"
    good_run(raw / "a")
    good_run(raw / "b")
    assert len(ingest_paths([raw], warehouse, progress=False).runs) == 2
    import shutil

    shutil.rmtree(raw / "b")
    report = ingest_paths([raw], warehouse, progress=False, prune=True)
    assert len(report.pruned) == 1 and len(_runs(warehouse)) == 1


def test_a_null_name_spoils_its_row_not_the_call(tmp_path: Path, warehouse) -> None:
    """Before: a trace event with "name": null raised a NOT NULL violation from the insert:
    traceback, exit 1, the later inputs skipped and no quarantine rows at all."""
    bad = rank_folder(tmp_path / "bad_job")
    events = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
        {
            "ph": "M",
            "name": "process_name",
            "pid": 2,
            "tid": 0,
            "args": {"name": "Ascend Hardware"},
        },
        {"ph": "X", "name": None, "pid": 2, "tid": 1, "ts": "10.000", "dur": 1.0, "args": {}},
        {"ph": "X", "name": "matmul", "pid": 2, "tid": 1, "ts": "12.000", "dur": 1.0, "args": {}},
    ]
    (bad / OUT / "trace_view.json").write_text(json.dumps(events))
    good = good_run(tmp_path / "inputs")
    report = ingest_paths([bad.parent, good], warehouse, progress=False)
    by_origin = {Path(r.origin).name: r for r in report.runs}
    assert by_origin["good_job"].rows["kernels"] == 3
    bad_run = by_origin["bad_job"]
    assert sum(bad_run.dropped_rows.values()) == 1, bad_run.dropped_rows
    names = warehouse.execute(
        "select name from slices where run_id = ? and lane = 'compute'", [bad_run.run_id]
    ).fetchall()
    assert names == [("matmul",)]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_is_quarantined_as_it_happens(tmp_path: Path, warehouse) -> None:
    bad = rank_folder(tmp_path / "bad_job")
    csv = bad / OUT / "kernel_details.csv"
    csv.write_text(GOOD_KERNELS)
    csv.chmod(0)
    good = good_run(tmp_path / "inputs")
    report = ingest_paths([bad.parent, good], warehouse, progress=False)
    assert any(q.reason == "unreadable" for q in report.quarantined)
    assert [r.rows["kernels"] for r in report.runs if "good" in r.origin] == [3]


def test_a_failing_run_is_quarantined_and_the_others_load(
    tmp_path: Path, warehouse, monkeypatch
) -> None:
    """Any exception of one run (here: the hashing thread's PermissionError, as for a file that
    cannot be read) becomes a quarantine row written at once; the other runs load."""
    import pipelines.ingest.assemble as assemble

    bad_job = _two_rank_job(tmp_path / "bad")
    good = good_run(tmp_path / "inputs")
    real = assemble.file_digests

    def digests(files):
        if any("bad" in str(p) for p in files):
            raise PermissionError(13, "Permission denied", str(files[0]))
        return real(files)

    monkeypatch.setattr(assemble, "file_digests", digests)
    recorded = []
    import pipelines.ingest.load as load

    original = load._record

    def record(con, items):
        items = list(items)
        recorded.append([i.reason for i in items])
        original(con, items)

    monkeypatch.setattr(load, "_record", record)
    report = ingest_paths([bad_job, good], warehouse, progress=False)
    assert [q.reason for q in report.quarantined] == ["unreadable"]
    assert ["unreadable"] in recorded  # written when it happened
    assert [r.rows["kernels"] for r in report.runs] == [3]
    stored = warehouse.execute("select reason from quarantine").fetchall()
    assert stored == [("unreadable",)]


@pytest.mark.parametrize(
    "content",
    [b'[{"name": "x"}]', b"a,b\n1,2\n", b"", b"SQLite format 3\x00" + b"\x00" * 100],
    ids=["json", "csv", "empty", "sqlite"],
)
def test_warehouse_that_is_not_duckdb_is_refused(tmp_path: Path, capsys, content) -> None:
    target = tmp_path / "target"
    target.write_bytes(content)
    good = good_run(tmp_path / "inputs")
    assert main(["ingest", str(good), "--warehouse", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(target) in err[0], err
    assert target.read_bytes() == content


def test_warehouse_that_is_a_directory_is_refused(tmp_path: Path, capsys) -> None:
    good = good_run(tmp_path / "inputs")
    for command in (["ingest", str(good)], ["fit"], ["chunks"]):
        assert main([*command, "--warehouse", str(tmp_path)]) == 2
        assert "is a directory" in capsys.readouterr().err


def test_waiting_writer_says_who_holds_the_lock(tmp_path: Path) -> None:
    target = tmp_path / "w.duckdb"
    open_store(target).open().close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True);"
            " time.sleep(1.5); c.close()",
            str(target),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    said = []
    started = time.monotonic()
    con = FileStore(target, wait_s=30, on_wait=said.append).open()
    waited = time.monotonic() - started
    con.close()
    holder.wait()
    assert said and f"PID {holder.pid}" in said[0] and waited > 0.5


def test_waiting_gives_up_with_one_line(tmp_path: Path) -> None:
    target = tmp_path / "w.duckdb"
    holder = open_store(target).open()
    code = (
        "import sys; from pipelines.cli import main;"
        f" sys.exit(main(['fit', '--warehouse', {str(target)!r}, '--wait', '0.5']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    holder.close()
    assert done.returncode == 2
    assert "still in use by PID" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow  # two CLI processes end to end (CI runs it: .ci/run)
def test_two_ingests_started_together_both_finish(tmp_path: Path) -> None:
    """Before: the second died with a raw DuckDB lock traceback (exit 1), and the lock was held
    through the whole parse."""
    target = tmp_path / "w.duckdb"
    jobs = [_two_rank_job(tmp_path / name) for name in ("first", "second")]
    command = [sys.executable, "-m", "pipelines.cli", "ingest", "--json", "--wait", "120"]
    procs = [
        subprocess.Popen(
            [*command, "--warehouse", str(target), str(job)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for job in jobs
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    con = open_store(target).open(read_only=True)
    try:
        assert queries.row_counts(con, ["runs", "ranks", "kernels"]) == {
            "runs": 2,
            "ranks": 4,
            "kernels": 12,
        }
    finally:
        con.close()


def test_target_opens_the_file_only_to_write(tmp_path: Path) -> None:
    """Between writes the file is free: another process can open it while ingest parses."""
    target = open_store(tmp_path / "w.duckdb", wait_s=5)
    report = ingest_paths([good_run(tmp_path / "inputs")], target, progress=False)
    assert report.runs[0].rows["kernels"] == 3
    con = open_store(tmp_path / "w.duckdb", wait_s=0).open()  # not held any more
    con.close()


def test_old_warehouse_gains_new_columns(tmp_path: Path) -> None:
    import duckdb

    target = tmp_path / "old.duckdb"
    con = duckdb.connect(str(target))
    con.execute(
        "create table runs (run_id varchar primary key, source varchar not null,"
        " origin varchar, content_hash varchar not null)"
    )
    con.execute("insert into runs values ('r1', 'sim', '/x', 'abc')")
    con.close()
    con = open_store(target).open()
    try:
        assert "segmentation" in queries.table_columns(con, "runs")
        assert con.execute("select run_id, segmentation from runs").fetchall() == [("r1", None)]
    finally:
        con.close()
