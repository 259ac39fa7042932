"""`tracereplay validate DIR`: measured workload traces against their replays under CPP and VPP."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, warehouse_file
from pipelines.cli._json import json_text

DESCRIPTION = """\
Ingest the traces under DIR (for example the folders `tracereplay workload` wrote, one run per
folder), fit tau_k per run and virtual stage, replay each run's measured tau under CPP and VPP
(tabulated cost, free transfers, the run's measured host time per stage call charged on every
call; nothing stored) and print per run: the fit verdicts and lowest R2 of the wall-clock tau
and of the chunks' on-CPU time (written by `tracereplay workload`), the ranks' CPU share
(on-CPU / wall: below 100% other jobs took the rest), the host time per call; then measured
TTFT (mean over requests, t interval) and bubble, and the replayed TTFT and bubble under each
schedule with the relative error against measurement for the schedule the run was measured
under, replayed on busy time alone and with the host time per call (docs/workload.md, "Replay
accuracy"). Bubble (with host time) = 1 - (busy + host) / (ranks x makespan). A DCPP run is
replayed on its own chunk sequence as well, and its steps per request are shown beside those
the simulator's DCPP rule gives on its measured stage-0 cost. Last, per run, the window ratio
with a t interval over the passes: under VPP the fold-back identity tau_{k-1} + tau_{k+1} =
2 tau_k measured (rank 0's work per window over rank 1's). Uses a throw-away warehouse unless
--warehouse is given.
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
        "--warehouse",
        metavar="FILE",
        type=warehouse_file,
        help="keep the ingested runs in this DuckDB file",
    )
    add_json_option(parser)
    parser.set_defaults(func=run)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _r2(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _verdicts(labels: list[str]) -> str:
    return ",".join(sorted(set(labels))) or "-"


def format_rows(rows: list[dict]) -> str:
    """Two tables: the fits of each run (wall clock and on-CPU), then measured vs replayed."""
    from pipelines.cli._format import duration, render_table

    fits, replays = [], []
    for r in rows:
        name = r["run_id"].rsplit("-", 1)[0]  # the run's folder name, its hash left off
        share = r.get("cpu_share")
        fits.append(
            (
                name,
                str(r["requests"]),
                _verdicts(r["verdicts"]),
                _r2(r["r2_min"]),
                _verdicts(r["cpu_verdicts"]),
                _r2(r["cpu_r2_min"]),
                "-" if share is None else f"{100 * share:.0f}%",
                duration(r["host_call_ns"]),
            )
        )
        lo, hi = r["measured_ttft_ci_ns"]
        for sched, rep in r["replays"].items():
            own = sched == r["schedule"]
            replays.append(
                (
                    name,
                    sched,
                    duration(r["measured_ttft_ns"]) if own else "",
                    f"{duration(lo)} - {duration(hi)}" if own else "",
                    duration(rep["ttft_busy_only_ns"]),
                    _pct(rep.get("ttft_busy_only_rel_err")),
                    duration(rep["ttft_ns"]),
                    _pct(rep.get("ttft_rel_err")),
                    f"{100 * r['measured_bubble']:.1f}%" if own else "",
                    f"{100 * rep['bubble']:.1f}%",
                    _pct(rep.get("bubble_rel_err")),
                )
            )
    fit_headers = (
        *("run", "n req", "wall fit", "R2 min", "on-CPU fit", "R2 min", "CPU share"),
        "host/call",
    )
    replay_headers = (
        *("run", "replay", "TTFT meas", "95% CI", "busy only", "err"),
        *("+host", "err", "bubble meas", "bubble repl", "err"),
    )
    windows = [
        (
            r["run_id"].rsplit("-", 1)[0],
            r["schedule"] or "?",
            f"{r['steps']:.1f}" if r.get("steps") is not None else "-",
            str(r["rule_steps"]) if r.get("rule_steps") is not None else "-",
            _window_kind(r.get("window_ratio")),
            _ratio(r.get("window_ratio")),
            _ratio(r.get("window_ratio_on_cpu")),
        )
        for r in rows
    ]
    window_headers = (
        *("run", "sched", "steps/req", "sim rule"),
        *("window ratio", "wall mean [95% CI]", "on-CPU mean [95% CI]"),
    )
    return (
        render_table(fit_headers, fits, right=(1, 3, 5, 6, 7))
        + "\n\n"
        + render_table(replay_headers, replays, right=(2, 3, 4, 5, 6, 7, 8, 9, 10))
        + "\n\n"
        + render_table(window_headers, windows, right=(2, 3))
        + "\nwindow ratio: rank 0's work over rank 1's per pipeline window; fold-back (VPP) "
        "(t0[k+1] + t3[k-1]) / (t1[k] + t2[k]),\n"
        "1 when tau_{k-1} + tau_{k+1} = 2 tau_k; one stage per rank t0[k+1] / t1[k]; "
        "t interval over the passes"
    )


def _window_kind(w: dict | None) -> str:
    return "-" if w is None else {"fold_back": "fold-back", "one_stage": "t0/t1"}[w["kind"]]


def _ratio(w: dict | None) -> str:
    if w is None:
        return "-"
    if w["low"] is None:
        return f"{w['mean']:.3f} (n={w['n_requests']})"
    return f"{w['mean']:.3f} [{w['low']:.3f}, {w['high']:.3f}] n={w['n_requests']}"


def run(args: argparse.Namespace) -> int:
    from pipelines.store import open_store
    from pipelines.workload.validation import validate

    with tempfile.TemporaryDirectory() as tmp:
        path = args.warehouse or str(Path(tmp) / "validate.duckdb")
        with open_store(path).session() as con:
            rows = validate(args.paths, con)
    if not rows:
        print(
            "tracereplay validate: no run with chunk markers under "
            f"{' '.join(map(str, args.paths))}; write some with `tracereplay workload`",
            file=sys.stderr,
        )
        return ExitCode.BAD_INPUT
    print(json_text(rows, indent=2) if args.json else format_rows(rows))
    return ExitCode.OK
