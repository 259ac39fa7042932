"""`tracereplay chunks`: segment ingested runs into chunks (tau_k) and store them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipelines.cli import EXIT_BAD_INPUT, EXIT_OK
from pipelines.cli._common import add_json_option, add_warehouse_option

DESCRIPTION = """\
Segment every ingested run (or the --run ones) into chunks from its host-side chunk markers
(`chunk[req=<id>,k=<k>,vs=<stage>,tokens=<c>,prefix=<p>]` ranges, docs/tau_k.md) and replace its
rows of the warehouse's `chunks` table; running it twice changes nothing. Runs written by the
simulator (`tracereplay replay`) keep their exact chunks. Prints, per run, the chunks found and
the device time no chunk claimed. Exit status: 0 ok, 2 unknown run or no warehouse."""


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
        "prefix (default: the chunk[...] convention)",
    )
    parser.add_argument(
        "--profiler-steps",
        action="store_true",
        help="rule for traces without chunk markers: each ProfilerStep#N window is one chunk "
        "(k renumbered from 0 per rank)",
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


def format_report(frame) -> str:
    """Fixed-width table of a ChunkReport frame (times in ms)."""
    header = ("run_id", "chunks", "markers", "empty", "device ms", "unassigned ms", "unassigned %")
    rows = [
        (
            r["run_id"],
            str(r["chunks"]),
            str(r["markers"]),
            str(r["empty_markers"]),
            f"{r['device_busy_ns'] / 1e6:.1f}",
            f"{r['unassigned_ns'] / 1e6:.1f}",
            "-" if r["unassigned_fraction"] is None else f"{100 * r['unassigned_fraction']:.1f}",
        )
        for r in frame.iter_rows(named=True)
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def run(args: argparse.Namespace) -> int:
    from pipelines import warehouse
    from pipelines.analysis.chunk_store import extract_chunks
    from pipelines.analysis.segment import PROFILER_STEP_REGEX

    if args.profiler_steps and args.marker_regex:
        print(
            "tracereplay chunks: --profiler-steps and --marker-regex exclude each other",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    regex = PROFILER_STEP_REGEX if args.profiler_steps else args.marker_regex
    path = warehouse.warehouse_path(args.warehouse)
    if not Path(path).exists():
        print(f"tracereplay chunks: no warehouse at {path}", file=sys.stderr)
        return EXIT_BAD_INPUT
    con = warehouse.connect(path)
    try:
        report = extract_chunks(con, args.run, regex, renumber=args.profiler_steps)
    finally:
        con.close()
    for run_id in report.unknown:
        print(f"tracereplay chunks: no run {run_id!r} in {path}", file=sys.stderr)
    for run_id, why in report.skipped:
        print(f"skipped {run_id}: {why}", file=sys.stderr)
    if args.json:
        print(json.dumps(report.as_json(), indent=2))
    elif report.runs:
        print(format_report(report.frame()))
        no_markers = sum(1 for r in report.runs if r.markers == 0)
        print(
            f"\n{report.total_chunks} chunks from {len(report.runs)} runs"
            + (f"; {no_markers} runs without chunk markers" if no_markers else "")
        )
    else:
        print("no ingested runs to segment")
    return EXIT_BAD_INPUT if report.unknown else EXIT_OK
