"""msprof-analyze `cluster_analysis_output/` -> step breakdown per rank (origin 'cluster'), pipeline
stages, communication groups and (when no per-rank data exists) communication ops.

cluster_step_trace_time.csv: `Type=rank` rows (Index = global rank) copy each rank's
step_trace_time; `Type=stage` rows (Index = "(r0, r1, ...)") name the ranks of one pipeline
stage, with column-wise maxima. Values are µs; `Step` may be empty (no profiler schedule); newer
files append `Preparing` and `DP Index, PP Index, TP Index`. Stage number = `PP Index` when present,
else the order of the stage rows' lowest rank.
cluster_communication.json: {group ranks "(0, 1, ...)" | "p2p": {"step<N>" | "step": {"<op>@<hash>":
{"<global rank>": OpInfo}}}} (OpInfo as in communication.json; durations ms, start µs).
communication_group.json: see topology.py (old and new formats)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import polars as pl

from pipelines.ingest.errors import QuarantineError
from pipelines.ingest.frames import SCHEMAS, Quarantined, RunFrames
from pipelines.ingest.readers.csv_text import (
    MISSING,
    LongLines,
    as_int_sql,
    open_csv,
    pick,
    quoted,
    require,
    trimmed,
)
from pipelines.ingest.readers.hccl import is_p2p_op, op_type
from pipelines.ingest.readers.profiler_info import load_json_file
from pipelines.ingest.readers.step_trace import COLUMN_HEADERS, DURATION_KEYS, steps_once
from pipelines.ingest.readers.topology import (
    Group,
    ranks_frame,
    read_communication_group,
    read_communication_group_rows,
)
from pipelines.ingest.units import ms_to_ns, us_text_to_ns_sql, us_to_ns

STEP_TRACE_FILE = "cluster_step_trace_time.csv"
COMMUNICATION_FILE = "cluster_communication.json"
GROUP_FILE = "communication_group.json"
NO_CLUSTER_DATA = "no_cluster_data"
INVALID_CLUSTER_CSV = "invalid_cluster_step_trace"
INVALID_COMMUNICATION = "invalid_cluster_communication"
_STEP_KEY = re.compile(r"^step(\d*)$", re.IGNORECASE)
_MB = 1_000_000
T = TypeVar("T")
R = TypeVar("R")


def read_cluster(cluster_dir: Path, *, with_comm_ops: bool = True) -> RunFrames:
    """Read one cluster_analysis_output folder.

    The run row holds source='cluster', origin, world_size and pp (number of stages); tables:
    `step_breakdown` (rank rows, origin 'cluster'), `ranks` (rank, pp_stage, groups) and, unless
    `with_comm_ops` is False (use False when per-rank traces of the same run are ingested; their
    comm_ops are exact), `comm_ops` from cluster_communication.json. run_id and content_hash are
    left to the assembler. The stage rows' rank tuples: `stage_ranks(read_cluster_step_trace(..))`.
    A file that cannot be read lands in `quarantined`; QuarantineError(no_cluster_data) when
    nothing is usable."""
    cluster_dir = Path(cluster_dir)
    quarantined: list[Quarantined] = []

    def attempt(name: str, reader: Callable[[Path], T]) -> T | None:
        path = cluster_dir / name
        if not path.is_file():
            return None
        try:
            return reader(path)
        except QuarantineError as err:
            quarantined.append(err.quarantined(path))
            return None

    def attempt_rows(name: str, reader: Callable[[Path], tuple[R, list[str]]]) -> R | None:
        """`attempt` of a reader that returns (rows, one line per row left out): the lines
        become the file's `invalid_rows` quarantine row."""
        read = attempt(name, reader)
        if read is None:
            return None
        rows, set_aside = read
        if set_aside:
            quarantined.append(
                Quarantined.entries_set_aside(cluster_dir / name, set_aside, reason="invalid_rows")
            )
        return rows

    table = attempt_rows(STEP_TRACE_FILE, read_cluster_step_trace_rows)
    groups: list[Group] = attempt_rows(GROUP_FILE, read_communication_group_rows) or []
    comm = (
        attempt_rows(COMMUNICATION_FILE, read_cluster_communication_rows) if with_comm_ops else None
    )
    if table is None and not groups and comm is None:
        detail = "; ".join(f"{q.path}: {q.reason}" for q in quarantined) or (
            f"none of {STEP_TRACE_FILE}, {GROUP_FILE}, {COMMUNICATION_FILE}"
        )
        raise QuarantineError(NO_CLUSTER_DATA, detail)

    rank_rows = table.filter(pl.col("type") == "rank") if table is not None else None
    stage_of = stage_membership(table) if table is not None else {}
    members = set(stage_of) | {r for g in groups for r in g.ranks}
    if rank_rows is not None:
        members |= set(rank_rows.get_column("rank").drop_nulls().to_list())
    if comm is not None:
        members |= set(comm.get_column("rank").drop_nulls().to_list())
    if comm is not None and groups:
        kinds = {g.hash: g.kind for g in groups if g.hash}
        comm = comm.with_columns(
            pl.col("group_name")
            .replace_strict(kinds, default=None, return_dtype=pl.String)
            .fill_null(pl.col("group_kind"))
            .alias("group_kind")
        )
    stage_count = len(set(stage_of.values())) if stage_of else None
    run: dict[str, Any] = {
        "source": "cluster",
        "origin": str(cluster_dir),
        "world_size": max(members) + 1 if members else None,
        "pp": stage_count,
    }
    tables: dict[str, pl.DataFrame] = {
        "ranks": ranks_frame(members, groups, stage_of),
    }
    if rank_rows is not None:
        tables["step_breakdown"] = rank_rows.drop("type", "index", "pp_index").with_columns(
            pl.lit("cluster").alias("origin")
        )
    if comm is not None:
        tables["comm_ops"] = comm
    return RunFrames(run=run, tables=tables, quarantined=quarantined)


def read_cluster_step_trace(path: Path) -> pl.DataFrame:
    """cluster_step_trace_time.csv -> columns type ('rank' | 'stage'), index (the raw Index),
    rank (rank rows), pp_index (when the file has one), step and the step_breakdown *_ns
    columns (µs converted exactly to ns); rows with a bad cell left out
    (read_cluster_step_trace_rows)."""
    return read_cluster_step_trace_rows(path)[0]


def read_cluster_step_trace_rows(path: Path) -> tuple[pl.DataFrame, list[str]]:
    """The table of read_cluster_step_trace and one `line N: why` per row left out: a time cell
    that is no number (it was read as NULL without a word), a rank row whose Index is no rank,
    a Step that is no integer (one bad cell costs its row: issue 36)."""
    con = duckdb.connect()
    # a last line the file ends inside (`cut_off`) or a line too long to parse is set aside by
    # its number, as in a rank's step_trace_time.csv (issue 36 round seven: a cut-off row was
    # read with its cells padded)
    long_lines = LongLines()
    try:
        headers = open_csv(con, path, "cst", long_lines)
        found = require(headers, path.name, step=("Step",), type=("Type",), index=("Index",))
        selects = [
            f"{as_int_sql(found['step'])} as step",
            f"lower({trimmed(found['type'])}) as type",
            f"{trimmed(found['index'])} as index",
            f"{as_int_sql(found['index'])} as rank",
            f"{as_int_sql(pick(headers, 'PP Index'))} as pp_index",
        ]
        missing = ", ".join(f"'{m}'" for m in MISSING)
        checks = [
            f"case when {trimmed(found['step'])} not in ({missing})"
            f" and {as_int_sql(found['step'])} is null then 'Step is no number' end"
        ]
        # a rank row's Index is a rank written in digits (`-1` and `3.0` are no rank)
        index = trimmed(found["index"])
        checks.append(
            f"case when lower({trimmed(found['type'])}) = 'rank'"
            f" and not regexp_full_match(coalesce({index}, ''), '[0-9]+')"
            " then 'Index is no rank' end"
        )
        for column, header in COLUMN_HEADERS.items():
            name = pick(headers, header)
            value = us_text_to_ns_sql(quoted(name)) if name else "null::bigint"
            selects.append(f"{value} as {column}")
            if name:
                checks.append(
                    f"case when {trimmed(name)} not in ({missing}) and {value} is null"
                    f" then '{header} is no number' end"
                )
                if column in DURATION_KEYS:  # as in a rank's step_trace_time.csv
                    checks.append(f"case when {value} < 0 then '{header} is a negative time' end")
        checks.append(
            f"case when lower({trimmed(found['type'])}) not in ('rank', 'stage')"
            f" then 'Type is neither rank nor stage' end"
        )
        bad = f"coalesce({', '.join(checks)})"
        frame = con.sql(
            f"select {', '.join(selects)}, {bad} as _bad_cell,"
            f" row_number() over () + 1 as _line from cst"
        ).pl()
    finally:
        con.close()
    frame = frame.with_columns(
        pl.when((pl.col("type") == "rank") & pl.col("rank").is_null())
        .then(pl.lit("Index is no number"))
        .otherwise(pl.col("_bad_cell"))
        .alias("_bad_cell")
    )
    if long_lines.lines:  # the file's own line numbers, past the lines left out
        lines = [long_lines.source_line(line - 2) for line in frame.get_column("_line")]
        frame = frame.with_columns(pl.Series("_line", lines, dtype=frame.schema["_line"]))
    bad_rows = frame.filter(pl.col("_bad_cell").is_not_null())
    set_aside = long_lines.reasons() + [
        f"line {line}: {why}" for line, why in bad_rows.select("_line", "_bad_cell").iter_rows()
    ]
    if bad_rows.height and bad_rows.height == frame.height:
        raise QuarantineError(INVALID_CLUSTER_CSV, f"{path.name}: every row has a bad cell")
    frame = frame.filter(pl.col("_bad_cell").is_null()).drop("_bad_cell")
    # a rank's step given twice: once, or not at all when the two rows differ (issue 36 round
    # seven: both were stored, the rank's step counted twice)
    ranks, twice = steps_once(
        frame.filter(pl.col("type") == "rank").rename({"_line": "row_no"}),
        lambda line: line,
        keys=("step", "rank"),
    )
    frame = pl.concat(
        [ranks.rename({"row_no": "_line"}), frame.filter(pl.col("type") != "rank")]
    ).sort("_line")
    frame = frame.drop("_line").with_columns(
        pl.when(pl.col("type") == "rank").then(pl.col("rank")).alias("rank"),
    )
    return frame, set_aside + twice


def stage_ranks(table: pl.DataFrame) -> list[tuple[int, ...]]:
    """The rank tuples of the stage rows, ordered by their lowest rank (duplicates across steps
    removed)."""
    found = {
        tuple(sorted(int(x) for x in re.findall(r"\d+", text)))
        for text in table.filter(pl.col("type") == "stage").get_column("index").drop_nulls()
    }
    return sorted((s for s in found if s), key=lambda s: s[0])


def stage_membership(table: pl.DataFrame) -> dict[int, int]:
    """Rank -> pipeline stage: `PP Index` of the rank rows when the file has it, else the
    position of the stage row holding the rank."""
    ranks = table.filter(pl.col("type") == "rank")
    with_index = ranks.drop_nulls(["rank", "pp_index"])
    if with_index.height:
        return dict(
            zip(with_index["rank"].to_list(), with_index["pp_index"].to_list(), strict=True)
        )
    return {rank: stage for stage, group in enumerate(stage_ranks(table)) for rank in group}


def read_cluster_communication(path: Path) -> pl.DataFrame:
    """cluster_communication.json -> comm_ops rows (with rank; Total Op Info skipped)."""
    return read_cluster_communication_rows(path)[0]


_INT64_MAX = 2**63 - 1


def _time_problem(times: Any) -> str | None:
    """Why an op's Communication Time Info cannot make a comm_ops row, or None: its start and
    elapse are needed, and every time given must be a number that fits the store (issue 36
    round seven: a start of 1e300 failed the whole cluster folder, `read_error: OverflowError`,
    every rank's stage and groups lost)."""
    if not isinstance(times, dict):
        return "no Communication Time Info object"
    for key, convert, needed in (
        ("Start Timestamp(us)", us_to_ns, True),
        ("Elapse Time(ms)", ms_to_ns, True),
        ("Wait Time(ms)", ms_to_ns, False),
        ("Transit Time(ms)", ms_to_ns, False),
        ("Synchronization Time(ms)", ms_to_ns, False),
    ):
        value = times.get(key)
        if value is None and not needed:
            continue
        ns = convert(value) if isinstance(value, int | float | str) else None
        if isinstance(value, bool) or ns is None or not 0 <= ns <= _INT64_MAX:
            return f"{key} {str(value)[:30]!r} is no time"
    return None


def read_cluster_communication_rows(path: Path) -> tuple[pl.DataFrame, list[str]]:
    """The rows of read_cluster_communication and one `step S op@group rank R: why` per op left
    out for a time that is missing, no number, negative or past int64."""
    data = load_json_file(path)
    if not isinstance(data, dict):
        raise QuarantineError(INVALID_COMMUNICATION, f"{path.name}: top level is not an object")
    rows = []
    set_aside: list[str] = []
    for group_key, steps in data.items():
        if not isinstance(steps, dict):
            continue
        is_p2p_group = str(group_key).strip().lower() == "p2p"
        for step_key, ops in steps.items():
            match = _STEP_KEY.match(str(step_key))
            if match is None or not isinstance(ops, dict):
                raise QuarantineError(
                    INVALID_COMMUNICATION, f"{path.name}: unexpected step key {step_key!r}"
                )
            step = int(match.group(1)) if match.group(1) else None
            for key, per_rank in ops.items():
                if key == "Total Op Info" or not isinstance(per_rank, dict):
                    continue
                op, _, group_hash = str(key).partition("@")
                for rank, info in per_rank.items():
                    if not str(rank).isdigit() or not isinstance(info, dict):
                        continue
                    why = _time_problem(info.get("Communication Time Info"))
                    if why is not None:
                        set_aside.append(f"{step_key} {key} rank {rank}: {why}")
                        continue
                    rows.append(_op_row(int(rank), step, op, group_hash, is_p2p_group, info))
    schema = {k: v for k, v in SCHEMAS["comm_ops"].items() if k not in ("run_id",)}
    frame = pl.DataFrame(rows, schema=schema, orient="row").sort("rank", "start_ns")
    return frame, set_aside


def _op_row(
    rank: int, step: int | None, op: str, group_hash: str, p2p_group: bool, info: dict[str, Any]
) -> tuple[Any, ...]:
    times = info.get("Communication Time Info") or {}
    return (
        rank,
        step,
        op,
        op_type(op),
        group_hash or None,
        "p2p" if p2p_group else None,
        is_p2p_op(op) or p2p_group,
        None,
        _bytes(info.get("Communication Bandwidth Info") or {}),
        us_to_ns(times.get("Start Timestamp(us)")),
        ms_to_ns(times.get("Elapse Time(ms)")),
        ms_to_ns(times.get("Wait Time(ms)")),
        ms_to_ns(times.get("Transit Time(ms)")),
        ms_to_ns(times.get("Synchronization Time(ms)")),
    )


def _bytes(bandwidth: dict[str, Any]) -> int | None:
    """Transit bytes of an op: RDMA plus SDMA (SDMA already sums the intra-node HCCS/PCIE/SIO
    links; without it, their sum) — the rule communication.py uses for per-rank files."""
    if not isinstance(bandwidth, dict) or not bandwidth:
        return None

    def size(link: str) -> float:
        entry = bandwidth.get(link)
        value = entry.get("Transit Size(MB)") if isinstance(entry, dict) else None
        return float(value) if isinstance(value, int | float) else 0.0

    intra = size("SDMA") if "SDMA" in bandwidth else sum(size(k) for k in ("HCCS", "PCIE", "SIO"))
    return round((size("RDMA") + intra) * _MB)


def groups_of(cluster_dir: Path) -> list[Group]:
    """The communication groups of a cluster folder (empty when there is no group file)."""
    path = Path(cluster_dir) / GROUP_FILE
    return read_communication_group(path) if path.is_file() else []
