"""trace_view.json of a torch_npu export -> slices (one row per complete event) and step windows.

Format (docs/ascend_formats.md §3): a bare JSON array of Chrome-trace events (the object form
`{"traceEvents": [...]}` is accepted too; a UTF-8 BOM and a `.gz` file too); `ts` is a string of
microseconds with 3 decimals, parsed exactly to integer nanoseconds; `dur` is float microseconds,
rounded to nanoseconds. A complete event with a bad `ts` or `dur` (missing, NaN, Infinity,
negative, out of int64 range) is dropped and counted by reason (`TraceView.dropped`, codes in
dropped.py, rules in docs/ingest_rules.md); a JSON-number `ts` is read with its own digits.
An entry without `ph`, or a complete event whose `pid` or `tid` is no integer or whose `args` are no
object, is set aside as invalid_event; an entry giving one key twice as duplicate_key, on every
path (DuckDB, msgspec, streamed).

Lanes come from the `process_name` metadata of each pid, never from pid values:
Python / python3 / MindSpore / Python GC / CANN -> host; Ascend Hardware -> compute (its
communication-stream tasks stay there); HCCL or Communication -> comm; Overlap Analysis ->
overlap; any other named process and any pid without a `process_name` -> other.

Kept: complete events (`ph` X). Flow events (s/f) become links between the slices they bind
to (`flow_links` in the args of both ends, pipelines/ingest/steps/flows.py); counter events (`ph` C:
HBM, QoS, AI Core Freq ...) are dropped inside the scan; metadata (M) gives lane and thread
names. The
step of an event is N of the `ProfilerStep#N` window on a host lane that contains its start
(torch_npu's own rule), NULL outside every window.

Speed and memory: array files are scanned once by DuckDB `read_json` with explicit columns (args
kept as JSON text, 16 MB object buffers), streamed into Polars in Arrow batches; lanes, threads
and steps are then mapped in Polars without sorting or re-joining the big frame. Measured here on
a 221 MB, 1.0 M-event trace: a whole rank read in 2.8 s at 395 MB peak RSS (1.8x the file,
interpreter included). The object form is decoded with msgspec instead (DuckDB's object-size
limit makes it slow on that form).
"""

from __future__ import annotations

import gzip
import mmap
import re
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import polars as pl

from pipelines import machine, memory_budget
from pipelines.ingest import dropped as drop
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.lookups import left_lookup
from pipelines.ingest.readers import gz, json_entries, json_halves, json_keys
from pipelines.ingest.readers.json_long_strings import LEFT_OUT, long_strings, without_long_strings
from pipelines.ingest.steps import flows as flow_links
from pipelines.ingest.steps.ascend_launch import LINK_KEY_REGEX, launch_slices
from pipelines.ingest.units import us_text_to_ns_sql
from pipelines.store.duck import private_connection, scratch_connection, sql_string
from pipelines.vocabulary.intervals import assign_steps
from pipelines.vocabulary.profiler_names import PROFILER_STEP_PREFIX as STEP_PREFIX
from pipelines.vocabulary.profiler_names import RECEIVE_REGEX

LANE_BY_PROCESS = {
    "python": "host",
    "python3": "host",
    "mindspore": "host",
    "python gc": "host",
    "cann": "host",
    "ascend hardware": "compute",
    "hccl": "comm",
    "communication": "comm",
    "overlap analysis": "overlap",
}
_SNIFF_BYTES = 1 << 16
# DuckDB reads with buffers sized by this limit: the default (16 MB) keeps RSS near 2x the file;
# a file with a bigger single event is read again with the large limit.
_OBJECT_LIMITS = (1 << 24, 1 << 30)
_BATCH_ROWS = 100_000
BIG_ENTRY_PEAK_FACTOR = 6.5  # peak RSS per file byte when one entry is past 16 MB (measured 5.8)
_SCAN_THREADS = 1
# peak RSS of the in-memory read per file byte, and the interpreter with its imports (bench ingest
# on the landed code: 0.91 GB for 500 MB, 1.62 GB for 1 GB, 3.0 GB for 2 GB)
IN_MEMORY_PEAK_FACTOR = 1.6
INTERPRETER_BYTES = 200 << 20
BOM = json_entries.BOM
# a JSON-number `ts` (torch_npu writes strings): such files are decoded with msgspec, which keeps
# the number's own digits (DuckDB would parse it to a double first: 1700000000000000.123 µs is
# 1700000000000000.0 as a double)
_NUMERIC_TS = re.compile(rb'"ts"\s*:\s*[-+0-9.]')
# JSON's non-standard constants that Python's json writes for NaN / inf (bare, outside strings)
_CONSTANTS = re.compile(rb'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')

_COLUMNS = (
    "{name: 'VARCHAR', ph: 'VARCHAR', pid: 'VARCHAR', tid: 'VARCHAR', ts: 'VARCHAR',"
    " dur: 'VARCHAR', cat: 'VARCHAR', id: 'VARCHAR', bp: 'VARCHAR', args: 'JSON'}"
)


@dataclass
class TraceView:
    """One rank's timeline: canonical slice rows (without run_id/rank) and ProfilerStep windows."""

    slices: pl.DataFrame | pl.LazyFrame  # a LazyFrame over the spill when streamed
    steps: pl.DataFrame  # step, start_ns, end_ns
    device_id: int | None = None
    process_lanes: dict[str, str] = field(default_factory=dict)  # process_name -> lane
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> complete events set aside
    flows: dict[str, int] = field(default_factory=dict)  # flows.bind counts
    # streamed reads: the rows the derivations need (comm, overlap, compute receives), in memory
    derivable: pl.DataFrame | None = None
    # streamed reads: the rows launch attribution needs (device lanes, linked host slices, args
    # cut to the link keys: pipelines/ingest/ascend_launch.launch_slices), a LazyFrame over
    # a Parquet file of the spill that launch_device_work reads a batch at a time
    launch: pl.LazyFrame | None = None
    # entries set aside one by one, each "traceEvents[i]: why" (a non-object, a duplicated key)
    set_aside: list[str] = field(default_factory=list)
    # how many entries were set aside in all (the lines above are the first ones): the invalid
    # entries and the complete events dropped for a value (docs/ingest_rules.md)
    set_aside_count: int | None = None

    def lane(self, lane: str) -> pl.DataFrame:
        return self.for_derivations().filter(pl.col("lane") == lane)

    def for_derivations(self) -> pl.DataFrame:
        """The slices in memory that comm_ops and the step breakdown read: all of them, or for
        a streamed read the `derivable` rows (every comm / overlap slice is among them)."""
        if isinstance(self.slices, pl.DataFrame):
            return self.slices
        return self.derivable if self.derivable is not None else self.slices.collect()


def lane_of_process(process_name: str | None) -> str:
    """The canonical lane of a trace process name."""
    if not process_name:
        return "other"
    return LANE_BY_PROCESS.get(process_name.strip().lower(), "other")


def is_gzip(path: Path) -> bool:
    """A `.gz` name: read through gzip (DuckDB picks its decompression by the same suffix)."""
    return path.name.lower().endswith(".gz")


# head, tail and inflated bytes of the .gz files read so far, by (path, size, mtime): the sniff
# inflates the whole stream to find its last byte, and the memory estimate needs the same count
_INFLATED: dict[tuple[str, int, int], tuple[bytes, bytes, int]] = {}
# where the gzip data of those files ends, when bytes that are no gzip member follow it
_DATA_END: dict[tuple[str, int, int], int | None] = {}


def _gz_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return (str(path), stat.st_size, stat.st_mtime_ns)


def _head_and_tail(path: Path) -> tuple[bytes, bytes]:
    if not is_gzip(path):
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(_SNIFF_BYTES)
            handle.seek(max(0, size - 256))
            return head, handle.read()
    key = _gz_key(path)
    if key in _INFLATED:
        return _INFLATED[key][:2]
    head = bytearray()
    tail = b""

    def keep(block: bytes) -> None:
        nonlocal tail
        if len(head) < _SNIFF_BYTES:
            head.extend(block[: _SNIFF_BYTES - len(head)])
        tail = (tail + block)[-256:]

    found = gz.scan(path, keep)
    _INFLATED[key] = (bytes(head), tail, found.inflated)
    _DATA_END[key] = found.data_end if found.trailing else None
    return bytes(head), tail


def _whole_gzip(path: Path) -> Path:
    """`path`, or for a .gz followed by bytes that are no gzip member (zero padding, stray
    bytes) a copy cut where its gzip data ends, which DuckDB and gzip read
    (pipelines/ingest/readers/gz)."""
    if not is_gzip(path):
        return path
    _sniff(path)
    end = _DATA_END.get(_gz_key(path))
    return path if end is None else gz.without_trailing(path, end)


def json_bytes(path: Path) -> int:
    """The trace's JSON size: the file's, or for a .gz the bytes its stream inflates to (counted
    once, by inflating it; a 1.7 MB .gz can hold 1.5 GiB). It was taken as 10x the .gz before,
    so a real trace_view.json.gz (16.7x on the level1 export) of 1.5 GiB read in memory."""
    if not is_gzip(path):
        return path.stat().st_size
    _head_and_tail(path)
    return _INFLATED[_gz_key(path)][2]


def sniff_json_form(path: Path) -> str:
    """'array' or 'object' for a JSON trace file (plain or .gz; a UTF-8 BOM is allowed); raises
    QuarantineError for files that cannot be one (empty, binary, not starting with [ or {, cut off
    before the closing bracket)."""
    return _sniff(path)[0]


def _sniff(path: Path) -> tuple[str, bytes]:
    try:
        head, tail = _head_and_tail(path)
    except (gzip.BadGzipFile, EOFError, zlib.error, ValueError) as exc:
        raise QuarantineError("not_gzip", f"{path.name}: broken gzip data: {exc}") from exc
    except OSError as exc:
        raise QuarantineError("unreadable", str(exc)) from exc
    head = head.removeprefix(BOM)
    if not head.strip():
        raise QuarantineError("empty_file", f"{path.name} has no content")
    if path.name.lower().endswith(".gz") and head.startswith(gz.GZIP_MAGIC):
        raise QuarantineError("not_json", f"{path.name}: {gz.GZIP_IN_GZIP_DETAIL}")
    if b"\x00" in head:
        raise QuarantineError("not_json", f"{path.name} is binary (NUL bytes)")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # a multi-byte char cut at the sniff boundary is fine
            raise QuarantineError("not_json", f"{path.name} is not UTF-8 text") from exc
    first = head.lstrip()[:1]
    if first not in (b"[", b"{"):
        raise QuarantineError("not_json", f"{path.name} does not start with [ or {{")
    last = tail.rstrip()[-1:]
    closing = b"]" if first == b"[" else b"}"
    if last != closing:
        raise QuarantineError(
            "truncated_json", f"{path.name} ends with {last!r}, not {closing.decode()!r}"
        )
    return ("array" if first == b"[" else "object"), head


class TraceEvent(msgspec.Struct, omit_defaults=True):
    """The event fields the readers use; args stay undecoded (docs/stack.md §6)."""

    # a JSON number or boolean is kept as its JSON text ("12", "true"), as DuckDB's VARCHAR
    # column reads it on the other paths; an object or a list is set aside (_INVALID_EVENT)
    name: str | bool | int | float | None = None
    ph: Any = None
    pid: Any = None
    tid: Any = None
    ts: msgspec.Raw = msgspec.Raw(b"")  # the number's own digits, or a JSON string
    dur: msgspec.Raw = msgspec.Raw(b"")
    cat: Any = None
    id: msgspec.Raw = msgspec.Raw(b"")  # flow ids: 19-digit numbers in torch_npu, kept exact
    bp: Any = None
    args: msgspec.Raw = msgspec.Raw(b"")


class _Wrapped(msgspec.Struct):
    traceEvents: list[TraceEvent]


def _text(value: Any) -> str | None:
    """A decoded JSON scalar as DuckDB's VARCHAR column holds it (`true`, `12`, `1e+20`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


def _raw_text(raw: msgspec.Raw) -> str | None:
    """A raw JSON value as the text DuckDB's VARCHAR column would hold, digits kept exactly."""
    data = bytes(raw)
    if not data or data == b"null":
        return None
    if data[:1] == b'"':
        return msgspec.json.decode(data)
    return data.decode()


def quote_constants(data: bytes) -> bytes:
    """Bare NaN / Infinity / -Infinity (Python's json writes them) as JSON strings, so that the
    event holding one is dropped with its reason instead of the file failing to decode. A file
    without either word is returned as it is (the substitution calls back per JSON string: 34 s
    for a 133 MB trace)."""
    if b"NaN" not in data and b"Infinity" not in data:
        return data
    return _CONSTANTS.sub(lambda m: b'"' + m.group(1) + b'"' if m.group(1) else m.group(0), data)


def entries_not_json(entries: list[bytes]) -> dict[int, str]:
    """The entries (by index) that are no JSON even with bare NaN / Infinity quoted, each with
    msgspec's reason (a raw control character, a lone surrogate escape): one msgspec call for
    the batch when every entry is JSON, one per entry when one is not."""
    try:
        msgspec.json.decode(
            quote_constants(b"[" + b",".join(entries) + b"]"), type=list[msgspec.Raw]
        )
        return {}
    except (msgspec.DecodeError, RecursionError):
        pass
    bad: dict[int, str] = {}
    for index, entry in enumerate(entries):
        try:
            msgspec.json.decode(quote_constants(entry), type=msgspec.Raw)
        except msgspec.DecodeError as why:
            bad[index] = str(why)
        except RecursionError:  # msgspec recurses once per level: Python's limit is its own
            bad[index] = NESTED_TOO_DEEP
    return bad


NESTED_TOO_DEEP = (
    "nested past the ~1,000 levels the JSON decoder takes (no profiler writes more than a few)"
)


class _BadEntry(QuarantineError):
    """msgspec refused one entry of the events list (not an object, a field of a type no event
    has): the file is then read entry by entry, as after DuckDB refused one record."""


def _decode_events(data: bytes, form: str) -> list[TraceEvent]:
    """The events of the file, typed; raises _BadEntry when one entry is no event or gives a key
    twice (msgspec would keep the last value without a word: json_keys), so that the file is
    read entry by entry."""
    kind: Any = _Wrapped if form == "object" else list[TraceEvent]
    try:
        try:
            decoded = msgspec.json.decode(data, type=kind)
        except msgspec.DecodeError:
            quoted = quote_constants(data)
            if quoted == data:
                raise
            data = quoted
            decoded = msgspec.json.decode(data, type=kind)
        if json_keys.duplicate_keys(_raw_entries(data, form)):
            raise _BadEntry("invalid_trace", "an entry gives one key twice")
    except msgspec.ValidationError as exc:
        if re.search(r"at `\$(\.traceEvents)?\[\d+\]", str(exc)):
            raise _BadEntry("invalid_trace", f"one entry is not a trace event: {exc}") from exc
        if form == "object":
            raise QuarantineError(
                "invalid_trace", f"object form without a traceEvents list: {exc}"
            ) from exc
        raise QuarantineError("invalid_trace", f"not an array of trace events: {exc}") from exc
    except msgspec.DecodeError as exc:  # maybe one entry that is no JSON: read entry by entry
        raise _BadEntry("invalid_json", str(exc)) from exc
    return decoded.traceEvents if form == "object" else decoded


def _file_bytes(path: Path) -> bytes:
    opener = gzip.open if is_gzip(path) else open
    with opener(path, "rb") as handle:
        return handle.read().removeprefix(BOM)


def _msgspec_relation(
    con: duckdb.DuckDBPyConnection, path: Path, form: str
) -> duckdb.DuckDBPyRelation:
    """Decode the file with msgspec into the same columns read_json yields."""
    return _events_relation(con, _decode_events(_file_bytes(path), form))


class _Entries(msgspec.Struct):
    traceEvents: list[msgspec.Raw]


def _raw_entries(data: bytes, form: str) -> list[msgspec.Raw]:
    """The entries of the events list, undecoded."""
    if form == "object":
        return msgspec.json.decode(data, type=_Entries).traceEvents
    return msgspec.json.decode(data, type=list[msgspec.Raw])


def _entries_one_by_one(
    data: bytes, form: str, typed: bool
) -> tuple[list[msgspec.Raw], list[str], dict[str, int]]:
    """The entries to keep (objects without a duplicated key; `typed`: and of the TraceEvent
    field types, for a file msgspec decodes), one line per other entry (`traceEvents[i]: why`)
    and their count per reason code (duplicate_key, invalid_event): read only after DuckDB or
    msgspec refused one record, so one bad entry costs itself, not the file
    (docs/ingest_rules.md). The entries stay undecoded: the kept ones are read again the way
    the file was (`_kept_relation`)."""
    data = quote_constants(data)
    not_json: dict[int, str] = {}
    try:
        entries = _raw_entries(data, form)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        # an entry that is no JSON (a raw control character, a lone surrogate escape): the
        # array is split by its structure and each entry decoded alone (issue 36 round four)
        split = _split_entries(data, form)
        if split is None:
            raise QuarantineError("invalid_json", str(exc)) from exc
        entries = [msgspec.Raw(entry) for entry in split]
        for index, entry in enumerate(entries):
            try:
                msgspec.json.decode(entry)
            except msgspec.DecodeError as bad:
                not_json[index] = f"not JSON ({bad})"
    good = [i for i in range(len(entries)) if i not in not_json]
    found = json_keys.duplicate_keys([entries[i] for i in good] if not_json else entries)
    twice = {good[i]: keys for i, keys in found.items()} if not_json else found
    kept: list[msgspec.Raw] = []
    set_aside: list[str] = []
    counts: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if index in not_json:
            set_aside.append(f"traceEvents[{index}]: {not_json[index]}")
            counts[drop.INVALID_EVENT] = counts.get(drop.INVALID_EVENT, 0) + 1
            continue
        if index in twice:
            set_aside.append(json_keys.duplicate_line(index, twice[index]))
            counts[drop.DUPLICATE_KEY] = counts.get(drop.DUPLICATE_KEY, 0) + 1
            continue
        try:
            if memoryview(entry)[:1] != b"{":
                kind = type(msgspec.json.decode(entry)).__name__
                raise ValueError(f"not an object ({kind})")
            if typed:
                msgspec.json.decode(entry, type=TraceEvent)
            kept.append(entry)
        except (ValueError, msgspec.ValidationError) as exc:
            set_aside.append(f"traceEvents[{index}]: {exc}")
            counts[drop.INVALID_EVENT] = counts.get(drop.INVALID_EVENT, 0) + 1
    return kept, set_aside, counts


def _split_entries(data: bytes, form: str) -> list[bytes] | None:
    """The events list's entries found by the file's structure (json_entries): the array itself,
    or the object's `traceEvents` member; None when the structure does not pair up."""
    if form == "array":
        return json_entries.split_array(data)
    span = json_entries.member_array(data, "traceEvents")
    return None if span is None else json_entries.split_array(data[span[0] : span[1] + 1])


def _kept_relation(
    con: duckdb.DuckDBPyConnection, kept: list[msgspec.Raw], typed: bool, max_object: int
) -> duckdb.DuckDBPyRelation:
    """The kept entries read as the whole file was: decoded by msgspec (`typed`), or written as
    an array next to the spills and read by DuckDB's read_json with the same columns."""
    array = b"[" + b",".join(kept) + b"]"
    if typed:
        return _events_relation(con, msgspec.json.decode(array, type=list[TraceEvent]))
    path = memory_budget.new_spill_dir() / "kept_entries.json"
    path.write_bytes(array)
    del array
    return con.sql(
        f"select * from read_json({sql_string(path)}, format = 'array', columns = {_COLUMNS},"
        f" maximum_object_size = {max_object})"
    )


def _one_bad_record(exc: duckdb.Error) -> bool:
    """DuckDB refused one record of an otherwise readable array (a non-object entry, a
    duplicated key), not the file."""
    text = str(exc)
    return "JSON transform error" in text or "duplicate key" in text


def _one_bad_entry(exc: duckdb.Error) -> bool:
    """_one_bad_record, or DuckDB found text that is no JSON inside one record (a raw control
    character, a lone surrogate escape): the in-memory read then splits the array by its
    structure (json_entries) and sets that entry aside."""
    text = str(exc)
    return _one_bad_record(exc) or ("Malformed JSON" in text and "in record/value" in text)


def _events_relation(
    con: duckdb.DuckDBPyConnection, events: list[TraceEvent]
) -> duckdb.DuckDBPyRelation:
    """The decoded events as the relation read_json would give."""
    frame = pl.DataFrame(
        {
            "name": [_text(e.name) for e in events],
            "ph": [_text(e.ph) for e in events],
            "pid": [_text(e.pid) for e in events],
            "tid": [_text(e.tid) for e in events],
            "ts": [_raw_text(e.ts) for e in events],
            "dur": [_raw_text(e.dur) for e in events],
            "cat": [_text(e.cat) for e in events],
            "id": [_raw_text(e.id) for e in events],
            "bp": [_text(e.bp) for e in events],
            "args": [bytes(e.args).decode() or None for e in events],
        },
        schema={
            c: pl.String
            for c in ("name", "ph", "pid", "tid", "ts", "dur", "cat", "id", "bp", "args")
        },
    )
    con.register("_trace_object_form", frame.to_arrow())
    # json(): the args text minified as DuckDB's read_json writes it on the other paths (msgspec
    # keeps the file's own spacing: 4,002 of 4,384 events of the real Level1 file read through
    # msgspec stored `{"a": 1}` where the array form stored `{"a":1}`; issue 36 round four)
    return con.sql("select * replace (json(args) as args) from _trace_object_form")


def _numeric_ts(path: Path, head: bytes, whole_file: bool = True) -> bool:
    """Whether a `ts` of the file is a JSON number: in its head, else anywhere in a plain file
    (read in memory, so it fits the budget; ~0.2 s per 100 MB). DuckDB reads such a number
    through a double (`1736408883717128.900` -> `1736408883717129.0`, 100 ns off; issue 36
    round four), msgspec keeps its digits. A .gz file is looked at in its head only."""
    if _NUMERIC_TS.search(head):
        return True
    if path.suffix == ".gz" or not whole_file:
        return False
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as m:
        return _NUMERIC_TS.search(m) is not None


def _raw_relation(
    con: duckdb.DuckDBPyConnection, path: Path, max_object: int, whole_file: bool = True
) -> duckdb.DuckDBPyRelation:
    """The file's raw entries; whole_file False (a streamed file): a numeric ts is looked for in
    the head only (the whole-file search maps the file: a 4 GB trace peaked at 3.9 GB RSS)."""
    form, head = _sniff(path)
    if form == "object" or _numeric_ts(path, head, whole_file):
        return _msgspec_relation(con, path, form)
    return con.sql(
        f"select * from read_json({sql_string(path)}, format = 'array', columns = {_COLUMNS},"
        f" maximum_object_size = {max_object})"
    )


def _ts_ns_sql(column: str) -> str:
    """`column` (µs text) -> exact ns. torch_npu's own form, digits with exactly 3 decimals, is
    the digits without the dot (4x cheaper than the general parse, ~1 s less per 500 MB);
    anything else goes through units.us_text_to_ns_sql. The form is tested by one regular
    expression (0.14 s CPU for 1.26 M timestamps, against 0.36 s for the instr + translate test
    it replaced, which accepted the same strings)."""
    return (
        f"case when regexp_full_match({column}, '[0-9]*[.][0-9]{{3}}')"
        f" then try_cast(replace({column}, '.', '') as bigint)"
        f" else {us_text_to_ns_sql(column)} end"
    )


_AT = "_dropped_at"  # a dropped event's own ts and dur text, to name it in the quarantine row
_NAMED = 100  # dropped events named one by one (the count covers all of them)


def _dropped_lines(frame: pl.DataFrame) -> list[str]:
    """`event 'name' (pid P, tid T, ts .., dur ..): reason` for the first dropped complete
    events of a scan, in file order."""
    bad = frame.filter(pl.col(drop.DROPPED).is_not_null()).head(_NAMED)
    return [
        f"event {name!r} (pid {pid}, tid {tid}, {at}): {reason}"
        for name, pid, tid, at, reason in bad.select(
            "name", "pid", "tid", _AT, drop.DROPPED
        ).iter_rows()
    ]


def _note_set_aside(
    view: TraceView, invalid: list[str], counts: dict[str, int], dropped_lines: list[str]
) -> None:
    """The quarantine lines of a read: entries set aside whole (counted in `counts` by code:
    invalid_event, duplicate_key) first, then the events dropped for one value (counted under
    their own codes)."""
    view.dropped = drop.merged(view.dropped, counts)
    view.set_aside = [*invalid, *dropped_lines]
    view.set_aside_count = sum(view.dropped.values()) if view.set_aside else None


# An entry that is an object but no usable event (docs/ingest_rules.md): no `ph` at all, a
# complete event whose `pid` or `tid` is no integer (torch_npu writes integers: it could not be
# mapped to its process' lane or its thread) or whose `args` is no object. Each is dropped as
# invalid_event and named.
_INVALID_EVENT = (
    ("no_ph", "'no ph'"),
    ("name is null", "'no name'"),  # was dropped by the NOT NULL name without a line
    ("left(name, 1) in ('{', '[') and json_valid(name)", "'name is ' || name"),
    # an integer written as digits: DuckDB's cast rounds '1.5' to 2, so the text must be the
    # integer's own; a complete event without pid or tid has no lane or thread (none in the
    # real exports: 13,739 of 13,739 complete events have both)
    (
        "pid is null or try_cast(pid as bigint)::varchar is distinct from pid",
        "'pid ' || coalesce(pid, 'missing') || ' is not an integer'",
    ),
    (
        "tid is null or try_cast(tid as bigint)::varchar is distinct from tid",
        "'tid ' || coalesce(tid, 'missing') || ' is not an integer'",
    ),
    (
        "args is not null and args::varchar <> 'null' and left(args::varchar, 1) <> '{'",
        "'args ' || args::varchar || ' is not an object'",
    ),
)


def _scan_sql(checked: bool = False) -> str:
    """The one pass over the file (relation `raw`): complete (X), metadata (M) and flow (s/f)
    events, and entries without `ph` (set aside as invalid_event); counters (C) and everything
    else are dropped inside the scan (counters are as many as the complete events in Level1+
    exports). `checked`: `raw` is `_checked_entries` (columns _code, _why: an entry that is no
    object or gives a key twice), each such entry set aside under its code."""
    entry_rules = (
        [
            ("_code = 'duplicate_key'", drop.DUPLICATE_KEY),
            ("_code = 'invalid_event'", drop.INVALID_EVENT),
        ]
        if checked
        else []
    )
    reason = drop.sql_reason(
        [
            *entry_rules,
            *((condition, drop.INVALID_EVENT) for condition, _ in _INVALID_EVENT),
            (f"name = '{LEFT_OUT}' or cat = '{LEFT_OUT}'", drop.TOO_LARGE),  # no quote in it
            ("ts is null", drop.MISSING_TIMESTAMP),
            ("start_ns is null and isfinite(try_cast(ts as double))", drop.TIMESTAMP_OUT_OF_RANGE),
            ("start_ns is null", drop.UNPARSABLE_TIMESTAMP),
            ("dur is null", drop.MISSING_DURATION),
            ("dur_us is null", drop.UNPARSABLE_DURATION),
            ("not isfinite(dur_us)", drop.NON_FINITE_DURATION),
            ("dur_us < 0", drop.NEGATIVE_DURATION),
            (f"start_ns::double + dur_us * 1000 >= {drop.MAX_END_NS}", drop.DURATION_OUT_OF_RANGE),
        ]
    )
    why = " ".join(f"when {condition} then {text}" for condition, text in _INVALID_EVENT)
    if checked:
        why = f"when _code is not null then _why {why}"
    at = (
        f"case {why} else 'ts ' || coalesce(ts::varchar, 'missing')"
        " || ', dur ' || coalesce(dur::varchar, 'missing') end"
    )
    # an entry without ph (or set aside whole) is read as a complete event that is never kept;
    # the text naming a dropped event is built for the dropped rows alone (DuckDB evaluates a
    # CASE branch only for the rows it selects: built for every complete event, it cost ~0.3 s
    # CPU per 500 MB)
    bad_entry = "ph is null or _code is not null" if checked else "ph is null"
    entry_columns = ", _code, _why" if checked else ""
    return f"""
        with events as (
            select case when {bad_entry} then 'X' else ph end as ph, ph is null as no_ph,
                   pid, tid, name, cat, ts, dur, id, bp, args{entry_columns},
                   case when ph in ('X', 's', 'f') then {_ts_ns_sql("ts")} end as start_ns,
                   case when ph = 'X' then try_cast(dur as double) end as dur_us
            from raw
            where ph in ('X', 'M', 's', 'f') or {bad_entry}
        ),
        marked as (
            select *, case when ph = 'X' then {reason} end as reason
            from events
        )
        select ph, pid, tid, name,
               case when ph <> 'M' then cat end as category,
               start_ns,
               case when reason is null then round(dur_us * 1000)::bigint end as dur_ns,
               reason as {drop.DROPPED},
               case when reason is not null then {at} end as {_AT},
               case when ph in ('s', 'f') then id end as flow_id,
               case when ph in ('s', 'f') then bp end as bp,
               case when ph in ('X', 'M') then args::varchar end as args
        from marked
        """


def _checked_entries(
    con: duckdb.DuckDBPyConnection, path: Path, max_object: int
) -> duckdb.DuckDBPyRelation:
    """The array read entry by entry as JSON values (DuckDB refused one record of the typed read:
    an entry that is no object, or that gives a key twice), with the event columns read_json
    yields and `_code` / `_why` for an entry to set aside: what the streamed read falls back to,
    still a stream (`_entries_one_by_one` is the in-memory read's)."""
    names = ("name", "ph", "pid", "tid", "ts", "dur", "cat", "id", "bp")
    paths = ", ".join(f"'$.{c}'" for c in names)
    fields = ", ".join(f"value[{i}] as {c}" for i, c in enumerate(names, start=1))
    twice = "list_filter(list_distinct(keys), k -> len(list_filter(keys, x -> x = k)) > 1)"
    return con.sql(
        f"""
        select {fields}, args,
               case when kind <> 'OBJECT' then 'invalid_event'
                    when len(keys) <> len(list_distinct(keys)) then 'duplicate_key'
               end as _code,
               case when kind <> 'OBJECT' then 'not an object (' || lower(kind) || ')'
                    else 'duplicate key '
                         || array_to_string(list_transform({twice}, k -> '''' || k || ''''), ', ')
               end as _why
        from (
            select json_type(entry) as kind, json_keys(entry) as keys,
                   json_extract_string(entry, [{paths}]) as value, entry -> 'args' as args
            from read_json({sql_string(path)}, format = 'array', records = false,
                           columns = {{entry: 'JSON'}}, maximum_object_size = {max_object})
        )
        """
    )


def _scan(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """The scan streamed to Polars in Arrow batches, so DuckDB never holds the whole result."""
    reader = con.execute(_scan_sql()).to_arrow_reader(batch_size=_BATCH_ROWS)
    schema = reader.schema
    try:
        return pl.from_arrow(reader, rechunk=False)
    except OSError as exc:
        # DuckDB's error raised while the batches stream (a record past the first batch that
        # is no object or gives a key twice): the caller's duckdb.Error handling applies
        raise duckdb.InvalidInputException(str(exc)) from exc
    except ValueError:  # no batch at all: an empty result
        return pl.from_arrow(schema.empty_table())


def _device_id(meta: pl.DataFrame, process: pl.DataFrame) -> int | None:
    """Device of the compute lane: `process_labels` "NPU <id>", else the pid's low 5 bits when the
    pid decodes as (host os pid << 10 | sort << 5 | device) (docs/ascend_formats.md §3.3)."""
    compute_pids = process.filter(pl.col("lane") == "compute")["pid"].to_list()
    labels = meta.filter((pl.col("name") == "process_labels") & pl.col("pid").is_in(compute_pids))
    for label in labels["labels"].drop_nulls().to_list():
        parts = label.split()
        if len(parts) == 2 and parts[0].upper() == "NPU" and parts[1].isdigit():
            return int(parts[1])
    host_pids = {
        int(p) for p in process.filter(pl.col("lane") == "host")["pid"].to_list() if p.isdigit()
    }
    for pid in compute_pids:
        if pid.isdigit() and (int(pid) >> 10) in host_pids:
            return int(pid) & 31
    return None


SLICE_COLUMNS = ("lane", "thread", "name", "category", "start_ns", "dur_ns", "step", "args")


def read_trace_view(path: Path, max_memory: int | str | None = None) -> TraceView:
    """Read one trace_view.json; raises QuarantineError when the file cannot be used.

    max_memory: the budget (bytes or '2GiB'; default $TRACEREPLAY_MAX_MEMORY, else 2 GiB). A file
    whose in-memory read would exceed it is streamed to an on-disk Parquet spill instead, and
    `slices` is then a LazyFrame over it (docs/bench_ingest.md, "Bounded memory")."""
    budget = memory_budget.max_memory(max_memory)
    path = _whole_gzip(path)
    try:
        return _read_within(path, budget)
    except QuarantineError as exc:
        if exc.reason != "too_large":
            raise
        refused = exc
    # one value too large to read: the entries holding a string past the first read's limit are
    # set aside (read from a copy where each such string is LEFT_OUT), the others load
    limit = object_limits(budget)[0]
    strings = long_strings(path, limit)
    if not strings:
        raise refused
    copy = memory_budget.new_spill_dir() / path.name
    without_long_strings(path, strings, copy)
    try:
        view = _read_within(copy, budget)
    finally:
        copy.unlink(missing_ok=True)
    lines = [
        f"byte {s.start}: a string of {s.size / 2**20:.1f} MiB"
        + (f" (key {s.key!r})" if s.key else "")
        + f" past the {limit / 2**20:.0f} MiB one value may take was left out (an event whose"
        f" name or category it was is set aside as {drop.TOO_LARGE}; raise --max-memory to read"
        " it)"
        for s in strings
    ]
    view.set_aside = [*lines, *view.set_aside]
    view.set_aside_count = sum(view.dropped.values()) or len(lines)
    return view


def _read_within(path: Path, budget: int) -> TraceView:
    """The read of `path` under `budget` bytes: in memory or streamed, with a retry at a larger
    object size when one entry is past 16 MB and the retry fits; QuarantineError too_large when
    it does not."""
    limits = object_limits(budget)
    too_large = QuarantineError(
        "too_large",
        f"one entry of the trace is larger than {limits[0] / 2**20:.0f} MiB and reading it"
        f" would pass the ingest memory budget ({budget / 2**30:.1f} GiB): raise --max-memory /"
        " $TRACEREPLAY_MAX_MEMORY to read it",
    )
    out_of_memory = False  # the last read ran out of DuckDB's share (no entry named too large)
    for limit in limits:
        if limit != limits[0] and big_entry_peak_bytes(path) > budget:
            # the retry would not fit: refused before it reads
            raise _out_of_memory(budget) if out_of_memory else too_large
        try:
            if streams(path, budget):
                return _read_streamed(path, limit, budget)
            return _read_trace_view(path, limit)
        except QuarantineError as exc:
            out_of_memory = "maximum_object_size" not in exc.detail
            if out_of_memory and "Out of Memory" not in exc.detail:
                raise
            if limit == limits[-1]:
                raise (_out_of_memory(budget) if out_of_memory else too_large) from exc
    raise AssertionError("unreachable")


def _out_of_memory(budget: int) -> QuarantineError:
    """DuckDB ran out of its share of the budget reading the trace (no entry was too large)."""
    return QuarantineError(
        "too_large",
        f"reading the trace needed more than DuckDB's share of the ingest memory budget"
        f" ({memory_budget.duckdb_limit_mib(budget)} MiB of {budget / 2**30:.2f} GiB): raise"
        " --max-memory / $TRACEREPLAY_MAX_MEMORY to read it",
    )


def object_limits(budget: int) -> tuple[int, ...]:
    """DuckDB's maximum_object_size for a first read and a retry: 16 MB, then the largest entry
    the budget can hold: an eighth of it, at most 1 GiB (DuckDB's JSON reader allocates buffers
    of twice the limit inside its memory limit, a quarter of the budget)."""
    retry = min(_OBJECT_LIMITS[-1], max(_OBJECT_LIMITS[0], budget // 8))
    return (_OBJECT_LIMITS[0], retry) if retry > _OBJECT_LIMITS[0] else (_OBJECT_LIMITS[0],)


def big_entry_peak_bytes(path: Path) -> int:
    """Peak RSS of the in-memory read of a file that holds an entry past 16 MB: such an entry's
    string is copied by the JSON buffer, DuckDB's vector, Arrow and Polars. Measured: a 202 MB
    trace_view.json holding one 200 MiB string peaked at 1.17 GB (5.8x); a 768 MiB string had
    reached 3.3 GB before this check."""
    return int(json_bytes(path) * BIG_ENTRY_PEAK_FACTOR) + INTERPRETER_BYTES


def estimated_peak_bytes(path: Path) -> int:
    """Peak RSS the in-memory read of `path` is expected to need (bench ingest: 1.5-1.8x the
    file plus the interpreter; a .gz file by the bytes it inflates to)."""
    return int(json_bytes(path) * IN_MEMORY_PEAK_FACTOR) + INTERPRETER_BYTES


def streams(path: Path, budget: int) -> bool:
    """Whether `path` is read by the streamed (bounded-memory) path under `budget` bytes: an
    array-form file with string timestamps whose in-memory read would not fit. The object form
    and JSON-number `ts` need msgspec, which holds the whole file."""
    try:
        if estimated_peak_bytes(path) <= budget:
            return False
    except OSError:
        return False
    form, head = _sniff(path)
    return form == "array" and not _NUMERIC_TS.search(head)


# One thread: a single JSON array is parsed no faster by two, which only doubles the CPU
# (500 MB trace here: 2.7-3.0 s CPU on one thread vs 5.0-5.7 s on two; bench ingest).
# Strings leave DuckDB as Arrow string views, Polars' own layout (~50 MB less RSS per 500 MB).
_SCAN_SETTINGS = (
    f"set threads = {_SCAN_THREADS}",
    "set arrow_output_version = '1.4'",
    "set produce_arrow_string_view = true",
)


def _configure(con: duckdb.DuckDBPyConnection) -> None:
    for statement in _SCAN_SETTINGS:
        con.execute(statement)


HALVES_MIN_BYTES = 64 << 20
"""A plain array file at least this large is parsed in two halves on two threads."""


def _in_halves(
    path: Path, work: Callable[[Path, int], Any], beside: Callable[[], bool] = lambda: False
) -> list[Any] | None:
    """`work(half, i)` on each half of a large plain array file (json_halves: cut at an entry
    boundary near the middle, each half written as an array of its own) on two threads, DuckDB
    parsing one array on one thread only (500 MB bench trace: the in-memory scan 3.4 s -> 2.5 s
    wall, +0.4 s CPU for the copies; docs/bench_ingest.md "The scan in two halves"); `beside`
    runs meanwhile on this thread and returning True drops the halves' results. None (read the
    file whole, as before) for a smaller file, one core, a .gz, the object form, no boundary
    near the middle, or a half that does not parse: a cut inside a string or a nested value,
    or a bad entry, which the whole read then names as it always did."""
    if path.suffix == ".gz" or machine.usable_cores() < 2:
        return None
    size = path.stat().st_size
    if size < HALVES_MIN_BYTES or _sniff(path)[0] != "array":
        return None
    cut = json_halves.cut_point(path)
    if cut is None:
        return None
    folder = memory_budget.new_spill_dir()
    parts = (
        (folder / "first_half.json", 0, cut[0], b"", b"]"),
        (folder / "second_half.json", cut[1], size, b"[", b""),
    )
    with ThreadPoolExecutor(2, thread_name_prefix="tracereplay-half") as pool:
        futures = [pool.submit(_half, path, part, work, i) for i, part in enumerate(parts)]
        abandon = beside()
        halves = [future.result() for future in futures]
    if abandon or any(isinstance(half, Exception) for half in halves):
        return None
    return halves


def _half(
    source: Path,
    part: tuple[Path, int, int, bytes, bytes],
    work: Callable[[Path, int], Any],
    i: int,
) -> Any:
    """One half of `source` written to its own file and given to `work` (a worker thread): what
    it returns, or the error that stopped it."""
    target, start, end, head, tail = part
    try:
        json_halves.write_part(source, target, start, end, head, tail)
        return work(target, i)
    except (duckdb.Error, OSError) as exc:
        return exc
    finally:
        target.unlink(missing_ok=True)


def _half_read_json(con: duckdb.DuckDBPyConnection, half: Path, max_object: int) -> None:
    """`raw`: a half's entries (json_halves; the whole file was sniffed: no JSON-number ts)."""
    con.register(
        "raw",
        con.sql(
            f"select * from read_json({sql_string(half)}, format = 'array', columns = {_COLUMNS},"
            f" maximum_object_size = {max_object})"
        ),
    )


def _scan_half(half: Path, max_object: int) -> pl.DataFrame:
    con = private_connection()
    try:
        _configure(con)
        _half_read_json(con, half, max_object)
        return _scan(con)
    finally:
        con.close()


def _scan_in_halves(path: Path, max_object: int) -> pl.DataFrame | None:
    """The in-memory scan in two halves (`_in_halves`), joined in file order; None for the whole
    read, also when a `ts` anywhere is a JSON number (msgspec reads those: looked for on this
    thread while the halves are copied and parsed)."""
    halves = _in_halves(
        path,
        lambda half, _: _scan_half(half, max_object),
        beside=lambda: _numeric_ts(path, _sniff(path)[1]),
    )
    return None if halves is None else pl.concat(halves, rechunk=False)


def _read_trace_view(path: Path, max_object: int) -> TraceView:
    """One in-memory read with a given DuckDB object-size limit."""
    con = scratch_connection(_SCAN_SETTINGS)
    set_aside: list[str] = []
    counts: dict[str, int] = {}
    try:
        try:
            events = _scan_in_halves(path, max_object)
            if events is None:
                con.register("raw", _raw_relation(con, path, max_object))
                events = _scan(con)
        except (duckdb.Error, _BadEntry) as exc:
            if isinstance(exc, duckdb.Error) and not _one_bad_entry(exc):
                raise
            typed = isinstance(exc, _BadEntry)  # msgspec refused it, not DuckDB
            form = _sniff(path)[0]
            kept, set_aside, counts = _entries_one_by_one(_file_bytes(path), form, typed)
            con.register("raw", _kept_relation(con, kept, typed, max_object))
            del kept
            events = _scan(con)
    except duckdb.Error as exc:
        raise QuarantineError("invalid_json", str(exc).splitlines()[0]) from exc
    finally:
        con.close()
    meta = _meta(events.filter(pl.col("ph") == "M"))
    flows = _flows(events)
    complete = events.filter(pl.col("ph") == "X")
    del events
    dropped_lines = _dropped_lines(complete)
    slices, dropped = drop.split(complete.drop(_AT))
    del complete
    view = _view(path, meta, slices, dropped, flows)
    _note_set_aside(view, set_aside, counts, dropped_lines)
    return view


def _read_streamed(path: Path, max_object: int, budget: int) -> TraceView:
    """The bounded-memory read: DuckDB copies the scan to Parquet under a memory limit (a row
    group at a time), metadata and drop counts are read back from the Parquet file, and the
    slices stay there as a LazyFrame that the warehouse write streams in batches."""
    spill = memory_budget.new_spill_dir()
    target = spill / "trace_view.parquet"
    con = private_connection()
    _configure(con)
    share = memory_budget.duckdb_limit_mib(budget)
    group_rows = spill_group_rows(share)
    con.execute(f"set memory_limit = '{share}MiB'")
    con.execute(f"set temp_directory = {sql_string(spill)}")
    # file order, as the in-memory read (with false, the rows past ~600,000 of a 500 MB trace
    # came in another order, so flows.bind numbered them otherwise); no cost in time or RSS
    con.execute("set preserve_insertion_order = true")
    not_json: list[str] = []
    try:
        try:
            targets = _spill_in_halves(path, spill, max_object, budget)
            if targets is None:
                targets = [target]
                _scan_to_spill(con, path, target, max_object, group_rows)
        except duckdb.Error as exc:
            if not _one_bad_entry(exc):
                raise
            # an entry that is no JSON (a raw control character, a lone surrogate escape):
            # the array is copied without it, found by its structure a block at a time, and
            # that entry named at its position as the in-memory read names it
            copy = spill / "trace_view_json_entries.json"
            not_json = _copy_without_entries_not_json(path, copy, max_object)
            if not not_json:
                raise
            target.unlink(missing_ok=True)
            _scan_to_spill(con, copy, target, max_object, group_rows)
            copy.unlink()
    except duckdb.Error as exc:
        raise QuarantineError("invalid_json", str(exc).splitlines()[0]) from exc
    finally:
        con.close()
    scan = pl.scan_parquet(targets)
    meta = _meta(scan.filter(pl.col("ph") == "M").collect())
    flows = _flows(scan).collect()
    complete = scan.filter(pl.col("ph") == "X")
    counts = (
        complete.filter(pl.col(drop.DROPPED).is_not_null()).group_by(drop.DROPPED).len().collect()
    )
    dropped = {str(r): int(n) for r, n in counts.iter_rows()}
    dropped_lines = (
        _dropped_lines(complete.filter(pl.col(drop.DROPPED).is_not_null()).head(_NAMED).collect())
        if dropped
        else []
    )
    view = _view(path, meta, _kept_complete(scan), dropped, flows, spill=targets)
    counts = {drop.INVALID_EVENT: len(not_json)} if not_json else {}
    _note_set_aside(view, not_json, counts, dropped_lines)
    return view


HALVES_MIN_DUCKDB_MIB = 256
"""The streamed scan goes in two halves only when DuckDB's share of the budget is at least this
(each half's connection takes half of it; the 64 MiB floor would pass the share below)."""


def _spill_in_halves(path: Path, spill: Path, max_object: int, budget: int) -> list[Path] | None:
    """The streamed scan in two halves (`_in_halves`): each half copied to a Parquet file of its
    own by its own connection under half of DuckDB's share of the budget; the files in file
    order, or None for the whole read (a half's file left behind is removed)."""
    share = memory_budget.duckdb_limit_mib(budget)
    if share < HALVES_MIN_DUCKDB_MIB:
        return None

    def copy(half: Path, i: int) -> Path:
        target = spill / f"trace_view_half{i}.parquet"
        con = private_connection()
        try:
            _configure(con)
            con.execute(f"set memory_limit = '{share // 2}MiB'")
            con.execute(f"set temp_directory = {sql_string(spill / f'duckdb_half{i}')}")
            _half_read_json(con, half, max_object)
            _copy_scan(con, target, group_rows=spill_group_rows(share // 2))
            return target
        finally:
            con.close()

    targets = _in_halves(path, copy)
    if targets is None:
        for leftover in spill.glob("trace_view_half*.parquet"):
            leftover.unlink()
    return targets


def _scan_to_spill(
    con: duckdb.DuckDBPyConnection, path: Path, target: Path, max_object: int, group_rows: int
) -> None:
    """The scan of the array `path` copied to the Parquet `target` in row groups of
    `group_rows`; when DuckDB refuses one record (no object, a key given twice) the array is
    read again entry by entry, checked."""
    con.register("raw", _raw_relation(con, path, max_object, whole_file=False))
    try:
        _copy_scan(con, target, group_rows=group_rows)
    except duckdb.Error as exc:
        if not _one_bad_record(exc):
            raise
        # the entries as JSON values, checked, spilled first: the scan over the checked
        # read alone needs more than DuckDB's 64 MiB floor (a 2 MB trace_view.json)
        entries = target.parent / "entries.parquet"
        con.execute(
            f"copy ({_checked_entries(con, path, max_object).sql_query()})"
            f" to {sql_string(entries)} (format parquet, row_group_size {group_rows})"
        )
        con.register("raw", con.read_parquet(str(entries)))
        target.unlink(missing_ok=True)
        _copy_scan(con, target, group_rows, checked=True)
        entries.unlink()


_CHECK_BATCH = 100_000  # entries checked for being JSON at a time (one msgspec call)


def _copy_without_entries_not_json(path: Path, target: Path, max_object: int) -> list[str]:
    """Copy the JSON array `path` (plain or .gz) to `target` without its entries that are no
    JSON, read a block at a time (json_entries.ArrayStream: memory holds a block and a batch of
    entries, never the file); one `traceEvents[i]: not JSON (why)` line per entry left out.
    Bare NaN / Infinity do not count (DuckDB reads them). Nothing (and no line) when the array's
    structure does not pair up or one entry is past `max_object`: the file stays unreadable."""
    stream = json_entries.ArrayStream("traceEvents", max_entry=max_object, max_rest=1 << 20)
    lines: list[str] = []
    batch: list[bytes] = []
    written = 0

    def flush(out: Any) -> None:
        nonlocal written
        bad = entries_not_json(batch)
        lines.extend(f"traceEvents[{written + i}]: not JSON ({why})" for i, why in bad.items())
        kept = [entry for index, entry in enumerate(batch) if index not in bad]
        if kept:
            out.write((b"," if out.tell() > 1 else b"") + b",".join(kept))
        written += len(batch)
        batch.clear()

    opener = gzip.open if is_gzip(path) else open
    try:
        with opener(path, "rb") as source, open(target, "wb") as out:
            out.write(b"[")
            for entry in json_entries.fed_entries(source, stream):
                if isinstance(entry, int):
                    return []
                batch.append(entry)
                if len(batch) >= _CHECK_BATCH:
                    flush(out)
            if batch:
                flush(out)
            out.write(b"]")
    except (json_entries.BrokenStructure, json_entries.TooLarge):
        return []
    return lines if stream.finish() and stream.level == 1 else []


def spill_group_rows(share_mib: int) -> int:
    """Rows of one row group of the spill under DuckDB's memory limit `share_mib`: as many as
    take an eighth of it at _SPILL_ROW_BYTES a row, between 2,048 and _BATCH_ROWS. The Parquet
    writer holds a row group until it is full: at 100,000 rows the copy needed ~76 MiB, so
    under the 64 MiB floor (a budget under ~300 MB, or a late rank of a run that holds most of
    it) a 60 MB trace ended in DuckDB's Out of Memory, reported as an entry past 16 MiB; at
    12,700 it fits (docs/bench_ingest.md "A late rank's streamed read"). DuckDB's
    row_group_size_bytes would say it directly but needs preserve_insertion_order off, which
    reorders the rows."""
    return max(2_048, min(_BATCH_ROWS, (share_mib << 20) // 8 // _SPILL_ROW_BYTES))


_SPILL_ROW_BYTES = 660  # 3x a torch_npu trace_view.json's mean entry (bench trace: 221.7 bytes)


def _copy_scan(
    con: duckdb.DuckDBPyConnection, target: Path, group_rows: int, checked: bool = False
) -> None:
    con.execute(
        f"copy ({_scan_sql(checked)}) to {sql_string(target)}"
        f" (format parquet, row_group_size {group_rows})"
    )


def _flows(events: pl.DataFrame | pl.LazyFrame):
    """The flow events (s/f) of a scan in flows.FLOW_SCHEMA."""
    return events.filter(pl.col("ph").is_in(flow_links.FLOW_PHASES)).select(
        pl.col(c).cast(t) for c, t in flow_links.FLOW_SCHEMA.items()
    )


def _meta(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        pl.col("args").str.json_path_match("$.name").alias("value"),
        pl.col("args").str.json_path_match("$.labels").alias("labels"),
    )


def lazy_steps(frame: pl.LazyFrame, steps: pl.DataFrame) -> pl.LazyFrame:
    """`intervals.assign_steps` as a streamable plan, with the same rule: the latest window
    starting at or before `start_ns`, if `start_ns` is before that window's end. The window is
    found by binning start_ns at the windows' starts (elementwise) and joining the small window
    table: `search_sorted` against a literal, like `replace_strict`, is a whole-column function
    that Polars' streaming engine runs in memory, holding every row of the trace, args and all,
    at the multiplexer in front of it (docs/bench_ingest.md "Where the streamed RSS grows")."""
    if steps.is_empty():
        return frame.with_columns(pl.lit(None, dtype=pl.Int32).alias("step"))
    # starts strictly ascending: of windows starting together the last in order wins, as in
    # search_sorted(side="right") - 1
    windows = steps.sort("start_ns", maintain_order=True).unique(
        "start_ns", keep="last", maintain_order=True
    )
    table = windows.select(
        pl.int_range(1, pl.len() + 1, dtype=pl.UInt32).alias("_bin"),
        pl.col("end_ns").alias("_end"),
        pl.col("step").cast(pl.Int32).alias("_step"),
    )
    bins = pl.col("start_ns").bin_intervals(windows["start_ns"].to_list(), labels=False)
    return (
        left_lookup(frame.with_columns(bins.alias("_bin")), table, "_bin")
        .with_columns(
            pl.when(pl.col("start_ns") < pl.col("_end")).then(pl.col("_step")).alias("step")
        )
        .drop("_bin", "_end", "_step")
    )


def _derivable(slices: pl.LazyFrame) -> pl.DataFrame:
    """The rows a rank's derivations read (comm_ops, step_breakdown): the comm and overlap
    lanes and the receive tasks of the compute lane, without args (a small share of a trace)."""
    return (
        slices.filter(
            pl.col("lane").is_in(["comm", "overlap"])
            | ((pl.col("lane") == "compute") & pl.col("name").str.contains(RECEIVE_REGEX))
        )
        .drop("args")
        .collect()
    )


def _kept_complete(scan: pl.LazyFrame) -> pl.LazyFrame:
    """The complete events of a spill (or of a part of it) that are kept: no drop reason."""
    complete = scan.filter(pl.col("ph") == "X")
    return complete.filter(pl.col(drop.DROPPED).is_null()).drop(drop.DROPPED, _AT)


def _launch_rows(
    spill: list[Path], links: pl.DataFrame, process: pl.DataFrame, threads: pl.DataFrame
) -> pl.LazyFrame:
    """The rows launch attribution reads (`ascend_launch.launch_slices`) of a streamed read, as
    a LazyFrame over Parquet files of the spill: the device lanes' slices and the host slices
    bound to a flow or naming a link key, with their flows, lanes and threads joined on and
    their args then cut to the link keys (once, by launch_slices: cut before the flows were
    joined too, the 500 MB bench trace's took 2.08 s instead of 1.81 s, the same rows). The
    spill is read _BATCH_ROWS rows at a time and each part is cut, joined and written before
    the next is read: as one streaming plan
    over the spill, Polars' scan ran ahead of the args cut and held a share of the spill that
    grew with the trace (+0.55 GiB at 2 GB, +1.2 GiB at 4 GB: the peak of a marked 4 GB trace's
    default ingest, docs/bench_ingest.md). `ascend_launch.launch_device_work` reads the files a
    batch at a time."""
    lane_of = dict(zip(process["pid"], process["lane"], strict=True))
    device = [pid for pid, lane in lane_of.items() if lane in ("compute", "comm")]
    host = [pid for pid, lane in lane_of.items() if lane == "host"]
    keyed = pl.col("args").str.contains(LINK_KEY_REGEX).fill_null(False)
    links = links.sort(flow_links.ROW)  # one row per linked slice, by row: parts by range
    linked_rows = links.get_column(flow_links.ROW)
    folder = memory_budget.new_spill_dir()
    scan = pl.scan_parquet(spill)
    total = scan.select(pl.len()).collect().item()
    files: list[Path] = []
    first = 0  # row index (flows.ROW) of the part's first kept slice
    for offset in range(0, max(total, 1), _BATCH_ROWS):
        kept = _kept_complete(scan.slice(offset, _BATCH_ROWS)).collect()
        raw = kept.with_row_index(flow_links.ROW, offset=first)
        start, end = (linked_rows.search_sorted(first + n, "left") for n in (0, kept.height))
        part = links.slice(start, end - start)
        first += kept.height
        bound = pl.col(flow_links.ROW).is_in(part.get_column(flow_links.ROW).implode())
        rows = raw.filter(
            pl.col("pid").is_in(device) | (pl.col("pid").is_in(host) & (bound | keyed))
        ).select(
            flow_links.ROW,
            "pid",
            "tid",
            "name",
            "category",
            "start_ns",
            "dur_ns",
            "args",
        )
        launch = launch_slices(_linked_with_lanes(rows, part, process, threads))
        if launch.height or not files:
            files.append(folder / f"launch_rows_{len(files):06d}.parquet")
            launch.write_parquet(files[-1])
    return pl.scan_parquet(files)


def _linked_with_lanes(
    frame: pl.DataFrame | pl.LazyFrame,
    links: pl.DataFrame,
    process: pl.DataFrame,
    threads: pl.DataFrame,
) -> pl.DataFrame | pl.LazyFrame:
    """`frame` (a DataFrame or LazyFrame of scanned complete events) with its flow links merged
    into the args, the lane of its process (`other` for a pid without a process_name) and its
    thread name (the `thread_name` of pid/tid, else the tid): the one lookup of the in-memory
    and the streamed reads."""
    frame = flow_links.merge_links(frame, links)
    frame = left_lookup(frame, process.select("pid", "lane"), "pid")
    return left_lookup(
        frame.with_columns((pl.col("pid") + "/" + pl.col("tid")).alias("key")),
        threads.select("key", pl.col("value").alias("thread")),
        "key",
    ).with_columns(pl.col("lane").fill_null("other"), pl.col("thread").fill_null(pl.col("tid")))


def _is_empty(frame: pl.DataFrame | pl.LazyFrame) -> bool:
    if isinstance(frame, pl.LazyFrame):
        return frame.select("start_ns").head(1).collect().is_empty()
    return frame.is_empty()


def _view(
    path: Path,
    meta: pl.DataFrame,
    slices: pl.DataFrame | pl.LazyFrame,
    dropped: dict[str, int],
    flows: pl.DataFrame,
    spill: list[Path] | None = None,
) -> TraceView:
    """Lanes, threads and steps mapped onto the complete events (a frame, or a LazyFrame over
    the spill files `spill`, in file order), and the flows bound to them as links in their
    args."""
    process = (
        meta.filter(pl.col("name") == "process_name")
        .select("pid", pl.col("value").alias("process_name"))
        .unique("pid", keep="first", maintain_order=True)
        .with_columns(
            pl.col("process_name")
            .map_elements(lane_of_process, return_dtype=pl.String)
            .alias("lane")
        )
    )
    if process.is_empty():
        if _is_empty(slices) and not dropped:
            raise QuarantineError("empty_trace", f"{path.name} holds no complete events")
        raise QuarantineError("no_lanes", f"{path.name} has no process_name metadata")
    if _is_empty(slices):
        detail = f"{path.name} holds no complete (X) events"
        if dropped:
            detail += f" that can be kept (set aside: {dropped})"
        raise QuarantineError("empty_trace", detail)
    threads = (
        meta.filter(pl.col("name") == "thread_name")
        .select((pl.col("pid") + "/" + pl.col("tid")).alias("key"), pl.col("value"))
        .unique("key", keep="first", maintain_order=True)
    )
    lanes = dict(zip(process["pid"], process["lane"], strict=True))
    slices = slices.with_row_index(flow_links.ROW)
    links, flow_counts = flow_links.bind(slices.lazy(), flows)
    slices = _linked_with_lanes(slices, links, process, threads)
    host_pids = [pid for pid, lane in lanes.items() if lane == "host"]
    windows = slices.filter(
        pl.col("name").str.starts_with(STEP_PREFIX) & pl.col("pid").is_in(host_pids)
    )
    if isinstance(windows, pl.LazyFrame):
        windows = windows.select("name", "start_ns", "dur_ns").collect()
    steps = (
        windows.select(
            pl.col("name").str.strip_prefix(STEP_PREFIX).cast(pl.Int32, strict=False).alias("step"),
            "start_ns",
            (pl.col("start_ns") + pl.col("dur_ns")).alias("end_ns"),
        )
        .drop_nulls()
        .unique("step", keep="first", maintain_order=True)
        .sort("start_ns")
    )
    if isinstance(slices, pl.LazyFrame):
        slices = lazy_steps(slices, steps).select(SLICE_COLUMNS)
        derivable = _derivable(slices)
        launch = _launch_rows(spill, links, process, threads) if spill is not None else None
    else:
        slices = assign_steps(slices.select((*SLICE_COLUMNS[:-2], "args")), steps)
        slices, derivable, launch = slices.select(SLICE_COLUMNS), None, None
    return TraceView(
        slices=slices,
        derivable=derivable,
        launch=launch,
        steps=steps,
        device_id=_device_id(meta, process),
        process_lanes=dict(zip(process["process_name"], process["lane"], strict=True)),
        dropped=dropped,
        flows=flow_counts,
    )
