"""`tracereplay dashboards`: chart the selected runs into offline HTML pages and PNGs."""

from __future__ import annotations

import argparse
import sys

from pipelines.cli import ExitCode
from pipelines.cli._common import (
    add_json_option,
    add_warehouse_option,
    output_folder,
    shown_path,
    store_of,
)
from pipelines.cli._format import wrapped
from pipelines.cli._json import emit_json

DESCRIPTION = """\
Write the dashboards of the runs SEL selects (docs/selectors.md; default: every measured run)
as self-contained HTML pages (the Vega JavaScript inline: they open offline) with a PNG of each
chart: tau.html (tau_k per curve: points over repeats, fitted line with its 95% band, verdict
and evidence, residuals), timeline.html (CPP / DCPP / VPP / VPP-pack Gantt of one workload,
bubbles in red), breakdown.html (computing / exposed comm / bubble / free per rank),
schedules.html (per schedule, mean and 95% t interval over repeats), trends.html (metrics over
the nightly runs), replay.html (simulated reruns against measured runs), and index.html with
the selection and the data's freshness. Charts are fed by DuckDB aggregates (docs/dashboards.md).
Exit status 0; 2 when the warehouse is missing or the selector matches nothing."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dashboards",
        help="write offline HTML dashboards and PNGs of the selected runs",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "selector",
        nargs="?",
        default=None,
        metavar="SEL",
        help="run selector, e.g. model=deepseek-v3.1,schedule=cpp|vpp",
    )
    parser.add_argument(
        "--out",
        type=output_folder,
        default=None,
        metavar="DIR",
        help="output folder (default: data/site/ under the working folder)",
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dashboards.site import build_site
    from pipelines import paths
    from pipelines.selectors import SelectorError

    store = store_of(args)
    if not store.exists():
        print(
            f"tracereplay dashboards: no warehouse at {store.location}"
            " (run `tracereplay ingest PATH` or `tracereplay demo`)",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    out = args.out or paths.site_dir()
    con = store.open(read_only=True)
    try:
        report = build_site(con, args.selector, out)
    except SelectorError as exc:
        print(f"tracereplay dashboards: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    finally:
        con.close()
    if args.json:
        emit_json(report.as_dict())
        print()
        return ExitCode.OK
    for page in report.pages:
        print(f"  {page.name:<10} {shown_path(page.path)}  ({len(page.pngs)} PNG)")
    for name, why in report.skipped.items():
        print(wrapped(f"  {name:<10} not charted: {why}", " " * 13))
    if not report.pages:
        print(
            "nothing to chart for these runs: ingest profiler output with a step breakdown or "
            "chunk markers, or run `tracereplay demo`"
        )
    print(
        f"{len(report.run_ids)} run{'' if len(report.run_ids) == 1 else 's'},"
        f" {len(report.pages)} page{'' if len(report.pages) == 1 else 's'}"
        f" in {report.seconds:.1f} s; open {shown_path(report.index)}"
    )
    return ExitCode.OK
