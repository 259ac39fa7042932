"""Round seven of the hostile-input campaign (issue 36): one bad value in msprof-analyze's
cluster_step_trace_time.csv, on a copy of msinsight's 16-rank GPT-3 job (rank folders 0 and 1
and its cluster_analysis_output, read in place under ../shared/traces/real). On 373e096 a
negative time, an Index of `-1` or `3.0` and a rank row written twice (the same or other times)
were stored as they were, and one row of Type `junk` lost the whole file (every rank's stage)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines.cli import main

JOB = Path("msinsight/server/src/test/test_data")
STEPS = "cluster_analysis_output/cluster_step_trace_time.csv"


def _job(real_dir: Path, dest: Path) -> Path:
    source = real_dir / JOB
    if not source.is_dir():
        pytest.skip(f"{source} not found")
    for sub in ("test_rank_0", "test_rank_1", "cluster_analysis_output"):
        shutil.copytree(source / sub, dest / sub)
    for path in dest.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


def _rows(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text())))


def _write(path: Path, rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue())


def _stored(warehouse: Path) -> tuple[list[tuple], list[tuple]]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        steps = con.execute(
            "select * exclude (run_id) from step_breakdown where origin = 'cluster' order by all"
        ).fetchall()
        ranks = con.execute("select rank, pp_stage from ranks order by rank").fetchall()
    return steps, ranks


@pytest.fixture
def reference(real_dir: Path, tmp_path: Path) -> tuple[list[tuple], list[tuple]]:
    """The job with rank 3's row (line 5) deleted."""
    job = _job(real_dir, tmp_path / "ref")
    rows = _rows(job / STEPS)
    assert rows[4][2] == "3"
    _write(job / STEPS, rows[:4] + rows[5:])
    main(["ingest", str(job), "--warehouse", str(tmp_path / "ref.duckdb"), "--no-progress"])
    return _stored(tmp_path / "ref.duckdb")


@pytest.mark.parametrize(
    ("column", "value", "why"),
    [
        ("Computing", "-1", "Computing is a negative time"),
        ("Free", "-0.5", "Free is a negative time"),
        ("Index", "-1", "Index is no rank"),
        ("Index", "3.0", "Index is no rank"),
        ("Type", "junk", "Type is neither rank nor stage"),
    ],
)
def test_a_bad_cell_costs_its_row(
    real_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    reference: tuple[list[tuple], list[tuple]],
    column: str,
    value: str,
    why: str,
) -> None:
    job = _job(real_dir, tmp_path / "run")
    rows = _rows(job / STEPS)
    rows[4][rows[0].index(column)] = value
    _write(job / STEPS, rows)
    code = main(["ingest", str(job), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    assert code == 2 and f"line 5: {why}" in capsys.readouterr().err
    assert _stored(tmp_path / "w.duckdb") == reference


def test_a_rank_row_given_twice_is_counted_once_or_not_at_all(
    real_dir: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    reference: tuple[list[tuple], list[tuple]],
) -> None:
    clean = _job(real_dir, tmp_path / "clean")
    main(["ingest", str(clean), "--warehouse", str(tmp_path / "clean.duckdb"), "--no-progress"])
    job = _job(real_dir, tmp_path / "copy")
    rows = _rows(job / STEPS)
    _write(job / STEPS, [*rows[:5], rows[4], *rows[5:]])
    assert main(["ingest", str(job), "--warehouse", str(tmp_path / "w.duckdb")]) == 2
    assert "line 6: duplicate_row (a copy of line 5)" in capsys.readouterr().err
    assert _stored(tmp_path / "w.duckdb") == _stored(tmp_path / "clean.duckdb")
    job = _job(real_dir, tmp_path / "other")
    other = list(rows[4])
    other[rows[0].index("Computing")] = "1.0"
    _write(job / STEPS, [*rows[:5], other, *rows[5:]])
    assert main(["ingest", str(job), "--warehouse", str(tmp_path / "w2.duckdb")]) == 2
    assert "both left out" in capsys.readouterr().err
    assert _stored(tmp_path / "w2.duckdb") == reference


GROUPS = "cluster_analysis_output/communication_group.json"


def _groups(warehouse: Path) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute("select rank, pp_stage, groups from ranks order by rank").fetchall()


@pytest.mark.parametrize(
    ("group", "why"),
    [
        ([0, "x"], "holds 'x', no rank"),
        ([0, 2**40], "holds '1099511627776', no rank"),
        ([-1, 0], "holds '-1', no rank"),
        ([0, 8.5], "holds '8.5', no rank"),
        ([0, 0, 8], "names rank 0 twice"),
        (None, "is null, no list of ranks"),
    ],
)
def test_a_bad_communication_group_costs_itself(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], group: object, why: str
) -> None:
    """On 373e096 the group was left out without a word ("x", 8.5, null), made a rank -1, was
    stored with rank 0 twice, or (2^40) failed every group of the file."""
    ref = _job(real_dir, tmp_path / "ref")
    groups = json.loads((ref / GROUPS).read_text())
    assert groups["collective"][1] == [0, 8]
    del groups["collective"][1]
    (ref / GROUPS).write_text(json.dumps(groups))
    main(["ingest", str(ref), "--warehouse", str(tmp_path / "ref.duckdb"), "--no-progress"])
    job = _job(real_dir, tmp_path / "run")
    groups = json.loads((job / GROUPS).read_text())
    groups["collective"][1] = group
    (job / GROUPS).write_text(json.dumps(groups))
    code = main(["ingest", str(job), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    assert code == 2 and f"collective[1] {why}" in capsys.readouterr().err
    assert _groups(tmp_path / "w.duckdb") == _groups(tmp_path / "ref.duckdb")


COMM = "cluster_analysis_output/cluster_communication.json"


@pytest.mark.parametrize("start", [1e300, "abc", -5.0])
def test_a_bad_cluster_communication_time_costs_its_op(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], start: object
) -> None:
    """On 373e096 a start of 1e300 failed the whole cluster folder (`read_error:
    OverflowError`): every rank's stage and groups lost."""
    clean = _job(real_dir, tmp_path / "clean")
    main(["ingest", str(clean), "--warehouse", str(tmp_path / "clean.duckdb"), "--no-progress"])
    job = _job(real_dir, tmp_path / "run")
    comm = json.loads((job / COMM).read_text())
    op = comm["p2p"]["step2"]["hcom_send__822_0@13337953553061386822"]["0"]
    op["Communication Time Info"]["Start Timestamp(us)"] = start
    (job / COMM).write_text(json.dumps(comm))
    code = main(["ingest", str(job), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "hcom_send__822_0@13337953553061386822 rank 0: Start" in err
    assert "read_error" not in err
    assert _groups(tmp_path / "w.duckdb") == _groups(tmp_path / "clean.duckdb")


MATRIX = "test_rank_0/ASCEND_PROFILER_OUTPUT/communication_matrix.json"


def _comm(warehouse: Path) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute("select * exclude (run_id) from comm_ops order by all").fetchall()


@pytest.mark.parametrize("size", [float("nan"), 2.0**64, "abc", -5.0, None])
def test_a_bad_matrix_link_costs_itself(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], size: object
) -> None:
    """On 373e096 a Transit Size(MB) of NaN or 2^64 failed the rank's whole
    communication_matrix.json (read_error), every op's peer from it lost; 'abc' and -5 were
    read as unknown bytes without a word. `None` stands for the link being no object."""
    ref = _job(real_dir, tmp_path / "ref")
    matrix = json.loads((ref / MATRIX).read_text())
    links = matrix["step2"]["p2p"]["hcom_send__822_0@13337953553061386822"]
    del links["0-8"]
    (ref / MATRIX).write_text(json.dumps(matrix))
    main(["ingest", str(ref), "--warehouse", str(tmp_path / "ref.duckdb"), "--no-progress"])
    job = _job(real_dir, tmp_path / "run")
    matrix = json.loads((job / MATRIX).read_text())
    links = matrix["step2"]["p2p"]["hcom_send__822_0@13337953553061386822"]
    if size is None:
        links["0-8"] = "junk"
    else:
        links["0-8"]["Transit Size(MB)"] = size
    (job / MATRIX).write_text(json.dumps(matrix))
    code = main(["ingest", str(job), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "hcom_send__822_0@13337953553061386822 link 0-8" in err
    assert "read_error" not in err
    assert _comm(tmp_path / "w.duckdb") == _comm(tmp_path / "ref.duckdb")


def test_a_row_the_file_ends_inside_costs_itself(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On 373e096 a cluster_step_trace_time.csv cut inside its last rank row's Free cell
    stored that rank's step with the digits before the cut and its later cells NULL."""
    ref = _job(real_dir, tmp_path / "ref")
    rows = _rows(ref / STEPS)
    ranks = [row for row in rows if row[1] != "stage"]  # the header and the 16 rank rows
    _write(ref / STEPS, ranks[:-1])
    main(["ingest", str(ref), "--warehouse", str(tmp_path / "ref.duckdb"), "--no-progress"])
    job = _job(real_dir, tmp_path / "run")
    _write(job / STEPS, ranks)
    text = (job / STEPS).read_text()
    free = text.rstrip("\n").rsplit("\n", 1)[1].split(",")[rows[0].index("Free")]
    (job / STEPS).write_text(text[: text.rindex(free) + 3])  # the file ends inside Free
    code = main(["ingest", str(job), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    assert code == 2 and "line 17: cut_off (the file ends inside it" in capsys.readouterr().err
    assert _stored(tmp_path / "w.duckdb") == _stored(tmp_path / "ref.duckdb")


def test_a_group_key_given_twice_refuses_the_group_file(
    real_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On 373e096 Python's json kept the second `collective` list without a word."""
    ref = _job(real_dir, tmp_path / "ref")
    (ref / GROUPS).unlink()
    main(["ingest", str(ref), "--warehouse", str(tmp_path / "ref.duckdb"), "--no-progress"])
    job = _job(real_dir, tmp_path / "run")
    text = (job / GROUPS).read_text()
    (job / GROUPS).write_text('{"collective": [[0, 1]], ' + text.lstrip()[1:])
    code = main(["ingest", str(job), "--warehouse", str(tmp_path / "w.duckdb"), "--no-progress"])
    assert code == 2 and "'collective' is given twice" in capsys.readouterr().err
    assert _groups(tmp_path / "w.duckdb") == _groups(tmp_path / "ref.duckdb")
