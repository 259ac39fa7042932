"""`tracereplay validate DIR`: measured workload traces against their replays under CPP and VPP."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option

DESCRIPTION = """\
Ingest the traces under DIR (for example the folders `tracereplay workload` wrote, one run per
folder), fit tau_k per run and virtual stage, replay each run's measured tau under CPP and VPP
(tabulated cost, free transfers; nothing stored) and print per run: the fit verdicts and the
lowest R2, measured TTFT and bubble, and the replayed TTFT and bubble under each schedule with
the relative error against measurement for the schedule the run was measured under. Bubble =
1 - sum(tau) / (ranks x makespan). Uses a throw-away warehouse unless --warehouse is given.
Exit status: 0 ok, 2 nothing to validate."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="measured TTFT and bubble of workload traces vs their CPP/VPP replays",
        description=DESCRIPTION,
        epilog="example: tracereplay validate runs/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="DIR", help="trace folders")
    parser.add_argument(
        "--warehouse", metavar="FILE", help="keep the ingested runs in this DuckDB file"
    )
    add_json_option(parser)
    parser.set_defaults(func=run)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def format_rows(rows: list[dict]) -> str:
    from pipelines.cli._format import duration, render_table

    table = []
    for r in rows:
        for sched, rep in r["replays"].items():
            own = sched == r["schedule"]
            table.append(
                (
                    f"{r['schedule']}-{r['attention']}",
                    ",".join(sorted(set(r["verdicts"]))),
                    f"{r['r2_min']:.3f}" if r["r2_min"] is not None else "-",
                    sched,
                    duration(r["measured_ttft_ns"]) if own else "",
                    duration(rep["ttft_ns"]),
                    _pct(rep.get("ttft_rel_err")),
                    f"{100 * r['measured_bubble']:.1f}%" if own else "",
                    f"{100 * rep['bubble']:.1f}%",
                    _pct(rep.get("bubble_rel_err")),
                )
            )
    headers = (
        "run",
        "verdicts",
        "R2 min",
        "replay",
        "TTFT meas",
        "TTFT repl",
        "err",
        "bubble meas",
        "bubble repl",
        "err",
    )
    return render_table(headers, table, right=(2, 4, 5, 6, 7, 8, 9))


def run(args: argparse.Namespace) -> int:
    from pipelines import warehouse
    from pipelines.workload.validation import validate

    with tempfile.TemporaryDirectory() as tmp:
        path = args.warehouse or str(Path(tmp) / "validate.duckdb")
        with warehouse.session(path) as con:
            rows = validate(args.paths, con)
    if not rows:
        print(
            "tracereplay validate: no run with chunk markers under "
            f"{' '.join(map(str, args.paths))}; write some with `tracereplay workload`",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    print(json.dumps(rows, indent=2) if args.json else format_rows(rows))
    return ExitCode.OK
