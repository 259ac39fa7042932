"""Chunk extraction into the warehouse: segment each ingested run's slices, store its chunks.

One function, `extract_chunks`, used by `tracereplay chunks`, the demo and the Dagster assets:
for every ingested run (real, or simulated and then ingested through its profiler files) it reads
the run's host and device slices, segments them with `segment_chunks` (host-side chunk markers,
docs/tau_k.md) and replaces that run's rows of the `chunks` table in one transaction, so running
it twice leaves the table as it was. Runs written straight by the simulator (source 'sim', e.g.
`tracereplay replay` output) carry their exact chunks and are left alone.

The rule a run was segmented with is stored with the run (`runs.segmentation`, JSON; NULL: the
default chunk[...] markers) when it is given explicitly, and a call without a rule (ingest,
the demo, replay) re-applies each run's stored rule, so chunks made by ProfilerStep windows or a
custom marker regex come back when the run is re-ingested. A non-default rule that matches no
marker in a run, or cannot be used on it (time bound, non-integer k), leaves that run's stored
chunks and rule as they were (`ChunkReport.kept`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb
import polars as pl

from pipelines.analysis.chunks.segment import (
    DEFAULT_MARKER_REGEX,
    PROFILER_STEP_REGEX,
    Link,
    MarkerRuleError,
    compile_marker_regex,
    run_totals,
)
from pipelines.analysis.chunks.segment_batches import segment_stored_run
from pipelines.ingest.steps.launch_links import LINK_KEYS, LIST_KEYS
from pipelines.store import Session, queries
from pipelines.store.insert import release_buffers
from pipelines.vocabulary.device_work import COMM_LINK_KEY

SIMULATED_SOURCE = "sim"
SEGMENT_LANES = ("host", "compute", "comm")
"""Lanes segmentation reads: markers (host), kernels (compute) and HCCL ops (comm, whose
connection ids tell a collective's transfers on the compute lane apart from kernels)."""


SEGMENTATION_COLUMN = "segmentation"
"""Column of `runs` holding the run's segmentation rule as JSON (NULL: the default markers)."""


@dataclass(frozen=True)
class SegmentationRule:
    """A chunk-marker rule: the regex host slice names must match, and whether k is renumbered
    0.. in start order. Stored as JSON in `runs.segmentation` (None for the default rule):
    {"rule": "profiler_steps"} or {"rule": "marker_regex", "regex": "...", "renumber": false}."""

    marker_regex: str = DEFAULT_MARKER_REGEX
    renumber: bool = False

    @property
    def is_default(self) -> bool:
        return self.marker_regex == DEFAULT_MARKER_REGEX and not self.renumber

    @property
    def is_profiler_steps(self) -> bool:
        return self.marker_regex == PROFILER_STEP_REGEX and self.renumber

    def as_dict(self) -> dict[str, Any] | None:
        if self.is_default:
            return None
        if self.is_profiler_steps:
            return {"rule": "profiler_steps"}
        return {"rule": "marker_regex", "regex": self.marker_regex, "renumber": self.renumber}

    def to_json(self) -> str | None:
        rule = self.as_dict()
        return None if rule is None else json.dumps(rule)

    def describe(self) -> str:
        if self.is_default:
            return "chunk markers"
        if self.is_profiler_steps:
            return "profiler steps"
        return f"regex {self.marker_regex}" + (" (renumbered)" if self.renumber else "")

    @classmethod
    def from_json(cls, text: str | None) -> SegmentationRule:
        """The rule stored as `text` (None: the default). Raises MarkerRuleError."""
        if text is None:
            return cls()
        try:
            rule = json.loads(text)
            if rule["rule"] == "profiler_steps":
                return cls(PROFILER_STEP_REGEX, renumber=True)
            if rule["rule"] == "marker_regex":
                return cls(str(rule["regex"]), renumber=bool(rule.get("renumber", False)))
        except (ValueError, TypeError, KeyError):
            pass
        raise MarkerRuleError(f"stored segmentation rule {text!r} is not one this version reads")


def describe_rule(text: str | None) -> str:
    """A stored rule (JSON or None) in words, e.g. "chunk markers", "profiler steps"."""
    try:
        return SegmentationRule.from_json(text).describe()
    except MarkerRuleError:
        return f"unreadable {text}"


@dataclass(frozen=True)
class RunChunks:
    """What extraction found in one run, and the rule it used (now stored with the run)."""

    run_id: str
    chunks: int
    markers: int
    empty_markers: int
    device_busy_ns: int
    unassigned_ns: int
    unassigned_fraction: float | None
    segmentation: str | None = None  # the rule as JSON, None: the default chunk markers


@dataclass(frozen=True)
class KeptRun:
    """A run the rule could not segment: its stored chunks and rule are as they were."""

    run_id: str
    reason: str
    stored_chunks: int
    segmentation: str | None  # the rule stored with the run (unchanged)
    rule_failed: bool = True
    """The rule itself could not be used on the run (time bound, non-integer k); False when it
    simply matched nothing there (a run without ProfilerStep windows under --profiler-steps)."""


@dataclass
class ChunkReport:
    """Outcome of one `extract_chunks` call: per run, and the run ids it could not use."""

    runs: list[RunChunks] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # asked for, not in the warehouse
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (run_id, why)
    kept: list[KeptRun] = field(default_factory=list)  # rule matched nothing or failed

    @property
    def total_chunks(self) -> int:
        return sum(r.chunks for r in self.runs)

    def frame(self) -> pl.DataFrame:
        """One row per extracted run."""
        schema = {
            "run_id": pl.String,
            "chunks": pl.Int64,
            "markers": pl.Int64,
            "empty_markers": pl.Int64,
            "device_busy_ns": pl.Int64,
            "unassigned_ns": pl.Int64,
            "unassigned_fraction": pl.Float64,
            "segmentation": pl.String,
        }
        return pl.DataFrame([asdict(r) for r in self.runs], schema=schema)

    def as_json(self) -> dict[str, Any]:
        def rule(text: str | None) -> Any:
            try:
                return None if text is None else json.loads(text)
            except ValueError:
                return text

        return {
            "runs": [{**asdict(r), "segmentation": rule(r.segmentation)} for r in self.runs],
            "unknown": self.unknown,
            "skipped": [{"run_id": r, "reason": why} for r, why in self.skipped],
            "kept": [{**asdict(k), "segmentation": rule(k.segmentation)} for k in self.kept],
            "total_chunks": self.total_chunks,
        }


def _select_runs(
    con: duckdb.DuckDBPyConnection, run_ids: list[str] | None, report: ChunkReport
) -> list[str]:
    rows = queries.run_sources(con)
    source = dict(rows)
    if run_ids is None:
        return [r for r, s in rows if s != SIMULATED_SOURCE]
    chosen = []
    for run_id in dict.fromkeys(run_ids):
        if run_id not in source:
            report.unknown.append(run_id)
        elif source[run_id] == SIMULATED_SOURCE:
            report.skipped.append((run_id, "written by the simulator: its chunks are exact"))
        else:
            chosen.append(run_id)
    return chosen


def stored_rules(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> dict[str, str | None]:
    """The segmentation rule (JSON or None) stored with each of `run_ids` that exists."""
    if SEGMENTATION_COLUMN not in queries.table_columns(con, "runs"):
        return dict.fromkeys(run_ids)  # a warehouse from before the column: all default
    rules = queries.run_columns(con, run_ids, [SEGMENTATION_COLUMN])
    return dict(rules.iter_rows())


def extract_chunks(
    session: Session,
    run_ids: list[str] | None = None,
    marker_regex: str | None = None,
    *,
    include_comm: bool = False,
    link: Link = "auto",
    renumber: bool = False,
    match_timeout_s: float | None = None,
) -> ChunkReport:
    """Segment the chunks of `run_ids` (default: every ingested run not written by the simulator)
    from their slices and replace their rows in the `chunks` table.

    marker_regex, renumber: the rule. Given (a regex, or renumber=True), it is checked first
    (`compile_marker_regex`: MarkerRuleError before anything is changed), applied to every run
    and stored with each run it segmented (`runs.segmentation`; the default chunk[...] rule
    stores NULL). Not given (marker_regex None, renumber False): each run's stored rule, the
    default markers when none is stored. include_comm, link, match_timeout_s: as in
    `segment_chunks`. With the default rule a run without markers gets no chunk rows (stale ones
    are removed) and all its device time is unassigned; with any other rule such a run, and one
    where the rule fails (time bound, non-integer k), keeps its stored chunks and rule and is
    listed in `ChunkReport.kept`.
    """
    explicit = None
    if marker_regex is not None or renumber:
        explicit = SegmentationRule(marker_regex or DEFAULT_MARKER_REGEX, renumber)
        compile_marker_regex(explicit.marker_regex)
    report = ChunkReport()
    chosen = _select_runs(session.con, run_ids, report)
    stored = stored_rules(session.con, chosen)
    for run_id in chosen:
        try:
            rule = explicit or SegmentationRule.from_json(stored[run_id])
            chunks, unassigned = segment_run(
                session.con,
                run_id,
                rule.marker_regex,
                include_comm=include_comm,
                link=link,
                renumber=rule.renumber,
                match_timeout_s=match_timeout_s,
            )
        except MarkerRuleError as exc:
            report.kept.append(_kept(session.con, run_id, str(exc), stored[run_id]))
            continue
        summary = _run_summary(run_id, chunks, unassigned, rule.to_json())
        if summary.markers == 0 and not rule.is_default:
            why = f"the rule ({rule.describe()}) matched no host slice of the run"
            # a ProfilerStep rule that finds no ProfilerStep in one run is that run's fact, not
            # a bad rule; a marker regex that matches nothing is
            report.kept.append(
                _kept(session.con, run_id, why, stored[run_id], rule_failed=not rule.renumber)
            )
            continue
        _replace_chunks(session, run_id, chunks, record=explicit is not None, rule=rule.to_json())
        report.runs.append(summary)
    return report


def _kept(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    why: str,
    rule: str | None,
    rule_failed: bool = True,
) -> KeptRun:
    count = queries.chunk_counts(con, [run_id]).get(run_id, 0)
    return KeptRun(run_id, why, int(count), rule, rule_failed)


TASK_TYPE_KEY = "Task Type"
"""The args key `device_work.work_slices` reads to leave stream waits and DMA copies out."""

SEGMENT_ARGS_KEYS = tuple(
    dict.fromkeys((*LINK_KEYS, *LIST_KEYS.values(), TASK_TYPE_KEY, COMM_LINK_KEY))
)
"""The only args keys segmentation reads (`launch_links.link_ids`, `device_work.work_slices`),
each at the top level with Polars' `json_path_match`."""


def segment_slices(
    con: duckdb.DuckDBPyConnection, run_id: str, host_names: list[str] | None = None
) -> pl.DataFrame:
    """The run's slices on SEGMENT_LANES, only the columns segmentation reads (not run_id, thread,
    step), with args cut in SQL to the keys segmentation reads (`queries.run_slices_args_cut`:
    ~25 % of the args bytes of a marked trace built from the msinsight level1 export; NULL where
    none is present). With `host_names` (the names that can make a marker, `marker_names`), only
    the host slices so named or whose args name a key: the others make no marker and link
    nothing (80 % of a marked level1-built trace's host slices; 78 % of its segmented rows).
    DuckDB's cache of the blocks read is let go afterwards (`insert.release_buffers`).
    The chunks are the same (tests/analysis/test_segment_slices_args.py; docs/bench_ingest.md,
    issue 37 item 1)."""
    frame = queries.run_slices_args_cut(
        con, run_id, SEGMENT_LANES, SEGMENT_ARGS_KEYS, host_names=host_names
    )
    release_buffers(con)
    return frame


def segment_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    marker_regex: str | None = None,
    *,
    include_comm: bool = False,
    link: Link = "auto",
    renumber: bool = False,
    match_timeout_s: float | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(chunks, unassigned) of one stored run, segmented from the lanes segmentation reads;
    nothing is written. Without a rule (marker_regex None, renumber False) the run's stored
    rule. The run is read in batches (`segment_batches.segment_stored_run`: the same result as
    `segment_chunks` over `segment_slices`, in memory that does not grow with the run's slices).
    Raises MarkerRuleError for a rule that cannot be used."""
    if marker_regex is None and not renumber:
        rule = SegmentationRule.from_json(stored_rules(con, [run_id]).get(run_id))
        marker_regex, renumber = rule.marker_regex, rule.renumber
    return segment_stored_run(
        con,
        run_id,
        SEGMENT_ARGS_KEYS,
        marker_regex or DEFAULT_MARKER_REGEX,
        include_comm=include_comm,
        link=link,
        renumber=renumber,
        match_timeout_s=match_timeout_s,
    )


def _replace_chunks(
    session: Session,
    run_id: str,
    chunks: pl.DataFrame,
    *,
    record: bool = False,
    rule: str | None = None,
) -> None:
    """Replace the run's chunk rows; with `record` also set its stored rule to `rule` (JSON,
    None: the default), in the same transaction."""
    # (a store adds the column to a warehouse from before it when it opens it for writing)
    session.replace_run_rows(
        run_id, {"chunks": chunks}, {SEGMENTATION_COLUMN: rule} if record else None
    )


def _run_summary(
    run_id: str, chunks: pl.DataFrame, unassigned: pl.DataFrame, rule: str | None
) -> RunChunks:
    if unassigned.is_empty():
        return RunChunks(run_id, chunks.height, 0, 0, 0, 0, None, rule)
    total = run_totals(unassigned).row(0, named=True)
    busy = int(total["device_busy_ns"])
    return RunChunks(
        run_id=run_id,
        chunks=chunks.height,
        markers=int(total["n_markers"]),
        empty_markers=int(total["n_empty_markers"]),
        device_busy_ns=busy,
        unassigned_ns=int(total["unassigned_ns"]),
        unassigned_fraction=float(total["unassigned_fraction"]) if busy else None,
        segmentation=rule,
    )
