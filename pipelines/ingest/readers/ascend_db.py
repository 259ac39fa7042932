"""Reader for the torch_npu SQLite export: `ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_N.db`
(plus `analysis.db` and `profiler_info_N.json` beside it) -> RankFrames.

Names are ids into STRING_IDS; times are integer ns (PYTORCH_API keeps them as TEXT). Kernels are
TASK ⋈ COMPUTE_TASK_INFO plus one row per COMMUNICATION_OP (the kernel_details.csv definition);
the db has no Overlap table, so the overlap lanes and the step breakdown are derived from the
task intervals (origin 'derived'), each task in the step whose host window holds its launch
(connection ids, pipelines/ingest/steps/ascend_launch.py; `launch_coverage` per step); analysis.db
StepTraceTime (µs) gives the 'profiler' rows.
Read with Python's sqlite3 in read-only mode (DuckDB's sqlite extension is not available here)."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipelines.ingest import dropped as drop
from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import Quarantined, RankFrames
from pipelines.ingest.readers.hccl import group_hash, is_p2p_expr, op_type_expr
from pipelines.ingest.readers.profiler_info import (
    ProfilerInfo,
    ProfilerMetadata,
    collected_at_from_names,
    find_profiler_info,
    groups_by_hash,
    read_profiler_info,
    read_profiler_metadata,
)
from pipelines.ingest.steps.ascend_launch import launch_breakdown, launch_steps
from pipelines.ingest.steps.step_breakdown import assess, derive_breakdown
from pipelines.vocabulary.intervals import assign_steps

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
DB_GLOB = "ascend_pytorch_profiler*.db"
ANALYSIS_DB = "analysis.db"
REQUIRED_TABLES = ("STRING_IDS", "TASK", "COMPUTE_TASK_INFO")
NON_KERNEL_CATEGORY = "non_kernel_task"  # pipelines/device_work.EXCLUDED_DEVICE_CATEGORIES
COMM_CORE = "HCCL"  # Accelerator Core of communication rows in kernel_details.csv of this era

# reason codes (quarantine.reason)
MISSING_FILE = "missing_file"
EMPTY_FILE = "empty_file"
CORRUPT_DB = "corrupt_db"
MISSING_TABLES = "missing_tables"
MISSING_NAME = "missing_name"  # a dropped-row code: a task, op or call without a name id
REPAIRED = "_repaired"  # why a comm op's time was taken from its sub-tasks (NULL: its own)

# bytes per element of ENUM_HCCL_DATA_TYPE names
_DTYPE_BYTES = {
    "INT8": 1,
    "UINT8": 1,
    "INT16": 2,
    "UINT16": 2,
    "FP16": 2,
    "BFP16": 2,
    "INT32": 4,
    "UINT32": 4,
    "FP32": 4,
    "INT64": 8,
    "UINT64": 8,
    "FP64": 8,
    "INT128": 16,
}


def find_db(rank_dir: Path) -> Path:
    """The profiler db of a rank folder (`rank_dir` may also be the db file itself)."""
    rank_dir = Path(rank_dir)
    if rank_dir.is_file():
        return rank_dir
    for folder in (rank_dir / OUTPUT_DIR, rank_dir):
        found = sorted(folder.glob(DB_GLOB))
        if found:
            return found[0]
    raise QuarantineError(MISSING_FILE, f"no {OUTPUT_DIR}/{DB_GLOB} under {rank_dir}")


def read_rank(rank_dir: Path) -> RankFrames:
    """Read one rank of a SQLite export. Raises QuarantineError for a corrupt or incomplete db."""
    db_path = find_db(Path(rank_dir))
    rank_folder = db_path.parent.parent if db_path.parent.name == OUTPUT_DIR else db_path.parent
    if db_path.stat().st_size == 0:
        raise QuarantineError(EMPTY_FILE, f"{db_path.name} is empty")
    try:
        with closing(_connect(db_path)) as con:
            return _read(con, db_path, rank_folder)
    except sqlite3.DatabaseError as err:
        raise QuarantineError(CORRUPT_DB, f"{db_path.name}: {err}") from err


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    # a text cell with bytes that are not UTF-8 (a name): its bytes as \xNN text, as the CSV
    # readers keep them; it failed the whole file as corrupt before (issue 36 round four)
    con.text_factory = lambda data: data.decode("utf-8", errors="backslashreplace")
    return con


def _read(con: sqlite3.Connection, db_path: Path, rank_folder: Path) -> RankFrames:
    columns = _table_columns(con)
    missing = [t for t in REQUIRED_TABLES if t not in columns]
    if missing:
        raise QuarantineError(MISSING_TABLES, f"{db_path.name} lacks {', '.join(missing)}")

    profiler_info = _profiler_info(rank_folder)
    metadata = _profiler_metadata(rank_folder)
    rank, device_id = _identity(con, columns, db_path, profiler_info)
    steps = _steps(con, columns)
    # a task or host call with no start, no end or an end before its start is dropped and
    # counted (dropped.py), never kept as a negative duration
    tasks, dropped, bad_tasks = drop.screen_named(
        _tasks(con, columns), "TASK globalTaskId {global_task_id}"
    )
    host, dropped_host, bad_host = drop.screen_named(
        _host_slices(con, columns), "host call {name!r}"
    )
    ops = _comm_ops(con, columns, rank_folder / OUTPUT_DIR / ANALYSIS_DB, metadata)
    repaired = _repaired_ops(db_path, ops)
    comm, dropped_comm, bad_comm = drop.screen_named(
        ops.drop(REPAIRED), "COMMUNICATION_OP opId {op_id}"
    )
    if device_id is None and tasks.height:
        device_id = int(tasks.get_column("device_id").mode().sort()[0])

    compute = _with_kernel_wait(tasks.filter(pl.col("is_compute")))
    kernels = pl.concat(
        [
            compute.select(
                "name",
                "type",
                "core",
                "start_ns",
                "dur_ns",
                "wait_ns",
                pl.lit(False).alias("is_comm"),
                "connection_id",
            ),
            comm.select(
                pl.col("op").alias("name"),
                pl.col("op_type_raw").alias("type"),
                pl.lit(COMM_CORE).alias("core"),
                "start_ns",
                "dur_ns",
                pl.lit(None, dtype=pl.Int64).alias("wait_ns"),
                pl.lit(True).alias("is_comm"),
                "connection_id",
            ),
        ]
    ).sort("start_ns")
    # each row in the step that launched it (connection ids), as the breakdown below counts it
    kernels = _launch_steps(kernels, host, steps)

    comm_ops = _launch_steps(
        comm.select(
            "op",
            "op_type",
            "group_name",
            "group_kind",
            "is_p2p",
            pl.lit(None, dtype=pl.Int32).alias("peer"),
            "bytes",
            "start_ns",
            "dur_ns",
            "wait_ns",
            "transit_ns",
            "sync_ns",
            "connection_id",
        ),
        host,
        steps,
    )

    # device work belongs to the step whose host window holds its launch (connection ids:
    # TASK / COMMUNICATION_OP -> CANN_API and PYTORCH_API's CONNECTION_IDS), the rule chunk
    # segmentation uses (pipelines/ingest/steps/ascend_launch.py); unlinked work keeps its start
    work_slices = pl.concat([_device_slices(tasks, comm), host], how="diagonal_relaxed")
    derived_launch = launch_breakdown(work_slices, steps)
    if derived_launch is None:  # no connection ids in this export: the start-time rule
        device = pl.concat(
            [
                compute.select(pl.lit("compute").alias("kind"), "start_ns", "dur_ns"),
                comm.select(pl.lit("comm").alias("kind"), "start_ns", "dur_ns"),
            ]
        )
        derived_launch = derive_breakdown(device, steps, comm_ops)
    overlap_slices, derived = derived_launch
    profiler = _analysis_step_trace(rank_folder / OUTPUT_DIR / ANALYSIS_DB, device_id)
    step_breakdown = assess(pl.concat([derived, profiler], how="diagonal_relaxed"), steps)

    slices = pl.concat(
        [
            work_slices,
            overlap_slices.with_columns(pl.lit(None, dtype=pl.String).alias("args")),
        ],
        how="diagonal_relaxed",
    )
    slices = assign_steps(slices, steps).sort("start_ns")

    return RankFrames(
        rank=rank,
        device_id=device_id,
        source_path=str(db_path),
        tables={
            "slices": slices,
            "kernels": kernels,
            "comm_ops": comm_ops,
            "step_breakdown": step_breakdown,
        },
        info=_info(con, columns, profiler_info, metadata, rank_folder),
        dropped=drop.merged(dropped, dropped_host, dropped_comm),
        quarantined=_rows_set_aside(
            db_path, [*bad_tasks, *bad_host, *bad_comm], dropped, dropped_host, dropped_comm
        )
        + repaired,
    )


def _repaired_ops(db_path: Path, ops: pl.DataFrame) -> list[Quarantined]:
    """One quarantine row (`repaired_rows`) naming the communication ops whose own start or end
    was bad or missing and was taken from their sub-tasks (_comm_ops), none when there is none."""
    fixed = ops.filter(pl.col(REPAIRED).is_not_null())
    if fixed.is_empty():
        return []
    lines = [
        f"COMMUNICATION_OP opId {op_id}: {why}"
        for op_id, why in fixed.select("op_id", REPAIRED).head(3).iter_rows()
    ]
    how = " from the sub-tasks of the op"
    return [Quarantined.entries_repaired(db_path, lines, fixed.height, how)]


def _rows_set_aside(db_path: Path, lines: list[str], *counts: dict[str, int]) -> list[Quarantined]:
    """One quarantine row naming the rows dropped for a value (their task id or call), none
    when nothing was dropped (docs/ingest_rules.md)."""
    total = sum(sum(c.values()) for c in counts)
    if not total:
        return []
    return [Quarantined.entries_set_aside(db_path, lines, total, reason="invalid_rows")]


def _launch_steps(rows: pl.DataFrame, host: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """Kernel or comm-op rows (with `connection_id`) stepped by launch (ascend_launch.launch_steps:
    the CANN_API / PYTORCH_API call with the same connection id, else the row's start)."""
    if host.is_empty():
        return assign_steps(rows.drop("connection_id"), steps)
    linked = rows.with_columns(pl.struct("connection_id").struct.json_encode().alias("args"))
    return launch_steps(linked, host, steps).drop("args", "connection_id")


# --- sqlite helpers ---------------------------------------------------------------------------


def _table_columns(con: sqlite3.Connection) -> dict[str, list[str]]:
    names = [r[0] for r in con.execute("select name from sqlite_master where type = 'table'")]
    # the name as a quoted identifier: a quote in a table name must not break the pragma
    return {n: [r[1] for r in con.execute(f"pragma table_info({_identifier(n)})")] for n in names}


def _identifier(name: str) -> str:
    """`name` as a SQLite quoted identifier."""
    return '"' + name.replace('"', '""') + '"'


MAX_RANK = (1 << 31) - 1  # ranks are INTEGER in the warehouse


def _digits(column: str) -> str:
    """SQLite: `column` is text of decimal digits whose value is below MAX_END_NS (an int64 of
    ns written as text: torch_npu stores PYTORCH_API times so)."""
    text = f"trim({column})"
    limit = f"{int(drop.MAX_END_NS)}"  # 19 digits: text of equal length compares as numbers
    return (
        f"({text} != '' and {text} not glob '*[^0-9]*'"
        # SQLite's glob and length stop at a NUL: '12' || char(0) passed as 12 (issue 36 round
        # four); its bytes count them all
        f" and length(cast({text} as blob)) = length({text})"
        f" and (length({text}) < {len(limit)} or (length({text}) = {len(limit)}"
        f" and {text} < '{limit}')))"
    )


def _ns(column: str) -> str:
    """SQLite: the integer ns in `column` (an integer, digits as text, or a real inside int64),
    NULL for anything else: SQLite keeps whatever type a writer gave a cell ('abc', 1e300), and
    `cast('abc' as integer)` is 0, a silent wrong time."""
    return (
        f"(case when typeof({column}) = 'integer' then {column}"
        f" when typeof({column}) = 'text' and {_digits(column)}"
        f" then cast(trim({column}) as integer)"
        f" when typeof({column}) = 'real' and abs({column}) < {drop.MAX_END_NS}"
        f" then cast({column} as integer) end)"
    )


def _ns_reason(column: str, unparsable: str, out_of_range: str) -> str:
    """SQLite: why `column` cannot be a time (a dropped-row code), NULL when it can or is
    missing (a missing value is found later, as every reader finds it)."""
    return (
        f"case when typeof({column}) = 'blob' then '{unparsable}'"
        f" when typeof({column}) = 'text' and not {_digits(column)} then '{unparsable}'"
        f" when typeof({column}) = 'real' and not abs({column}) < {drop.MAX_END_NS}"
        f" then '{out_of_range}' end"
    )


def _time_reason(start: str, end: str) -> str:
    """SQLite: why a row's start / end cells cannot be times, NULL when they can."""
    first = _ns_reason(start, drop.UNPARSABLE_TIMESTAMP, drop.TIMESTAMP_OUT_OF_RANGE)
    second = _ns_reason(end, drop.UNPARSABLE_DURATION, drop.DURATION_OUT_OF_RANGE)
    return f"coalesce({first}, {second})"


UNRESOLVED_NAME = "STRING_IDS#{id}"
"""The name of a row whose name id has no text in STRING_IDS (an id missing from the table, or
its value NULL): the row is kept (its times are good) under the id, so the rows of one op still
share one name (docs/ingest_rules.md)."""


def _name(value: str, name_id: str) -> str:
    """SQLite: the STRING_IDS text `value` of id `name_id`, else UNRESOLVED_NAME of the id (NULL
    only when the id itself is NULL)."""
    prefix, suffix = UNRESOLVED_NAME.split("{id}")
    return f"coalesce({value}, '{prefix}' || {name_id} || '{suffix}')"


def _frame(con: sqlite3.Connection, sql: str, schema: dict[str, Any]) -> pl.DataFrame:
    rows = con.execute(sql).fetchall()
    return pl.DataFrame(rows, schema=schema, orient="row")


def _has(columns: dict[str, list[str]], table: str, column: str | None = None) -> bool:
    return table in columns and (column is None or column in columns[table])


# --- identity, steps, metadata ----------------------------------------------------------------


def _profiler_info(rank_folder: Path) -> ProfilerInfo | None:
    path = find_profiler_info(rank_folder)
    if path is None:
        return None
    try:
        return read_profiler_info(path)
    except QuarantineError:
        return None  # the db is the primary input; a broken side file only loses metadata


def _profiler_metadata(rank_folder: Path) -> ProfilerMetadata | None:
    path = rank_folder / "profiler_metadata.json"
    if not path.is_file():
        return None
    try:
        return read_profiler_metadata(path)
    except QuarantineError:
        return None


def _identity(
    con: sqlite3.Connection,
    columns: dict[str, list[str]],
    db_path: Path,
    profiler_info: ProfilerInfo | None,
) -> tuple[int | None, int | None]:
    """Rank and device: RANK_DEVICE_MAP, else profiler_info_N.json, else the db file name's N."""
    rank: int | None = None
    device: int | None = None
    if _has(columns, "RANK_DEVICE_MAP"):
        row = con.execute("select rankId, deviceId from RANK_DEVICE_MAP limit 1").fetchone()
        if row:
            # a rank id that is not a rank (negative, past INTEGER, text) falls through to the
            # next source instead of failing the whole run
            value = row[0]
            rank = value if isinstance(value, int) and 0 <= value <= MAX_RANK else None
            device = row[1] if isinstance(row[1], int) and 0 <= row[1] <= MAX_RANK else None
    if rank is None and profiler_info is not None:
        rank = profiler_info.rank
    if rank is None:
        m = re.search(r"_(\d+)\.db$", db_path.name)
        rank = int(m.group(1)) if m else None
    return rank, device


def _steps(con: sqlite3.Connection, columns: dict[str, list[str]]) -> pl.DataFrame:
    schema = {"step": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64}
    if _has(columns, "STEP_TIME"):
        steps = _frame(con, "select id, startNs, endNs from STEP_TIME order by startNs", schema)
        if steps.height:
            return steps
    if _has(columns, "PYTORCH_API"):
        rows = _frame(
            con,
            "select s.value, cast(p.startNs as integer), cast(p.endNs as integer) "
            "from PYTORCH_API p join STRING_IDS s on s.id = p.name "
            "where s.value like 'ProfilerStep#%' order by 2",
            {"name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64},
        )
        return rows.select(
            pl.col("name").str.extract(r"#(\d+)", 1).cast(pl.Int32).alias("step"),
            "start_ns",
            "end_ns",
        )
    return pl.DataFrame(schema=schema)


def _info(
    con: sqlite3.Connection,
    columns: dict[str, list[str]],
    profiler_info: ProfilerInfo | None,
    metadata: ProfilerMetadata | None,
    rank_folder: Path,
) -> dict[str, Any]:
    """Run-level facts: hardware, software versions, collection time (the session start, else
    profiler_info's collection end, else the folder names' stamp), profiler settings, groups."""
    info: dict[str, Any] = {"export_type": "db"}
    if _has(columns, "NPU_INFO"):
        row = con.execute("select name from NPU_INFO limit 1").fetchone()
        if row and row[0]:
            info["hardware"] = row[0]
    software = dict(profiler_info.software) if profiler_info else {}
    if _has(columns, "META_DATA"):
        meta = dict(con.execute("select name, value from META_DATA").fetchall())
        if meta.get("SCHEMA_VERSION"):
            software["db_schema"] = meta["SCHEMA_VERSION"]
    info["software"] = software
    if _has(columns, "SESSION_TIME_INFO"):
        row = con.execute("select startTimeNs from SESSION_TIME_INFO limit 1").fetchone()
        if row and row[0]:
            info["collected_at"] = datetime.fromtimestamp(row[0] / 1e9, tz=UTC).replace(tzinfo=None)
    if "collected_at" not in info and profiler_info and profiler_info.collected_at:
        info["collected_at"] = profiler_info.collected_at
    if "collected_at" not in info and (named := collected_at_from_names(rank_folder)):
        info["collected_at"] = named
    if profiler_info and profiler_info.profiler_level:
        info["profiler_level"] = profiler_info.profiler_level
    if _has(columns, "HOST_INFO"):
        row = con.execute("select hostName from HOST_INFO limit 1").fetchone()
        if row and row[0]:
            info["host"] = row[0]
    if metadata is not None:
        info["groups"] = [g.as_json() for g in metadata.groups]
        info["distributed_args"] = metadata.distributed_args
        info["conventions"] = metadata.conventions
    return info


# --- device tasks and communication ops -------------------------------------------------------


def _tasks(con: sqlite3.Connection, columns: dict[str, list[str]]) -> pl.DataFrame:
    """Every TASK row with its compute info (name, op type, core) or communication sub-task info."""
    wait = "c.waitNs" if _has(columns, "COMPUTE_TASK_INFO", "waitNs") else "null"
    if _has(columns, "COMMUNICATION_TASK_INFO"):
        comm_join = (
            "left join COMMUNICATION_TASK_INFO k on k.globalTaskId = t.globalTaskId "
            "left join STRING_IDS kn on kn.id = k.taskType "
            "left join STRING_IDS ko on ko.id = k.name"
        )
        comm_cols = "k.opId, kn.value, ko.value, k.planeId"
    else:
        comm_join = ""
        comm_cols = "null, null, null, null"
    # a kernel (COMPUTE_TASK_INFO row) without a name id is dropped and named, never left to
    # the warehouse's NOT NULL (dropped there without a word)
    # a TASK row that repeats an earlier one in every column (TASK has no key; its
    # COMMUNICATION_TASK_INFO row too, when there is one) is one task written twice: two tasks
    # cannot start at one instant on one stream, so it is counted once (drop.DUPLICATE_ROW)
    copy_key = [f"t.{_identifier(c)}" for c in columns["TASK"]]
    if comm_join:
        copy_key += [f"k.{_identifier(c)}" for c in columns["COMMUNICATION_TASK_INFO"]]
    repeated = f"row_number() over (partition by {', '.join(copy_key)} order by t.rowid) > 1"
    # a stream or device id that is missing or no integer costs its task (a text deviceId
    # failed the whole rank; a NULL streamId was kept in no lane: issue 36 round five)
    stream_ok = "typeof(t.streamId) = 'integer'"
    device_ok = f"typeof(t.deviceId) = 'integer' and abs(t.deviceId) <= {MAX_RANK}"
    reason = (
        f"coalesce({_time_reason('t.startNs', 't.endNs')}, case when not ({stream_ok})"
        f" then '{drop.INVALID_STREAM}' when not ({device_ok}) then '{drop.INVALID_DEVICE}'"
        f" when c.globalTaskId is not null"
        f" and c.name is null then '{MISSING_NAME}' when {repeated}"
        f" then '{drop.DUPLICATE_ROW}' end)"
    )
    sql = f"""
        select t.globalTaskId, {_ns("t.startNs")}, {_ns("t.endNs")} - {_ns("t.startNs")},
               case when {device_ok} then t.deviceId end,
               case when {stream_ok} then t.streamId end, t.taskId,
               t.connectionId, tt.value, c.globalTaskId is not null,
               {_name("cn.value", "c.name")}, co.value, cc.value, c.blockDim, {wait},
               {comm_cols}, {reason}
        from TASK t
        left join STRING_IDS tt on tt.id = t.taskType
        left join COMPUTE_TASK_INFO c on c.globalTaskId = t.globalTaskId
        left join STRING_IDS cn on cn.id = c.name
        left join STRING_IDS co on co.id = c.opType
        left join STRING_IDS cc on cc.id = c.taskType
        {comm_join}
        order by t.startNs
    """
    schema = {
        "global_task_id": pl.Int64,
        "start_ns": pl.Int64,
        "dur_ns": pl.Int64,
        "device_id": pl.Int32,
        "stream": pl.Int64,
        "task_id": pl.Int64,
        "connection_id": pl.Int64,
        "task_type": pl.String,
        "is_compute": pl.Boolean,
        "name": pl.String,
        "type": pl.String,
        "core": pl.String,
        "block_dim": pl.Int64,
        "db_wait_ns": pl.Int64,
        "comm_op_id": pl.Int64,
        "comm_task": pl.String,
        "comm_op": pl.String,
        "plane": pl.Int64,
        drop.DROPPED: pl.String,
    }
    return _frame(con, sql, schema)


def _with_kernel_wait(compute: pl.DataFrame) -> pl.DataFrame:
    """kernel_details "Wait Time": the gap since the previous kernel on the same stream (0 for
    the first), unless the db stores it (COMPUTE_TASK_INFO.waitNs in newer schemas)."""
    gap = (
        (pl.col("start_ns") - (pl.col("start_ns") + pl.col("dur_ns")).shift(1))
        .over(["device_id", "stream"], order_by="start_ns")
        .fill_null(0)
        .clip(lower_bound=0)
    )
    return compute.with_columns(pl.coalesce("db_wait_ns", gap).alias("wait_ns"))


def _comm_ops(
    con: sqlite3.Connection,
    columns: dict[str, list[str]],
    analysis_db: Path,
    metadata: ProfilerMetadata | None,
) -> pl.DataFrame:
    schema = {
        "op_id": pl.Int64,
        "op": pl.String,
        "start_ns": pl.Int64,
        "dur_ns": pl.Int64,
        "connection_id": pl.Int64,
        "group_id": pl.String,
        "op_type_raw": pl.String,
        "data_type": pl.String,
        "alg": pl.String,
        "count": pl.Float64,
        "db_wait_ns": pl.Int64,
        drop.DROPPED: pl.String,
        REPAIRED: pl.String,
    }
    if not _has(columns, "COMMUNICATION_OP"):
        ops = pl.DataFrame(schema=schema)
    else:
        wait = "o.waitNs" if _has(columns, "COMMUNICATION_OP", "waitNs") else "null"
        dtype_join = (
            "left join ENUM_HCCL_DATA_TYPE d on d.id = o.dataType"
            if _has(columns, "ENUM_HCCL_DATA_TYPE")
            else ""
        )
        dtype = "d.name" if dtype_join else "null"
        # an op whose own start or end is bad or missing takes it from its sub-tasks when every
        # one of them has good times: torch_npu writes an op's span as the span of its tasks
        # (8 of 8 ops of the real Level1 db, both ranks: start = first task start, end = last
        # task end, to the ns), so the op, its slice and the overlap derived from it stay
        if _has(columns, "COMMUNICATION_TASK_INFO"):
            span_join = f"""
            left join (
                select k.opId as op_id, min({_ns("t.startNs")}) as first_ns,
                       max({_ns("t.endNs")}) as last_ns, count(*) as tasks
                from COMMUNICATION_TASK_INFO k join TASK t on t.globalTaskId = k.globalTaskId
                group by k.opId
                having count(*) = count({_ns("t.startNs")}) and count(*) = count({_ns("t.endNs")})
            ) span on span.op_id = o.opId"""
            first, last, tasks = "span.first_ns", "span.last_ns", "span.tasks"
        else:
            span_join, first, last, tasks = "", "null", "null", "null"
        start = f"coalesce({_ns('o.startNs')}, {first})"
        end = f"coalesce({_ns('o.endNs')}, {last})"
        own = (
            f"coalesce({_time_reason('o.startNs', 'o.endNs')},"
            f" case when o.startNs is null then '{drop.MISSING_TIMESTAMP}'"
            f" when o.endNs is null then '{drop.MISSING_DURATION}' end)"
        )
        fixed = f"{start} is not null and {end} is not null and {own} is not null"
        repaired = (
            f"case when {fixed} then {own} || ' (start ' || coalesce(quote(o.startNs), 'NULL')"
            f" || ', end ' || coalesce(quote(o.endNs), 'NULL') || '): its time taken from its '"
            f" || {tasks} || ' sub-tasks' end"
        )
        ops = _frame(
            con,
            f"""
            select o.opId, {_name("n.value", "o.opName")},
                   {start}, {end} - {start},
                   o.connectionId, g.value, ot.value, {dtype}, a.value, o.count, {wait},
                   coalesce(case when {fixed} then null else {_time_reason("o.startNs", "o.endNs")}
                            end, case when o.opName is null then '{MISSING_NAME}' end),
                   {repaired}
            from COMMUNICATION_OP o{span_join}
            left join STRING_IDS n on n.id = o.opName
            left join STRING_IDS g on g.id = o.groupName
            left join STRING_IDS ot on ot.id = o.opType
            left join STRING_IDS a on a.id = o.algType
            {dtype_join}
            order by o.startNs
            """,
            schema,
        )
    groups = ops.get_column("group_id").unique().to_list()
    hashes = {g: group_hash(g) for g in groups}
    known = groups_by_hash(metadata.groups) if metadata else {}
    kinds = {h: known[h].kind for h in hashes.values() if h in known}
    ops = ops.with_columns(
        pl.col("group_id")
        .replace_strict(hashes, default=None, return_dtype=pl.String)
        .alias("group_name"),
        pl.col("group_id")
        .replace_strict(hashes, default=None, return_dtype=pl.String)
        .replace_strict(kinds, default=None, return_dtype=pl.String)
        .alias("group_kind"),
        op_type_expr("op").fill_null(op_type_expr("op_type_raw")).alias("op_type"),
        is_p2p_expr("op").alias("is_p2p"),
        (
            pl.col("count")
            * pl.col("data_type").replace_strict(_DTYPE_BYTES, default=None, return_dtype=pl.Int64)
        )
        .round(0)
        .cast(pl.Int64)
        .alias("bytes"),
    )
    timing = _analysis_comm_time(analysis_db)
    if timing.height:
        ops = ops.join(timing, on="op", how="left")
    else:
        ops = ops.with_columns(
            pl.lit(None, dtype=pl.Int64).alias(c) for c in ("a_wait_ns", "transit_ns", "sync_ns")
        )
    return ops.with_columns(pl.coalesce("db_wait_ns", "a_wait_ns").alias("wait_ns"))


# --- analysis.db ------------------------------------------------------------------------------


def _open_analysis(path: Path) -> sqlite3.Connection | None:
    if not path.is_file() or path.stat().st_size == 0:
        return None
    return _connect(path)


def _analysis_comm_time(path: Path) -> pl.DataFrame:
    """Per-op wait / transit / synchronization times (ms in the file) from CommAnalyzerTime."""
    schema = {"op": pl.String, "a_wait_ns": pl.Int64, "transit_ns": pl.Int64, "sync_ns": pl.Int64}
    con = _open_analysis(path)
    if con is None:
        return pl.DataFrame(schema=schema)
    with closing(con):
        if "CommAnalyzerTime" not in _table_columns(con):
            return pl.DataFrame(schema=schema)
        raw = _frame(
            con,
            "select hccl_op_name, wait_time, transit_time, synchronization_time "
            "from CommAnalyzerTime",
            {"op": pl.String, "w": pl.Float64, "t": pl.Float64, "s": pl.Float64},
        )
    ms = 1_000_000
    return raw.group_by("op", maintain_order=True).agg(
        (pl.col("w").first() * ms).round(0).cast(pl.Int64).alias("a_wait_ns"),
        (pl.col("t").first() * ms).round(0).cast(pl.Int64).alias("transit_ns"),
        (pl.col("s").first() * ms).round(0).cast(pl.Int64).alias("sync_ns"),
    )


_STEP_TRACE_COLUMNS = {
    "computing": "computing_ns",
    "communication_not_overlapped": "comm_not_overlapped_ns",
    "overlapped": "overlapped_ns",
    "communication": "communication_ns",
    "free": "free_ns",
    "stage": "stage_ns",
    "bubble": "bubble_ns",
    "communication_not_overlapped_and_exclude_receive": "comm_not_overlapped_excl_receive_ns",
    "preparing": "preparing_ns",
}


def _analysis_step_trace(path: Path, device_id: int | None) -> pl.DataFrame:
    """analysis.db StepTraceTime (µs) -> step_breakdown rows with origin 'profiler'."""
    con = _open_analysis(path)
    if con is None:
        return pl.DataFrame()
    with closing(con):
        columns = _table_columns(con).get("StepTraceTime")
        if not columns:
            return pl.DataFrame()
        present = [c for c in _STEP_TRACE_COLUMNS if c in columns]
        has_device = "deviceId" in columns
        select = ["step", *present] + (["deviceId"] if has_device else [])
        rows = con.execute(f"select {', '.join(select)} from StepTraceTime").fetchall()
    frame = pl.DataFrame(
        rows,
        schema={"step": pl.String}
        | {c: pl.Float64 for c in present}
        | ({"deviceId": pl.Int64} if has_device else {}),
        orient="row",
    )
    if has_device and device_id is not None:
        frame = frame.filter(pl.col("deviceId") == device_id)
    return frame.select(
        pl.col("step").str.strip_chars().replace("", None).cast(pl.Int32, strict=False),
        pl.lit("profiler").alias("origin"),
        *[
            (pl.col(c) * 1000).round(0).cast(pl.Int64).alias(_STEP_TRACE_COLUMNS[c])
            for c in present
        ],
    )


# --- slices ----------------------------------------------------------------------------------


def _device_slices(tasks: pl.DataFrame, comm: pl.DataFrame) -> pl.DataFrame:
    """compute lane: every non-communication device task (thread 'Stream N');
    comm lane: top-level ops (thread 'Group <hash> Communication') and their sub-tasks
    (thread 'Plane N'). args use the trace_view key names (`Task Type`, `connection_id`, ...);
    db task types are spelled as the db does (EVENT_WAIT, not the text's EVENT_WAIT_SQE)."""
    is_comm_task = pl.col("comm_op_id").is_not_null()
    device_tasks = tasks.filter(~is_comm_task).select(
        pl.lit("compute").alias("lane"),
        pl.format("Stream {}", pl.col("stream")).alias("thread"),
        pl.coalesce("name", "task_type").alias("name"),
        # a task without COMPUTE_TASK_INFO is no kernel (stream wait or record, copy, profiling
        # marker, an HCCL op's AI-core part): not computing in analysis.db StepTraceTime
        pl.when(pl.col("is_compute"))
        .then(pl.col("task_type"))
        .otherwise(pl.lit(NON_KERNEL_CATEGORY))
        .alias("category"),
        "start_ns",
        "dur_ns",
        pl.struct(
            pl.col("task_type").alias("Task Type"),
            pl.col("core").alias("Accelerator Core"),
            pl.col("type").alias("OP Type"),
            pl.col("stream").alias("Stream Id"),
            pl.col("task_id").alias("Task Id"),
            pl.col("connection_id").alias("connection_id"),
            pl.col("block_dim").alias("Block Dim"),
        )
        .struct.json_encode()
        .alias("args"),
    )
    sub_tasks = tasks.filter(is_comm_task).select(
        pl.lit("comm").alias("lane"),
        pl.format("Plane {}", pl.col("plane")).alias("thread"),
        pl.coalesce("comm_task", "task_type").alias("name"),
        pl.col("task_type").alias("category"),
        "start_ns",
        "dur_ns",
        pl.struct(
            pl.col("comm_op").alias("op"),
            pl.col("task_type").alias("Task Type"),
            pl.col("stream").alias("Stream Id"),
            pl.col("task_id").alias("Task Id"),
            pl.col("connection_id").alias("connection_id"),
        )
        .struct.json_encode()
        .alias("args"),
    )
    ops = comm.select(
        pl.lit("comm").alias("lane"),
        pl.format("Group {} Communication", pl.col("group_name")).alias("thread"),
        pl.col("op").alias("name"),
        pl.lit("hccl_op").alias("category"),
        "start_ns",
        "dur_ns",
        pl.struct(
            pl.col("group_id").alias("group_id"),
            pl.col("data_type").alias("data_type"),
            pl.col("alg").alias("alg_type"),
            pl.col("count").alias("count"),
            pl.col("connection_id").alias("connection_id"),
        )
        .struct.json_encode()
        .alias("args"),
    )
    return pl.concat([device_tasks, sub_tasks, ops])


def _host_slices(con: sqlite3.Connection, columns: dict[str, list[str]]) -> pl.DataFrame:
    """host lane: PYTORCH_API (framework ops, thread 'Thread <tid>'), CANN_API (thread 'CANN')."""
    schema = {
        "name": pl.String,
        "category": pl.String,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "global_tid": pl.Int64,
        "connection_ids": pl.String,
        "sequence_number": pl.Int64,
        drop.DROPPED: pl.String,
    }
    times = f"{_ns('p.startNs')}, {_ns('p.endNs')}"
    reason = _time_reason("p.startNs", "p.endNs")
    missing_name = f"case when p.name is null then '{MISSING_NAME}' end"
    enum = _has(columns, "ENUM_API_TYPE")
    kind = "e.name" if enum else "cast(p.type as text)"
    enum_join = "left join ENUM_API_TYPE e on e.id = p.type" if enum else ""
    frames = []
    if _has(columns, "PYTORCH_API"):
        conn = (
            "(select group_concat(c.connectionId) from CONNECTION_IDS c "
            "where c.id = p.connectionId)"
            if _has(columns, "CONNECTION_IDS")
            else "cast(p.connectionId as text)"
        )
        frames.append(
            _frame(
                con,
                f"""
                select {_name("s.value", "p.name")}, {kind}, {times}, p.globalTid, {conn},
                       p.sequenceNumber, coalesce({reason}, {missing_name})
                from PYTORCH_API p left join STRING_IDS s on s.id = p.name {enum_join}
                """,
                schema,
            ).with_columns(pl.format("Thread {}", pl.col("global_tid") % (1 << 32)).alias("thread"))
        )
    if _has(columns, "CANN_API"):
        frames.append(
            _frame(
                con,
                f"""
                select {_name("s.value", "p.name")}, {kind}, {times}, p.globalTid,
                       cast(p.connectionId as text), null, coalesce({reason}, {missing_name})
                from CANN_API p left join STRING_IDS s on s.id = p.name {enum_join}
                """,
                schema,
            ).with_columns(pl.lit("CANN").alias("thread"))
        )
    if not frames:
        return pl.DataFrame()
    host = pl.concat(frames).with_columns(
        pl.col("connection_ids").str.split(",").cast(pl.List(pl.Int64), strict=False)
    )
    return host.select(
        pl.lit("host").alias("lane"),
        "thread",
        pl.col("name").fill_null(""),
        "category",
        "start_ns",
        (pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"),
        pl.struct(
            (pl.col("global_tid") // (1 << 32)).alias("pid"),
            (pl.col("global_tid") % (1 << 32)).alias("tid"),
            # one id: the flow key the text trace uses; several (a torch op that launched
            # more than one task): the list
            pl.when(pl.col("connection_ids").list.len() == 1)
            .then(pl.col("connection_ids").list.first())
            .alias("connection_id"),
            pl.when(pl.col("connection_ids").list.len() > 1)
            .then(pl.col("connection_ids"))
            .alias("connection_ids"),
            pl.col("sequence_number").alias("sequence_number"),
        )
        .struct.json_encode()
        .alias("args"),
        drop.DROPPED,
    )
