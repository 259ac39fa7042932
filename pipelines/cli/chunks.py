"""`tracereplay chunks`: segment ingested runs into chunks (tau_k) and store them."""

from __future__ import annotations

import argparse
import sys

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, add_warehouse_option, number, one_run, store_of
from pipelines.cli._json import emit_json

DESCRIPTION = """\
Segment every ingested run (or the --run ones) into chunks from its host-side chunk markers
(`chunk[req=<id>,k=<k>,vs=<stage>,tokens=<c>,prefix=<p>]` ranges, docs/tau_k.md) and replace its
rows of the warehouse's `chunks` table; running it twice changes nothing. Runs written by the
simulator (`tracereplay replay`) keep their exact chunks.

Rules: --profiler-steps (one chunk per ProfilerStep#N window) or --marker-regex R (named groups
req and k required; vs, tokens, prefix optional) is stored with each run it segmented
(`runs.segmentation`) and re-applied whenever the run is segmented without a rule: by `chunks`
without a rule option and by `ingest`; --default-markers goes back to the chunk[...] markers
and clears it.
A --marker-regex that does not compile or lacks req/k changes nothing. A non-default rule that
matches no marker in a run, or runs past --match-timeout seconds on the run's slice names
(catastrophic backtracking), leaves that run's stored chunks and rule as they were ("kept").

Prints, per run, the chunks found, the markers (and those with no device work), the run's device
time (`device`: the union of its device work, summed over ranks; '-' for a run of kernel rows only,
nothing to segment), the device time no chunk claimed (`unassigned`, and its `share`) and the
run's rule; ids cut to a unique prefix (`--json` has them whole).
Exit status: 0 ok (a run --profiler-steps finds no ProfilerStep in is kept and named, not an error);
2 unknown run, no warehouse, an unusable rule (a marker regex that matches nothing included)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "chunks",
        help="segment ingested runs into chunks (tau_k) and store them in the warehouse",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--run",
        action="append",
        default=None,
        metavar="RUN_ID",
        help="only this run (repeatable; default: every ingested run)",
    )
    parser.add_argument(
        "--marker-regex",
        default=None,
        metavar="REGEX",
        help="chunk-marker rule: a regex with named groups req, k and optionally vs, tokens, "
        "prefix (default: each run's stored rule, else the chunk[...] convention)",
    )
    parser.add_argument(
        "--profiler-steps",
        action="store_true",
        help="rule for traces without chunk markers: each ProfilerStep#N window is one chunk "
        "(k renumbered from 0 per rank)",
    )
    parser.add_argument(
        "--default-markers",
        action="store_true",
        help="the chunk[...] markers, also for runs that store another rule (clears it)",
    )
    parser.add_argument(
        "--match-timeout",
        type=number(float, above=0, what="a number of seconds"),
        default=None,
        metavar="SECONDS",
        help="time bound per run for matching a --marker-regex (or stored regex) against the "
        "run's host slice names (default: 5)",
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


def format_report(frame) -> str:
    """The table of a ChunkReport frame, within the terminal's width (ids cut to a unique
    prefix, as `runs` prints them). A run without device slices (kernel rows only, nothing to
    segment) shows '-' for its device and unassigned time, not 0."""
    from pipelines.analysis.chunks.chunk_store import describe_rule
    from pipelines.cli._format import duration, short_ids

    headers = ("run", "chunks", "markers", "empty", "device", "unassigned", "share")
    ids = short_ids(frame["run_id"].to_list()) if frame.height else {}
    rows = []
    for r in frame.iter_rows(named=True):
        busy = r["device_busy_ns"]
        fraction = r["unassigned_fraction"]
        rows.append(
            (
                ids[r["run_id"]],
                r["chunks"],
                r["markers"],
                r["empty_markers"],
                duration(busy) if busy else "-",
                duration(r["unassigned_ns"]) if busy else "-",
                "-" if fraction is None else f"{100 * fraction:.1f} %",
                describe_rule(r["segmentation"]),
            )
        )
    # fixed columns, the rule last and whole (a --marker-regex is printed as given, however long)
    header = (*headers, "rule")
    cells = [tuple(str(c) for c in row) for row in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(header)]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if 0 < i < len(widths) - 1 else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()

    return "\n".join([line(header), *(line(row) for row in cells)])


def _summary(report, profiler_steps: bool) -> str:
    """The line under the table: counts, and what to do when runs carry no chunk markers."""
    from pipelines.cli._format import wrapped

    no_markers = sum(1 for r in report.runs if r.markers == 0)
    no_device = sum(1 for r in report.runs if not r.device_busy_ns)
    text = f"{report.total_chunks} chunks from {len(report.runs)} runs"
    if no_markers:
        text += f"; {no_markers} runs without chunk markers"
        if not profiler_steps and any(r.device_busy_ns and not r.markers for r in report.runs):
            text += " (`tracereplay chunks --profiler-steps` cuts one chunk per ProfilerStep)"
    if no_device:
        text += f"; {no_device} runs without device slices to segment ('-': kernel rows only)"
    if report.kept:
        text += f"; {len(report.kept)} runs kept as they were"
    text += "; ids cut to a unique prefix (whole in --json)"
    return wrapped(text, "  ")


def run(args: argparse.Namespace) -> int:
    from pipelines.analysis.chunks.chunk_store import describe_rule, extract_chunks
    from pipelines.analysis.chunks.segment import (
        DEFAULT_MARKER_REGEX,
        PROFILER_STEP_REGEX,
        MarkerRuleError,
        compile_marker_regex,
    )

    given = [
        flag
        for flag, on in (
            ("--profiler-steps", args.profiler_steps),
            ("--marker-regex", args.marker_regex is not None),
            ("--default-markers", args.default_markers),
        )
        if on
    ]
    if len(given) > 1:
        print(f"tracereplay chunks: {' and '.join(given)} exclude each other", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.match_timeout is not None and not args.match_timeout > 0:
        print("tracereplay chunks: --match-timeout must be a positive number", file=sys.stderr)
        return ExitCode.BAD_INPUT
    regex = args.marker_regex
    if args.profiler_steps:
        regex = PROFILER_STEP_REGEX
    elif args.default_markers:
        regex = DEFAULT_MARKER_REGEX
    try:
        if regex is not None:
            compile_marker_regex(regex)  # before opening the warehouse
    except MarkerRuleError as exc:
        print(f"tracereplay chunks: --marker-regex: {exc}; nothing changed", file=sys.stderr)
        return ExitCode.BAD_INPUT
    store = store_of(args)
    path = store.location
    if not store.exists():
        print(f"tracereplay chunks: no warehouse at {path}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    con = store.open()
    try:
        runs = [one_run(con, text, "--run") for text in args.run] if args.run else None
    except ValueError as exc:
        con.close()
        print(f"tracereplay chunks: {exc}; nothing changed", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        report = extract_chunks(
            con,
            runs,
            regex,
            renumber=args.profiler_steps,
            match_timeout_s=args.match_timeout,
        )
    except MarkerRuleError as exc:
        print(f"tracereplay chunks: {exc}; nothing changed", file=sys.stderr)
        return ExitCode.BAD_INPUT
    finally:
        con.close()
    for run_id in report.unknown:
        print(f"tracereplay chunks: no run {run_id!r} in {path}", file=sys.stderr)
    for run_id, why in report.skipped:
        print(f"skipped {run_id}: {why}", file=sys.stderr)
    for kept in report.kept:
        print(
            f"kept {kept.run_id}: {kept.reason}; its {kept.stored_chunks} stored chunks and its "
            f"rule ({describe_rule(kept.segmentation)}) are unchanged",
            file=sys.stderr,
        )
    if args.json:
        emit_json(report.as_json(), indent=2)
    elif report.runs:
        print(format_report(report.frame()))
        print("\n" + _summary(report, args.profiler_steps))
    elif not report.kept:
        print("no ingested runs to segment")
    # a run the rule matched nothing in (no ProfilerStep under --profiler-steps) is reported and
    # kept, not an error; a rule that could not be used (time bound) or an unknown run is
    failed = any(k.rule_failed for k in report.kept)
    return ExitCode.BAD_INPUT if report.unknown or failed else ExitCode.OK
