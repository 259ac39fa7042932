"""`tracereplay check`: run the data-check suites over the warehouse and report every verdict."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipelines.cli import ExitCode
from pipelines.cli._common import (
    add_json_option,
    add_warehouse_option,
    output_file,
    output_folder,
    shown_path,
    store_of,
)
from pipelines.cli._json import emit_json

DESCRIPTION = """\
Run the data-check suites (pipelines/quality/check_catalog.py, docs/quality.md) over the
warehouse, or over the runs SEL selects (docs/selectors.md; replays=yes to include simulated
reruns; without SEL every run is checked, replays and orphaned rows included), the canonical
tables and the marts. Column rules are Great Expectations suites
(pipelines/quality/suites/*.json, GX's built-in expectation types) validated by GX on batches
DuckDB hands over; invariants across tables are DuckDB queries
(sql/quality/<table>/<name>.sql) whose failing counts GX judges.
Prints one line per expectation (table, expectation, severity, result, failing rows, example
rows); --html DIR writes GX's Data Docs validation pages and an index (offline: no script, no
CDN), --junit a JUnit XML file with one test case per expectation. Exit status 0 when every
error-severity expectation holds (warnings are reported), 1 when one fails, 2 for a bad
selector or a missing warehouse."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "check",
        help="run the data checks (GX suites) over the warehouse; exit 1 on an error",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("selector", nargs="?", metavar="SEL", help="which runs (default: all)")
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.add_argument(
        "--html",
        metavar="DIR",
        type=output_folder,
        help="write the GX Data Docs report (offline) to DIR; DIR/index.html is its index",
    )
    parser.add_argument("--junit", metavar="OUT", type=output_file, help="write JUnit XML to OUT")
    parser.add_argument(
        "--failures", action="store_true", help="list only the expectations that fail"
    )
    parser.set_defaults(func=run)


def _write(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def run(args: argparse.Namespace) -> int:
    from pipelines.quality.check_report import (
        as_dict,
        format_failures,
        format_table,
        summary_line,
        to_junit,
    )
    from pipelines.quality.checks import run_checks
    from pipelines.selectors import SelectorError, parse_selector, require_runs

    if args.html and args.junit and Path(args.junit).absolute() == Path(args.html).absolute():
        # the folder was made first, then writing the file there was an IsADirectoryError
        print("tracereplay check: --junit is the --html folder; give another file", file=sys.stderr)
        return ExitCode.BAD_INPUT
    store = store_of(args)
    if not store.exists():
        print(f"tracereplay check: no warehouse at {store.location}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    con = store.open(read_only=True)
    # runs a lake left out of its views for a damaged or missing partition file (named on
    # stderr when the lake was opened): their rows are checked by nothing, so `check` fails
    # (it passed "63 expectations over 0 runs", exit 0, with the only run's kernels gone)
    left_out = sorted(
        {item.key for item in getattr(con, "damaged", ()) if item.table != "quarantine"}
    )
    try:
        run_ids = None
        if args.selector:
            try:
                run_ids = require_runs(con, parse_selector(args.selector))
            except SelectorError as exc:
                print(f"tracereplay check: {exc}", file=sys.stderr)
                return ExitCode.BAD_INPUT
        # the HTML report renders GX's result of every batch: no verdict read back
        report = run_checks(con, run_ids, use_cache=False if args.html else None)
    finally:
        con.close()
    html_index = None
    if args.html:
        from pipelines.quality.data_docs import write_data_docs

        html_index = write_data_docs(report, Path(args.html))
    if args.junit:
        _write(args.junit, to_junit(report))
    if args.json:
        emit_json({**as_dict(report), "damaged_runs_left_out": left_out})
        print()
    else:
        if report.runs_checked == 0:
            print("the warehouse holds no runs: run `tracereplay ingest PATH` first")
        if args.failures and report.ok and not report.warnings:
            print("every expectation holds")
        else:
            print(format_table(report, failures_only=args.failures))
        failures = format_failures(report)
        print("\n" + failures if failures else "")
        print(summary_line(report))
        if left_out:
            print(
                f"{len(left_out)} lake run(s) left out for a damaged file, checked by nothing"
                f" ({', '.join(left_out[:3])}{', ...' if len(left_out) > 3 else ''}):"
                " re-ingest them (the lines above name the folders)"
            )
        for label, value in (("html report", html_index), ("junit", args.junit)):
            if value:
                print(f"{label}: {shown_path(value)}")
    return ExitCode.CHECK_FAILED if report.errors or left_out else ExitCode.OK
