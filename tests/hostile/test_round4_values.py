"""Round four of the hostile-input campaign (issue 36): the one-bad-value cases it found, each made
from a copy of a real export (the msinsight Level1 rank 0 text export: read in place under
../shared/traces/real, copied before changing). The campaign script (/tmp/h4/hostile/campaign4.py,
docs/ingest_rules.md "round four") compares every stored row with an ingest of a reference file
made with the csv / json / sqlite3 modules alone; these are its fast failing cases."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from pipelines.ingest.readers.trace_view import read_trace_view
from tests.hostile.sqlite_rank import rank_with_sql

LEVEL1 = Path("msinsight/test/data/pytorch/text/level1/rank0_ascend_pt")


@pytest.fixture(scope="module")
def trace_events(real_dir: Path) -> list:
    path = real_dir / LEVEL1 / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return json.loads(path.read_text())


def _starts(path: Path) -> list[int]:
    return sorted(read_trace_view(path).slices["start_ns"].to_list())


def test_a_json_number_ts_past_the_head_is_read_exactly(trace_events, tmp_path: Path) -> None:
    """One `ts` written as a JSON number deep in a string-`ts` file (past the 64 KB head the
    reader looks at first): DuckDB read it through a double, 1736408883717128.900 ->
    1736408883717129.0 (100 ns off). Now the whole file is searched and msgspec keeps the digits."""
    texts = [json.dumps(e) for e in trace_events]
    index = next(
        i
        for i, e in enumerate(trace_events)
        if i > 2000 and e.get("ph") == "X" and not e["ts"].endswith("000")
    )
    ts = trace_events[index]["ts"]
    clean, changed = tmp_path / "clean.json", tmp_path / "trace_view.json"
    clean.write_text("[" + ", ".join(texts) + "]")
    texts[index] = texts[index].replace(f'"ts": "{ts}"', f'"ts": {ts}')
    changed.write_text("[" + ", ".join(texts) + "]")
    assert f'"ts": {ts}' in changed.read_text()[70_000:]  # past the head
    starts = _starts(changed)
    assert int(Decimal(ts) * 1000) in starts
    assert starts == _starts(clean)


@pytest.mark.parametrize("form", ["array", "object", "numeric ts", "streamed"])
@pytest.mark.parametrize(("raw", "text"), [("12", "12"), ("1.5", "1.5"), ("true", "true")])
def test_a_json_scalar_name_is_its_text_on_every_path(
    trace_events, tmp_path: Path, form: str, raw: str, text: str
) -> None:
    """One rule for a `name` that is a JSON number or boolean: kept under its JSON text. The
    array form (DuckDB) read `12` as "12" while the object form and a file with a numeric ts
    (msgspec) set the event aside as invalid_event (issue 36 round four)."""
    events = json.loads(json.dumps(trace_events))
    index = next(i for i, e in enumerate(events) if e.get("ph") == "X" and i > 100)
    if form == "numeric ts":  # a numeric ts in the head: the file is decoded by msgspec
        events[0]["ts"] = 0
    events[index]["name"] = "__round4__"
    body = json.dumps(events if form != "object" else {"traceEvents": events})
    body = body.replace('"__round4__"', raw, 1)
    path = tmp_path / "trace_view.json"
    path.write_text(body)
    view = read_trace_view(path, max_memory=1 if form == "streamed" else None)
    slices = view.slices.collect() if form == "streamed" else view.slices
    clean = json.loads(json.dumps(trace_events))
    if form == "numeric ts":
        clean[0]["ts"] = 0
    reference = tmp_path / "clean.json"
    reference.write_text(json.dumps(clean))
    assert slices.height == read_trace_view(reference).slices.height
    assert view.dropped in ({}, None)
    assert slices.filter(slices["name"] == text).height >= 1


def _kernel_lines(real_dir: Path) -> list[str]:
    path = real_dir / LEVEL1 / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path.read_text().split("\n")


def test_one_nul_in_a_kernel_name_costs_nothing(real_dir: Path, tmp_path: Path) -> None:
    """A NUL byte inside one Name cell made the whole kernel_details.csv `not_csv` (binary): 191
    kernels lost. DuckDB reads the cell as it is; the file is binary only for a NUL in its
    header line or NULs past 1 % of its head."""
    from pipelines.ingest.readers.kernel_details import read_kernel_details

    lines = _kernel_lines(real_dir)
    lines[1] = lines[1].replace("trans_TransData_0", "trans\x00TransData_0", 1)
    path = tmp_path / "kernel_details.csv"
    path.write_text("\n".join(lines))
    read = read_kernel_details(path)
    assert read.kernels.height == len([x for x in lines[1:] if x])
    assert "trans\x00TransData_0" in read.kernels["name"].to_list()
    path.write_bytes(b"Name,Start\x00\n" + b"a,1\n")
    with pytest.raises(Exception, match="binary"):
        read_kernel_details(path)


@pytest.mark.parametrize("cut_in", ["Duration(us)", "Wait Time(us)", "Input Shapes"])
def test_a_kernel_line_the_file_ends_inside_is_set_aside(
    real_dir: Path, tmp_path: Path, cut_in: str
) -> None:
    """A kernel_details.csv cut inside its last line (no line break, fewer cells than the
    header): DuckDB pads the missing cells with NULL, so the kernel was stored with the digits
    of its duration before the cut (`53.741` -> `53.`). The line is set aside as cut_off."""
    import csv as csv_module
    import io

    from pipelines.ingest.readers.kernel_details import read_kernel_details

    lines = [x for x in _kernel_lines(real_dir) if x]
    header = next(csv_module.reader([lines[0]]))
    cells = next(csv_module.reader([lines[-1]]))
    column = header.index(cut_in)
    out = io.StringIO()
    csv_module.writer(out, lineterminator="").writerow([*cells[:column], cells[column][:3]])
    path = tmp_path / "kernel_details.csv"
    path.write_text("\n".join(lines[:-1]) + "\n" + out.getvalue())
    read = read_kernel_details(path)
    assert read.kernels.height == len(lines) - 2
    assert read.dropped == {"cut_off": 1}
    assert read.set_aside == [
        f"line {len(lines)}: cut_off (the file ends inside it: {column + 1} of the header's"
        f" {len(header)} cells)"
    ]
    whole = tmp_path / "whole.csv"
    whole.write_text("\n".join(lines))  # a last line without a line break, but whole: kept
    assert read_kernel_details(whole).kernels.height == len(lines) - 1


def _step_file(tmp_path: Path, real_dir: Path, rows: list[str]) -> Path:
    path = real_dir / LEVEL1 / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    header = path.read_text().splitlines()[0]
    out = tmp_path / "step_trace_time.csv"
    out.write_text("\n".join([header, *rows]) + "\n")
    return out


REAL_STEP = "{step},8873.756,101963.203,4028.675,105991.878,25744.05,136581.0,0,101963.203,17902.5"


def test_a_step_row_written_twice_is_stored_once(real_dir: Path, tmp_path: Path) -> None:
    """step_trace_time.csv giving step 51 twice stored both rows (one step, two breakdowns).
    An exact copy is counted once; two different rows for one step are both set aside."""
    from pipelines.ingest.readers.step_trace import read_step_trace_time

    rows = [REAL_STEP.format(step=s) for s in (50, 51, 51, 52)]
    read = read_step_trace_time(_step_file(tmp_path, real_dir, rows))
    assert read.rows["step"].to_list() == [50, 51, 52]
    assert read.set_aside == ["line 4: duplicate_row (a copy of line 3)"]
    rows[2] = rows[2].replace("8873.756", "8873.757")
    read = read_step_trace_time(_step_file(tmp_path, real_dir, rows))
    assert read.rows["step"].to_list() == [50, 52]
    assert read.set_aside == [
        "line 4: step 51 is given again with other times (line 3): both left out"
    ]


def test_a_negative_step_costs_its_row(real_dir: Path, tmp_path: Path) -> None:
    from pipelines.ingest.readers.step_trace import read_step_trace_time

    rows = [REAL_STEP.format(step=s) for s in (50, -1, 52)]
    read = read_step_trace_time(_step_file(tmp_path, real_dir, rows))
    assert read.rows["step"].to_list() == [50, 52]
    assert read.set_aside == ["line 3: Step is '-1'"]


@pytest.mark.parametrize("form", ["array", "object", "streamed"])
@pytest.mark.parametrize(
    ("key", "raw"), [("pid", "1.5"), ("pid", "null"), ("tid", "1.5"), ("tid", "2.0")]
)
def test_a_pid_or_tid_that_is_no_integer_costs_its_event(
    trace_events, tmp_path: Path, form: str, key: str, raw: str
) -> None:
    """A complete event whose pid is 1.5 was kept under pid 2 (DuckDB's cast rounds '1.5'), one
    whose pid is null was kept on no process's lane: each is set aside as invalid_event."""
    events = json.loads(json.dumps(trace_events))
    index = next(i for i, e in enumerate(events) if e.get("ph") == "X" and i > 100)
    events[index][key] = "__round4__"
    body = json.dumps(events if form != "object" else {"traceEvents": events})
    path = tmp_path / "trace_view.json"
    path.write_text(body.replace('"__round4__"', raw, 1))
    view = read_trace_view(path, max_memory=1 if form == "streamed" else None)
    slices = view.slices.collect() if form == "streamed" else view.slices
    reference = tmp_path / "clean.json"
    reference.write_text(json.dumps(trace_events))
    assert slices.height == read_trace_view(reference).slices.height - 1
    assert view.dropped == {"invalid_event": 1}
    assert "is not an integer" in view.set_aside[0]


@pytest.mark.parametrize("form", ["array", "object", "streamed"])
def test_a_complete_event_without_a_name_is_named(trace_events, tmp_path: Path, form) -> None:
    """A complete event whose name is null was dropped by the table's NOT NULL name without a
    line (ingest exit 0, no quarantine row): now invalid_event, 'no name'."""
    events = json.loads(json.dumps(trace_events))
    index = next(i for i, e in enumerate(events) if e.get("ph") == "X" and i > 100)
    events[index]["name"] = None
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps(events if form != "object" else {"traceEvents": events}))
    view = read_trace_view(path, max_memory=1 if form == "streamed" else None)
    assert view.dropped == {"invalid_event": 1}
    assert "no name" in view.set_aside[0]


def test_args_text_is_the_same_on_every_path(trace_events, tmp_path: Path) -> None:
    """The object form (msgspec) stored args with the file's spacing (`{"a": 1}`), the array
    form (DuckDB) minified (`{"a":1}`): 4,002 of 4,384 stored events differed between two
    files holding the same events."""
    array, wrapped = tmp_path / "a.json", tmp_path / "o.json"
    array.write_text(json.dumps(trace_events))
    wrapped.write_text(json.dumps({"traceEvents": trace_events}))
    columns = ["name", "start_ns", "dur_ns", "args"]
    left = read_trace_view(array).slices.select(columns).sort(columns)
    right = read_trace_view(wrapped).slices.select(columns).sort(columns)
    assert left.equals(right)


@pytest.mark.parametrize("form", ["array", "numeric ts", "object"])
@pytest.mark.parametrize(
    ("label", "raw"),
    [("raw TAB", '"a\tb"'), ("lone surrogate", '"a\\ud800b"'), ("raw NUL", '"a\x00b"')],
)
def test_one_entry_that_is_no_json_costs_itself(
    trace_events, tmp_path: Path, form: str, label: str, raw: str
) -> None:
    """A name holding a raw control character or a lone surrogate escape is no JSON (RFC 8259
    §7; DuckDB and msgspec both refuse it): the whole trace_view.json was invalid_json, 4,384
    events lost. The array (an object form's traceEvents member) is now split by its structure
    and that entry alone set aside."""
    from pipelines.ingest.readers.json_entries import split_array

    events = json.loads(json.dumps(trace_events))
    if form == "numeric ts":
        events[0]["ts"] = 0
    index = next(i for i, e in enumerate(events) if e.get("ph") == "X" and i > 100)
    events[index]["name"] = "__round4__"
    path = tmp_path / "trace_view.json"
    wrap = (lambda e: {"traceEvents": e}) if form == "object" else (lambda e: e)
    path.write_text(json.dumps(wrap(events)).replace('"__round4__"', raw, 1))
    if form != "object":
        assert len(split_array(path.read_bytes())) == len(events)
    view = read_trace_view(path)
    del events[index]
    reference = tmp_path / "clean.json"
    reference.write_text(json.dumps(wrap(events)))
    assert view.slices.height == read_trace_view(reference).slices.height
    assert view.dropped == {"invalid_event": 1}
    assert view.set_aside[0].startswith(f"traceEvents[{index}]: not JSON")


def test_a_broken_array_is_still_one_unreadable_file(tmp_path: Path) -> None:
    from pipelines.ingest.readers.json_entries import split_array

    assert split_array(b'[{"a": 1}, {"b": 1]') is None  # brackets that do not close
    assert split_array(b'[{"a": "x}, {"b": 1}]') is None  # quotes that do not pair
    assert split_array(b"[1], [2]") is None  # text after the array
    assert split_array(b" [ ] ") == []


def test_a_time_past_int64_costs_its_communication_op(real_dir: Path, tmp_path: Path) -> None:
    """communication.json: an op whose Elapse Time is 2^64 ms failed the whole file's
    enrichment (the wait, transit and sync times of every op); now that op alone is left out."""
    from pipelines.ingest.readers.communication import read_communication_rows

    source = real_dir / LEVEL1 / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    if not source.is_file():
        pytest.skip(f"{source} not found")
    data = json.loads(source.read_text())
    clean, _ = read_communication_rows(source)
    ops = data["step50"]["collective"]
    first = next(k for k in ops if k != "Total Op Info")
    ops[first]["Communication Time Info"]["Elapse Time(ms)"] = 2**64
    path = tmp_path / "communication.json"
    path.write_text(json.dumps(data))
    rows, set_aside = read_communication_rows(path)
    assert rows.height == clean.height - 1
    assert len(set_aside) == 1 and "past the int64 nanoseconds" in set_aside[0]


@pytest.mark.parametrize("rank_id", [2**40, 2**64])
def test_a_rank_id_past_an_integer_falls_back_to_the_file_name(tmp_path: Path, rank_id) -> None:
    """profiler_info rank_id 2^40 failed the whole run (read_error: i64 -> i32 at the ranks
    table); it is now an unusable rank_id and the file name's N is used."""
    from pipelines.ingest.readers.profiler_info import read_profiler_info

    path = tmp_path / "profiler_info_3.json"
    path.write_text(json.dumps({"rank_id": rank_id}))
    info = read_profiler_info(path)
    assert info.rank == 3
    assert info.rank_problem == f"rank_id {rank_id!r} is not an integer"


@pytest.mark.parametrize(("column", "value"), [("time_us", str(2**63)), ("prefix", str(2**64))])
def test_a_latency_value_past_int64_costs_its_line(tmp_path: Path, column, value) -> None:
    """A generic latency table with one time of 2^63 us or one prefix of 2^64 tokens: the whole
    file was unreadable_table (Polars could not build the column); now that line is set aside."""
    from pipelines.ingest.readers.latency_tables import read_table

    rows = [f"attn,{t},{p},{10 + t * 0.5:.3f}" for t in (128, 256) for p in (0, 1024)]
    header = "operator,tokens,prefix,time_us"
    cells = rows[1].split(",")
    cells[header.split(",").index(column)] = value
    rows[1] = ",".join(cells)
    path = tmp_path / "table.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    table = read_table(path)
    assert table.points.height == 3
    (aside,) = table.quarantined
    assert aside.reason == "invalid_rows" and "line 3" in aside.detail


def _db_kernels(rank: Path) -> int:
    from pipelines.ingest.readers.ascend_db import read_rank

    return read_rank(rank).tables["kernels"].height


def test_sqlite_text_with_a_nul_is_no_number(real_dir: Path, tmp_path: Path) -> None:
    """A TASK startNs of '12' || char(0): SQLite's glob and length stop at the NUL, so it passed
    as the digits '12' and the task was kept at 12 ns (1970); now unparsable_timestamp."""
    clean = _db_kernels(rank_with_sql(real_dir, tmp_path / "a", "select 1"))
    rank = rank_with_sql(
        real_dir,
        tmp_path / "b",
        "update TASK set startNs = '12' || char(0) where rowid = (select min(rowid) from TASK"
        " where globalTaskId in (select globalTaskId from COMPUTE_TASK_INFO))",
    )
    assert _db_kernels(rank) == clean - 1


def test_sqlite_text_that_is_no_utf8_keeps_the_file(real_dir: Path, tmp_path: Path) -> None:
    """A STRING_IDS value with bytes that are not UTF-8 failed the whole export as corrupt
    (Python's sqlite3 could not decode it); the bytes are now \\xNN text, every row kept."""
    clean = _db_kernels(rank_with_sql(real_dir, tmp_path / "a", "select 1"))
    rank = rank_with_sql(
        real_dir,
        tmp_path / "b",
        "update STRING_IDS set value = cast(x'61eda08062' as text) where id = 5",
    )
    assert _db_kernels(rank) == clean
