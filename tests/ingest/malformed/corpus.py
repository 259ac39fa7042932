"""Builders of malformed profiler inputs (tiny synthetic files written into a temp folder) and of
one small valid rank folder that must keep loading next to them.

Each builder takes an empty folder, writes one broken input in a profiler layout, and returns
(path to hand to `tracereplay ingest`, file expected in quarantine, expected reason code)."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

OUT = "ASCEND_PROFILER_OUTPUT"
KERNEL_HEADER = (
    "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim\n"
)
STEP_HEADER = (
    "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
    "Communication(Not Overlapped and Exclude Receive),Preparing\n"
)
GOOD_KERNELS = (
    KERNEL_HEADER
    + "3,matmul_0,MatMul,AI_CORE,1700000000000000.000\t,100.000,0,8\n"
    + "3,hcom_receive__123_0_1,hcom_receive_,HCCL,1700000000000050.000\t,100.000,0,0\n"
    + "3,add_1,Add,AI_VECTOR_CORE,1700000000000200.500\t,10.250,0,8\n"
)


def rank_folder(root: Path, rank: int = 0, info: dict | None = None) -> Path:
    folder = root / f"rank{rank}_ascend_pt"
    (folder / OUT).mkdir(parents=True)
    (folder / f"profiler_info_{rank}.json").write_text(json.dumps(info or {"rank_id": rank}))
    return folder


def good_run(root: Path) -> Path:
    """A valid one-rank text export: 3 kernels (one hcom_receive), one profiler step row."""
    folder = rank_folder(root / "good_job")
    (folder / OUT / "kernel_details.csv").write_text(GOOD_KERNELS)
    (folder / OUT / "step_trace_time.csv").write_text(
        STEP_HEADER + "3,100.0,60.0,40.0,100.0,0.0,110.25,100.0,-40.0,5.0\n"
    )
    return folder.parent


def _in_rank(name: str, content: bytes) -> Callable[[Path], tuple[Path, Path, str]]:
    def build(root: Path) -> tuple[Path, Path]:
        folder = rank_folder(root / "bad_job")
        target = folder / OUT / name
        target.write_bytes(content)
        return folder.parent, target

    return build


def _trace(events: list[dict]) -> bytes:
    return json.dumps(events).encode()


NO_LANES = _trace(
    [{"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": "1.000", "dur": 1.0, "args": {}}]
)
VALID_START = _trace(
    [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}}]
)


def _not_profiler_output(root: Path) -> tuple[Path, Path]:
    folder = root / "notes"
    folder.mkdir()
    (folder / "README.md").write_text("meeting notes, no traces here\n")
    (folder / "data.txt").write_text("1,2,3\n")
    return folder, folder


def _unparsable_rank(root: Path) -> tuple[Path, Path]:
    folder = root / "odd_job" / "rank_x_ascend_pt"
    (folder / OUT).mkdir(parents=True)
    info = folder / "profiler_info.json"
    info.write_text(json.dumps({"rank_id": "rank-two"}))
    (folder / OUT / "kernel_details.csv").write_text(GOOD_KERNELS)
    return folder.parent, info


def _corrupt_db(root: Path) -> tuple[Path, Path]:
    folder = rank_folder(root / "db_job")
    target = folder / OUT / "ascend_pytorch_profiler_0.db"
    target.write_bytes(os.urandom(4096))
    return folder.parent, target


def _db_without_tables(root: Path) -> tuple[Path, Path]:
    folder = rank_folder(root / "db_job")
    target = folder / OUT / "ascend_pytorch_profiler_0.db"
    with sqlite3.connect(target) as con:
        con.execute("create table unrelated (x integer)")
    return folder.parent, target


def _not_gzip(root: Path) -> tuple[Path, Path]:
    folder = root / "kineto_job"
    folder.mkdir()
    target = folder / "rank0.pt.trace.json.gz"
    target.write_bytes(b'{"traceEvents": []}')  # plain text under a .gz name
    return folder, target


def _truncated_gzip(root: Path) -> tuple[Path, Path]:
    folder = root / "kineto_job"
    folder.mkdir()
    target = folder / "rank0.json.gz"
    data = gzip.compress(json.dumps({"schemaVersion": 1, "traceEvents": []}).encode() * 50)
    target.write_bytes(data[: len(data) // 2])
    return folder, target


def _unknown_csv(root: Path) -> tuple[Path, Path]:
    folder = rank_folder(root / "extra_job")
    (folder / OUT / "kernel_details.csv").write_text(GOOD_KERNELS)
    target = folder / OUT / "mystery_table.csv"
    target.write_text("a,b\n1,2\n")
    return folder.parent, target


CASES: dict[str, tuple[Callable[[Path], tuple[Path, Path]], str]] = {
    "truncated_trace_view": (_in_rank("trace_view.json", VALID_START[:-20]), "truncated_json"),
    "empty_trace_view": (_in_rank("trace_view.json", b""), "empty_file"),
    "empty_json_list": (_in_rank("trace_view.json", b"[]"), "empty_trace"),
    "trace_without_lanes": (_in_rank("trace_view.json", NO_LANES), "no_lanes"),
    "binary_trace_view": (_in_rank("trace_view.json", os.urandom(2048) + b"\x00"), "not_json"),
    "kernel_csv_missing_columns": (
        _in_rank("kernel_details.csv", b"Step Id,Op,When\n1,k,12\n"),
        "missing_columns",
    ),
    "kernel_csv_excel_mangled": (
        _in_rank(
            "kernel_details.csv",
            (KERNEL_HEADER + "1,k,K,AI_CORE,1.69512E+15,12.5,0,1\n").encode(),
        ),
        "excel_mangled_number",
    ),
    "kernel_csv_garbage_rows": (
        _in_rank(
            "kernel_details.csv",
            (GOOD_KERNELS + "3,<<garbage>>,??,AI_CORE,not-a-time,xx,0,1\n").encode(),
        ),
        "invalid_rows",  # the garbage row set aside, the good rows loaded
    ),
    "step_trace_garbage": (
        _in_rank("step_trace_time.csv", (STEP_HEADER + "3,abc,1,1,1,1,1,0,1,1\n").encode()),
        "unparsable_rows",
    ),
    # round four (issue 36): one bad cell beside a good row costs its row, named by its line
    "step_trace_one_bad_row": (
        _in_rank(
            "step_trace_time.csv",
            (
                STEP_HEADER
                + "3,abc,1,1,1,1,1,0,1,1\n"
                + "4,100.0,60.0,40.0,100.0,0.0,110.25,100.0,-40.0,5.0\n"
            ).encode(),
        ),
        "invalid_rows",
    ),
    "communication_wrong_shape": (
        _in_rank("communication.json", b'{"hello": {"p2p": {}}}'),
        "invalid_communication",
    ),
    "profiler_info_unparsable_rank": (_unparsable_rank, "unparsable_rank"),
    "folder_not_profiler_output": (_not_profiler_output, "not_profiler_output"),
    "corrupt_db": (_corrupt_db, "corrupt_db"),
    "db_without_profiler_tables": (_db_without_tables, "missing_tables"),
    "json_gz_not_gzip": (_not_gzip, "not_gzip"),
    "json_gz_truncated": (_truncated_gzip, "not_gzip"),
    "unknown_csv_in_output": (_unknown_csv, "unrecognised_input"),
}


# Sibling folder names that DuckDB (or a shell) would read as patterns, quotes or escapes; each
# folder holds its own small valid run, told apart by the number and names of its events.
PATTERN_NAMES = (
    "job_x",
    "job_[x]",
    "job_*",
    "job_?",
    "job_{a,b}",
    "job_'q",
    'job_"dq',
    "job_ sp",
    "job_\\b",
    "job_\u00fc\u6f22",
    "job_\nnl",
)


def pattern_named_runs(root: Path) -> dict[Path, int]:
    """One lone rank folder per name in PATTERN_NAMES under `root`, the i-th with i+1 kernels in
    kernel_details.csv and i+1 `k<i>_<j>` slices (plus one ProfilerStep) in trace_view.json;
    returns folder -> i+1."""
    out = {}
    for i, name in enumerate(PATTERN_NAMES):
        folder = root / name / OUT
        folder.mkdir(parents=True)
        n = i + 1
        rows = "".join(
            f"1,k{i}_{j},K,AI_CORE,{1700000000000000 + 10 * j}.000\t,1.000,0,8\n" for j in range(n)
        )
        (folder / "kernel_details.csv").write_text(KERNEL_HEADER + rows)
        events = [
            {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
            {"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": "1.000", "dur": 1e3},
        ] + [
            {"ph": "X", "name": f"k{i}_{j}", "pid": 1, "tid": 1, "ts": f"{2 + j}.000", "dur": 0.5}
            for j in range(n)
        ]
        (folder / "trace_view.json").write_text(json.dumps(events))
        out[folder.parent] = n
    return out


# --- one bad value in an otherwise good file: the row is dropped and counted, the file loads ----

TRACE_START = [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Python"}},
    {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "Ascend Hardware"}},
    {"ph": "X", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": "1.000", "dur": 100.0},
    # device work: a trace of host lanes alone is quarantined no_device_events
    {"ph": "X", "name": "good", "pid": 2, "tid": 1, "ts": "2.000", "dur": 1.0},
]


def _trace_with(bad: str, wrapped: bool = False) -> bytes:
    """TRACE_START plus one event given as raw JSON text (NaN, Infinity ... as Python writes)."""
    events = json.dumps(TRACE_START)[:-1] + ", " + bad + "]"
    return (('{"traceEvents": ' + events + "}") if wrapped else events).encode()


def _bad_event(fields: str) -> str:
    return '{"ph": "X", "name": "bad", "pid": 1, "tid": 1, ' + fields + "}"


def _kineto_with(dur: str) -> Callable[[Path], tuple[Path, Path]]:
    def build(root: Path) -> tuple[Path, Path]:
        folder = root / "kineto_job"
        folder.mkdir()
        target = folder / "rank0.pt.trace.json"
        events = [
            {"ph": "X", "cat": "kernel", "name": "k0", "pid": 0, "tid": 7, "ts": 10, "dur": 5},
            {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 20, "dur": 5},
        ]
        text = json.dumps({"schemaVersion": 1, "traceEvents": events})
        text = text[: -len("]}")] + ', {"ph": "X", "cat": "kernel", "name": "bad", "pid": 0,'
        text += f' "tid": 7, "ts": 30, "dur": {dur}' + "}]}"
        target.write_text(text)
        return folder, target

    return build


# name -> (builder, table checked, rows kept in it, expected runs.dropped_rows)
DROPPED_CASES: dict[str, tuple[Callable[[Path], tuple[Path, Path]], str, int, dict[str, int]]] = {
    "trace_dur_nan": (
        _in_rank("trace_view.json", _trace_with(_bad_event('"ts": "3.000", "dur": NaN'))),
        "slices",
        1,
        {"non_finite_duration": 1},
    ),
    "trace_dur_infinity_object_form": (
        _in_rank(
            "trace_view.json", _trace_with(_bad_event('"ts": "3.000", "dur": Infinity'), True)
        ),
        "slices",
        1,
        {"non_finite_duration": 1},
    ),
    "trace_dur_1e16": (
        _in_rank("trace_view.json", _trace_with(_bad_event('"ts": "3.000", "dur": 1e16'))),
        "slices",
        1,
        {"duration_out_of_range": 1},
    ),
    "trace_ts_overflow_text": (
        _in_rank(
            "trace_view.json",
            _trace_with(_bad_event('"ts": "99999999999999999999.000", "dur": 1')),
        ),
        "slices",
        1,
        {"timestamp_out_of_range": 1},
    ),
    "trace_ts_overflow_number": (
        _in_rank("trace_view.json", _trace_with(_bad_event('"ts": 1e20, "dur": 1'))),
        "slices",
        1,
        {"timestamp_out_of_range": 1},
    ),
    "trace_negative_and_missing_dur": (
        _in_rank(
            "trace_view.json",
            _trace_with(
                _bad_event('"ts": "3.000", "dur": -5') + ", " + _bad_event('"ts": "4.000"')
            ),
        ),
        "slices",
        1,
        {"missing_duration": 1, "negative_duration": 1},
    ),
    "kernel_zero_duration_only": (
        _in_rank(
            "kernel_details.csv",
            (KERNEL_HEADER + "3,z,Z,AI_CORE,1700000000000300.000\t,0,0,8\n").encode(),
        ),
        "kernels",
        1,
        {},
    ),
    "kernel_negative_duration": (
        _in_rank(
            "kernel_details.csv",
            # with good rows beside it: a folder whose only kernel is dropped has no device
            # work left and is quarantined `no_device_events` (not stored as an empty run)
            (GOOD_KERNELS + "3,z,Z,AI_CORE,1700000000000300.000\t,-3.5,0,8\n").encode(),
        ),
        "kernels",
        3,
        {"negative_duration": 1},
    ),
    "kernel_step_not_integer": (
        _in_rank(
            "kernel_details.csv",
            (GOOD_KERNELS + "3.5,z,Z,AI_CORE,1700000000000300.000\t,1.0,0,8\n").encode(),
        ),
        "kernels",
        3,
        {"invalid_step": 1},
    ),
    "kernel_step_negative": (  # ProfilerStep numbers start at 0: -1 is no step
        _in_rank(
            "kernel_details.csv",
            (GOOD_KERNELS + "-1,z,Z,AI_CORE,1700000000000300.000\t,1.0,0,8\n").encode(),
        ),
        "kernels",
        3,
        {"invalid_step": 1},
    ),
    "kineto_dur_nan": (_kineto_with("NaN"), "kernels", 2, {"non_finite_duration": 1}),
}


# --- not a file under a known file name --------------------------------------------------------


def _directory_named(name: str) -> Callable[[Path], tuple[Path, Path]]:
    def build(root: Path) -> tuple[Path, Path]:
        folder = rank_folder(root / "dir_job")
        (folder / OUT / "step_trace_time.csv").write_text(
            STEP_HEADER + "3,100.0,60.0,40.0,100.0,0.0,110.25,100.0,-40.0,5.0\n"
        )
        target = folder / OUT / name
        target.mkdir()
        (target / "inside.csv").write_text(GOOD_KERNELS)
        return folder.parent, target

    return build


def _fifo_named(name: str) -> Callable[[Path], tuple[Path, Path]]:
    def build(root: Path) -> tuple[Path, Path]:
        folder = rank_folder(root / "fifo_job")
        (folder / OUT / "kernel_details.csv").write_text(GOOD_KERNELS)
        target = folder / OUT / name
        os.mkfifo(target)  # nobody ever writes: opening it for reading would block forever
        return folder.parent, target

    return build


CASES.update(
    {
        "directory_named_kernel_details": (_directory_named("kernel_details.csv"), "not_a_file"),
        "fifo_named_trace_view": (_fifo_named("trace_view.json"), "not_a_file"),
        "fifo_named_db_export": (_fifo_named("ascend_pytorch_profiler_0.db"), "not_a_file"),
    }
)
