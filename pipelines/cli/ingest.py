"""`tracereplay ingest PATH...`: load profiler output into the warehouse."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, add_warehouse_option, shown_path, store_of
from pipelines.cli._json import emit_json

if TYPE_CHECKING:
    from pipelines.store import Session

DESCRIPTION = """\
Find runs under the given files and folders (searched recursively, recognised by content, not by
folder names) and load them into the DuckDB warehouse:

  * torch_npu text exports  (*_ascend_pt/ with profiler_info_N.json and ASCEND_PROFILER_OUTPUT/:
                             trace_view.json, kernel_details.csv, step_trace_time.csv,
                             communication*.json; rank folders under one parent = one run)
  * torch_npu SQLite export (ascend_pytorch_profiler_N.db)
  * PyTorch Kineto traces   (*.json / *.json.gz with traceEvents; one folder = one run)
  * msprof-analyze output   (cluster_analysis_output/), topology files (profiler_metadata.json,
                             communication_group.json)
  * operator-latency tables (Vidur attention.csv / mlp.csv, generic tokens/prefix/time CSV or
                             Parquet: docs/latency_tables.md), stored in latency_points

Runs whose host lanes carry chunk markers (chunk[req=..,k=..,vs=..], see docs/tau_k.md) are
segmented into the chunks table right away (`tracereplay chunks` does it again with other rules;
--no-chunks skips it).

One origin, one current run (docs/run_identity.md): a run is identified by the folder that
groups its ranks. Re-ingesting the same bytes changes nothing ("unchanged": files are hashed
before anything is parsed; new --tag values are merged in). New bytes at a known origin (a
re-export, an edited CSV) replace the stored run in one transaction ("replaced", with the old
run id); tags given earlier and the chunk rule of `tracereplay chunks` carry over. Giving one
rank folder of an ingested run refreshes that run instead of adding a second one. --prune also
removes stored runs under the given folders that they no longer hold.

Each run's line counts what was read: events (the complete events of the trace, a Kineto trace's
whole-capture span and CUPTI `overhead` events left out, or the db's rows with a time; the overlap
lanes derived for a Kineto trace or a db, which has none of its own, are not counted), kernels
(kernel_details rows, or the trace's / db's device tasks) and comm_ops.

Inputs that cannot be read are quarantined with a reason as they are met (listed on stderr and in
the quarantine table); the other inputs still load. Rows with a bad value (a NaN duration, an
event without a name) are dropped and counted per run and reason ("dropped"). The warehouse is
locked only while a run is written; when another process holds it, ingest waits (--wait).

Disk: a trace_view.json of 64 MB or more is copied, as two halves parsed side by side on two
cores, into a spill folder ($TRACEREPLAY_SPILL_DIR, else the system temp folder), where a trace
that streams under --max-memory keeps its rows too; both are removed once the run is written
(where the copy cannot be written, the file is read whole on one core).

Exit status: 0 all loaded, 2 something was quarantined, the warehouse could not be used or the
arguments were bad."""


EPILOG = """\
quarantine reasons: not_found, not_profiler_output, unrecognised_input, empty_file, not_json,
  truncated_json, invalid_json, invalid_trace, empty_trace, no_lanes, csv_parse_error,
  missing_columns, excel_mangled_number, unparsable_rows, invalid_communication,
  unparsable_rank, unknown_rank, duplicate_rank, corrupt_db, missing_tables, not_gzip,
  not_kineto, no_device_events, unsupported_device, not_a_file, too_large, read_error,
  removed_during_ingest, unreadable_table (plus
  reader-specific codes of the db/Kineto/cluster readers); invalid_event / invalid_rows: some
  entries of a file set aside (positions in the detail), the rest loaded; repaired_rows: some
  entries loaded after a repair the detail names
dropped rows (a bad value drops its row, counted per run in runs.dropped_rows):
  missing_timestamp, unparsable_timestamp, timestamp_out_of_range, missing_duration,
  unparsable_duration, non_finite_duration, negative_duration, duration_out_of_range,
  invalid_step, unparsable_wait, invalid_event, duplicate_key, duplicate_row (an exact copy of
  an earlier device row: counted once), too_large (a trace_view.json event whose name is a
  string past 16 MiB, in a file too large to read whole) (docs/ingest_rules.md)

example: tracereplay ingest ~/prof/job_42 --tag model=qwen3-8b --tag schedule=vpp --json"""


MAX_TAG_COUNT = 2**31 - 1  # the largest INTEGER a count fact (tp, pp, ...) is stored in


def _parse_tags(raw: list[str]) -> dict[str, str]:
    from pipelines.ingest.assemble import RUN_INT_KEYS  # imported on use: `--help` stays fast

    tags = {}
    for item in raw:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--tag expects key=value, got {item!r}")
        key, value = key.strip(), value.strip()
        if not value:  # `model=` stored an empty model name
            raise ValueError(f"--tag {key}=: an empty value; give {key}=VALUE")
        if tags.get(key, value) != value:  # the last one won without a word
            raise ValueError(f"--tag {key} is given twice: {tags[key]!r} and {value!r}")
        # a count fact (pp, chunk_size, ...) that is no whole number >= 1 was dropped without a
        # word (`pp=nan` stored the run with pp NULL): refused like any bad argument
        # (isdecimal: '²' is a digit int() refuses; past 2^31 - 1 the INTEGER column overflowed
        # and `--tag tp=99999999999` lost a latency table: issue 36 round five)
        if key in RUN_INT_KEYS and not (value.isdecimal() and 1 <= int(value) <= MAX_TAG_COUNT):
            most = f"(at most {MAX_TAG_COUNT})"
            raise ValueError(f"--tag {key}={value!r}: {key} must be a whole number >= 1 {most}")
        tags[key] = value
    return tags


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="load profiler output (Ascend text/db, Kineto, msprof-analyze) into the warehouse",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to ingest")
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.add_argument(
        "--tag",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set or override a run fact (model, schedule, chunk_size, seq_len, tp, pp, vp) or "
        "any other tag; repeatable",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument(
        "--prune",
        action="store_true",
        help="remove stored runs whose origin lies under a given folder but that the folder "
        "no longer holds",
    )
    parser.add_argument(
        "--no-chunks",
        action="store_true",
        help="do not segment the ingested runs into chunks (tau_k) after loading",
    )
    parser.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="memory budget of one run's data, e.g. 2GiB or 700MB: a trace or table whose"
        " in-memory read would exceed it streams through an on-disk spill, one value past an"
        " eighth of it is set aside as too_large; the interpreter and its libraries (~230 MB)"
        " come on top (a 300 MB trace peaked at 547 MB under 512MB; docs/bench_ingest.md)"
        " (default $TRACEREPLAY_MAX_MEMORY, else 2 GiB)",
    )
    parser.set_defaults(func=run)


def _extract_chunks(session: Session, run_ids: list[str]) -> dict[str, int]:
    """Chunks found per (re)written run; each run's stored chunk rule is applied. A run with no
    chunk marker and no stored rule of its own gets 0 without being segmented (its rows were
    just written, so it has no stale chunk rows): segmenting it found nothing at a cost that
    grew with the trace (issue 37: 4.1 s of a 500 MB ingest)."""
    from pipelines.analysis.chunks.chunk_store import extract_chunks, stored_rules
    from pipelines.store import queries

    if not run_ids:
        return {}
    rules = stored_rules(session.con, run_ids)
    slices = session.runs_relation("slices", run_ids)
    marked = set(queries.runs_with_markers_in(session.con, [slices]))
    wanted = [r for r in run_ids if r in marked or rules.get(r)]
    found = {r.run_id: r.chunks for r in extract_chunks(session, wanted).runs} if wanted else {}
    return dict.fromkeys(run_ids, 0) | found


def _stored_chunks(session: Session, run_ids: list[str]) -> dict[str, int]:
    if not run_ids:
        return {}
    from pipelines.store import queries

    rows = queries.chunk_counts(session.con, run_ids)
    return dict.fromkeys(run_ids, 0) | rows


def _line(r, chunks: int | None) -> str:
    dropped = sum(r.dropped_rows.values())
    parts = [r.run_id, r.status, f"source={r.source}", f"ranks={r.ranks}"]
    parts += [f"events={r.events}", f"kernels={r.rows.get('kernels', 0)}"]
    parts.append(f"comm_ops={r.rows.get('comm_ops', 0)}")
    if chunks is not None:
        parts.append(f"chunks={chunks}")
    if dropped:
        detail = ",".join(f"{k}:{v}" for k, v in sorted(r.dropped_rows.items()))
        parts.append(f"dropped={dropped} ({detail})")
    if r.quarantined:
        parts.append(f"quarantined={len(r.quarantined)}")
    if r.replaced:
        parts.append("replaces " + ",".join(r.replaced))
    if r.duplicate_of:
        parts.append(f"duplicate of {r.duplicate_of} (same bytes: counted once)")
    return "  ".join(parts)


def run(args: argparse.Namespace) -> int:
    try:
        tags = _parse_tags(args.tag)
    except ValueError as exc:
        print(f"tracereplay ingest: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    from pipelines import memory_budget

    before = os.environ.get(memory_budget.ENV_MAX_MEMORY)
    if args.max_memory is not None:
        try:
            os.environ[memory_budget.ENV_MAX_MEMORY] = str(
                memory_budget.parse_size(args.max_memory)
            )
        except ValueError as exc:
            print(f"tracereplay ingest: --max-memory: {exc}", file=sys.stderr)
            return ExitCode.BAD_INPUT
    try:
        return _ingest(args, tags)
    finally:
        # --max-memory is this call's budget: a later call of pipelines.cli.main in the same
        # process (a test, a notebook) ran under it too (issue 36 round six)
        if before is None:
            os.environ.pop(memory_budget.ENV_MAX_MEMORY, None)
        else:
            os.environ[memory_budget.ENV_MAX_MEMORY] = before


def _ingest(args: argparse.Namespace, tags: dict[str, str]) -> int:
    """`run` once the tags and the budget are set."""
    from pipelines.ingest.frames import printable
    from pipelines.ingest.load import ingest_paths

    # a mistyped path is a bad argument (one line, exit 2), not an input to quarantine: a
    # quarantine row of it would warn in every later `check` (issue 35 item 5)
    missing = [p for p in args.paths if not os.path.lexists(p)]
    if missing:
        shown = ", ".join(
            shown_path(p) if p.strip() else repr(p) + " (an empty PATH)" for p in missing
        )
        print(f"tracereplay ingest: no such file or folder: {shown}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    store = store_of(args)
    store.check()  # refuse a path that cannot hold a warehouse before any work
    report = ingest_paths(
        args.paths,
        store,
        tags=tags,
        progress=not (args.json or args.no_progress),
        prune=args.prune,
    )
    chunks = {}
    warnings: list[str] = []
    changed = report.changed_run_ids
    checked = changed + report.changed_table_ids  # what the sanity checks judge at once
    if (report.runs and not args.no_chunks) or checked:
        # one session for what follows the write (a lake's open scans its files and lists
        # every run's folder: three opens here cost three times that; docs/lake.md)
        with store.open_runs() as session:
            if not args.no_chunks:
                chunks = _extract_chunks(session, changed)
                kept = [r.run_id for r in report.runs if r.run_id not in chunks]
                stored = _stored_chunks(session, kept)
                # a run written, then stopped before its chunks (Ctrl-C, SIGTERM, a kill) is
                # `unchanged` at the next ingest: one with chunk markers and no chunk row is
                # segmented again (issue 36 round seven: its chunks were missing for good)
                chunks |= stored | _extract_chunks(session, [r for r, n in stored.items() if not n])
            if checked:
                from pipelines.quality.sanity import sanity_warnings
                from pipelines.store.insert import memory_limited

                # under the budget's DuckDB limit: with DuckDB's default (80 % of RAM) the
                # checks' window over a marked 4 GB run's slices took the ingest to 1.8 GB
                with memory_limited(session.con):
                    warnings = sanity_warnings(session.con, checked)
                for line in warnings:
                    print(f"tracereplay ingest: warning: {line}", file=sys.stderr)
    for item in report.quarantined:
        print(item.message(), file=sys.stderr)
    for path, why in report.skipped:
        print(printable(f"skipped {path}: {why}"), file=sys.stderr)
    if args.json:
        out = report.as_json()
        for run_json in out["runs"]:
            run_json["chunks"] = chunks.get(run_json["run_id"])
        out["warnings"] = warnings  # the sanity checks' lines (a partial run, impossible data)
        emit_json(out, indent=2)
    else:
        for r in report.runs:
            print(_line(r, chunks.get(r.run_id)))
        for table in report.tables:
            print(printable(table.line()))
        statuses = [r.status for r in report.runs]
        counts = ", ".join(
            f"{statuses.count(s)} {s}"
            for s in ("loaded", "replaced", "unchanged", "retagged")
            if statuses.count(s)
        )
        print(
            f"{len(report.runs)} runs ({counts or 'none'}), {len(report.quarantined)} inputs"
            f" quarantined, {len(report.skipped)} skipped, {len(report.ignored)} by-products"
            " ignored"
            + (f", {len(report.pruned)} pruned" if report.pruned else "")
            + (f", {len(report.tables)} latency tables" if report.tables else "")
        )
        if not report.runs and not report.quarantined and not report.tables:
            print("nothing ingested: give a profiler folder (*_ascend_pt, Kineto traces, ...)")
    return ExitCode.OK if report.ok else ExitCode.BAD_INPUT
