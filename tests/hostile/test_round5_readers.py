"""Round five of the hostile-input campaign (issue 36): the one-bad-value cases it found in the
Ascend readers, each on a copy of a real export (the msinsight Level1 rank 0 text and SQLite
exports, read in place under ../shared/traces/real, copied before changing). The campaign script
(/tmp/h5/hostile/campaign5.py, docs/ingest_rules.md "round five") compared every stored row with an
ingest of a reference made with the csv / json / sqlite3 modules alone (the bad row removed);
these are its fast failing cases (each fails on b9a793c)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.sqlite_rank import rank_with_sql

TEXT = Path("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")


COMPUTE_TASK = (
    "(select min(rowid) from TASK"
    " where globalTaskId in (select globalTaskId from COMPUTE_TASK_INFO))"
)


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("streamId = NULL", "invalid_stream"),
        ("streamId = 'x'", "invalid_stream"),
        ("deviceId = 'abc'", "invalid_device"),
        ("deviceId = 1099511627776", "invalid_device"),
    ],
)
def test_a_task_stream_or_device_that_is_no_integer_costs_its_task(
    real_dir: Path, tmp_path: Path, sql: str, reason: str
) -> None:
    """A TASK deviceId 'abc' failed the whole rank (Polars could not build the Int32 column); a
    NULL streamId was kept as a kernel in no stream. Now the task is dropped and named."""
    from pipelines.ingest.readers.ascend_db import read_rank

    clean = read_rank(rank_with_sql(real_dir, tmp_path / "a", "select 1"))
    update = f"update TASK set {sql} where rowid = {COMPUTE_TASK}"
    bad = read_rank(rank_with_sql(real_dir, tmp_path / "b", update))
    assert bad.tables["kernels"].height == clean.tables["kernels"].height - 1
    assert bad.dropped == {reason: 1}
    (aside,) = [q for q in bad.quarantined if q.reason == "invalid_rows"]
    assert reason in aside.detail


def _comm(real_dir: Path, tmp_path: Path, change) -> tuple:
    from pipelines.ingest.readers.communication import read_communication_rows

    source = real_dir / TEXT / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    data = json.loads(source.read_text())
    step = next(iter(data))
    kind = next(k for k, ops in data[step].items() if ops)
    op = next(k for k in data[step][kind] if k != "Total Op Info")
    change(data[step][kind], op)
    path = tmp_path / "communication.json"
    path.write_text(json.dumps(data))
    return read_communication_rows(source)[0], *read_communication_rows(path)


@pytest.mark.parametrize(
    "change",
    [
        lambda ops, op: ops[op].__setitem__("Communication Bandwidth Info", "x"),
        lambda ops, op: ops[op].__setitem__("Communication Bandwidth Info", [1, 2]),
        lambda ops, op: ops.__setitem__(op, None),
    ],
    ids=["bandwidth a string", "bandwidth a list", "the op null"],
)
def test_a_communication_op_that_cannot_be_read_is_named(real_dir, tmp_path, change) -> None:
    """A Bandwidth Info that is no object was read as 0 bytes, and an op that is JSON null was
    skipped, both without a word (exit 0). Now the op is left out and named."""
    clean, rows, set_aside = _comm(real_dir, tmp_path, change)
    assert rows.height == clean.height - 1
    assert len(set_aside) == 1


REAL_STEP = "{step},8873.756,101963.203,4028.675,105991.878,25744.05,136581.0,0,101963.203,17902.5"


def test_a_step_row_without_a_step_among_numbered_ones_is_set_aside(real_dir, tmp_path) -> None:
    """A row whose Step is empty among rows 50..53 was stored under a NULL step (exit 0)."""
    from pipelines.ingest.readers.step_trace import read_step_trace_time

    source = real_dir / TEXT / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    header = source.read_text().splitlines()[0]
    rows = [REAL_STEP.format(step=s) for s in ("50", "51", "", "53")]
    path = tmp_path / "step_trace_time.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    read = read_step_trace_time(path)
    assert read.rows["step"].to_list() == [50, 51, 53]
    assert read.set_aside == ["line 4: Step is empty (the other rows have one)"]
    path.write_text("\n".join([header, REAL_STEP.format(step="")]) + "\n")  # no steps at all: kept
    assert read_step_trace_time(path).rows.height == 1


def test_a_rank_id_given_twice_is_named(real_dir: Path, tmp_path: Path) -> None:
    """`{"rank_id": 5, ..., "rank_id": 0}`: Python's json kept the last without a word; which
    one the writer meant is unknown, so the file name's N is used and the problem named."""
    from pipelines.ingest.readers.profiler_info import read_profiler_info

    source = real_dir / TEXT / "profiler_info_0.json"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    path = tmp_path / "profiler_info_3.json"
    path.write_text(source.read_text().replace("{", '{"rank_id": 5, ', 1))
    info = read_profiler_info(path)
    assert info.rank == 3
    assert info.rank_problem is not None and "rank_id is given 2 times" in info.rank_problem
    path.write_text(source.read_text())  # the real file: one rank_id, no problem
    assert read_profiler_info(path).rank_problem is None
