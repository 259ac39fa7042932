"""`tracereplay schedules`: CPP vs DCPP vs VPP per workload, as the VPP paper's Table 2, with the
replayed prediction beside each measured change."""

from __future__ import annotations

import argparse
import math
import sys
import textwrap

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, add_warehouse_option, percent, store_of
from pipelines.cli._json import emit_json
from pipelines.cli._report import table
from pipelines.labels import json_value

DESCRIPTION = """\
For each workload (model, seq_len, chunk_size, tp, pp, hardware) among the runs SEL selects
(docs/selectors.md), every schedule against CPP, part by part (docs/metrics.md: compute, bubble,
exposed comm, total = their sum; rank means, bubble over the run's window as table 2 counts it,
fill and drain included): n, the mean with its 95 % Student-t interval,
the change against CPP (difference of means with Welch's interval; relative change with
compare's interval and test, Welch's t on log values, Holm across the four parts), and the
change the replay of the same CPP runs' tau_k predicts (tracereplay replay; reruns are written
once, with deterministic ids). `vs replay` says `short` where the measured change lies above the
predicted interval by more than --min-effect, `ahead` where below, `~` where within noise
(docs/schedule_comparison.md). Exit status 2 for a bad selector, else 0."""

COLUMNS = [
    ("schedule", "sched"),
    ("part", "part"),
    ("n", "n"),
    ("mean", "mean s ±CI"),
    ("delta", "Δ s ±CI"),
    ("rel", "Δ% vs CPP [CI]"),
    ("verdict", "verdict"),
    ("pred", "replay Δ% [CI]"),
    ("versus", "vs rp"),
]
VERSUS = {"short": "SHORT", "beyond": "ahead", "within_noise": "~", "n/a": "-"}
VERDICT = {"improved": "better", "regressed": "worse", "unchanged": "same", "inconclusive": "?"}
PART_LABEL = {"exposed comm": "exp. comm"}
# "vs rp": the measured change against the replay's prediction


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "schedules",
        help="CPP vs DCPP vs VPP per workload with intervals and the replayed prediction",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.add_argument("selector", nargs="?", default=None, metavar="SEL")
    parser.add_argument(
        "--no-replay",
        action="store_true",
        help="use only reruns already stored; replay nothing (default: replay CPP runs not "
        "yet replayed under the workload's schedules)",
    )
    parser.add_argument(
        "--min-effect",
        type=percent,
        default=1.0,
        metavar="PCT",
        help="smallest relative change worth flagging, percent, 0-1000 (default 1)",
    )
    parser.set_defaults(func=run)


def _seconds(ns: float, signed: bool = False) -> str:
    if not math.isfinite(ns):
        return "-"
    return f"{ns / 1e9:+.3f}" if signed else f"{ns / 1e9:.3f}"


def _half(lo: float, hi: float) -> str:
    return "" if not math.isfinite(lo) else f" ±{(hi - lo) / 2e9:.3f}"


def _pct(value: float, lo: float, hi: float) -> str:
    if not math.isfinite(value):
        return "-"
    text = f"{100 * value:+.1f}"
    return text if not math.isfinite(lo) else f"{text} [{100 * lo:+.1f},{100 * hi:+.1f}]"


def _row(r) -> dict[str, str]:
    row = {
        "schedule": r.schedule,
        "part": PART_LABEL.get(r.part, r.part),
        "n": str(r.n),
        "mean": _seconds(r.mean) + _half(r.mean_lo, r.mean_hi),
    }
    if r.verdict == "baseline":
        return row
    pred = ""
    if r.n_predicted:
        pred = _pct(r.predicted_rel, r.predicted_rel_lo, r.predicted_rel_hi)
    return {
        **row,
        "delta": _seconds(r.delta, signed=True) + _half(r.delta_lo, r.delta_hi),
        "rel": _pct(r.delta_rel, r.delta_rel_lo, r.delta_rel_hi),
        "verdict": VERDICT.get(r.verdict, r.verdict),
        "pred": pred,
        "versus": VERSUS[r.versus_predicted],
    }


def format_report(report) -> str:
    """The text report of a ScheduleReport: one Table 2 per workload."""
    from pipelines.analysis.comparison.schedule_table import workload_label

    lines = []
    if not report.workloads:
        lines.append(
            "no workload with two or more schedules in the selected runs; simulate or ingest "
            "runs of several schedules at one model, seq_len and chunk size"
        )
    for w in report.workloads:
        runs = ", ".join(f"{s} {len(ids)}" for s, ids in w.runs.items())
        lines += [f"{workload_label(w.workload)}: runs {runs}", ""]
        lines.append(table(COLUMNS, [_row(r) for r in w.rows]))
        for note in w.notes:
            lines += textwrap.wrap(f"note: {note}", 118, subsequent_indent="  ")
        lines.append("")
    for workload, r in report.shortfalls:
        text = f"SHORT of the replay: {workload_label(workload)} {r.schedule} {r.part}: {r.reason}"
        lines += textwrap.wrap(text, 118, subsequent_indent="  ")
    if report.workloads:
        legend = (
            f"verdict of Δ%: Welch's t on logs, Holm over the 4 parts, better / worse only when "
            f"significant and beyond ±{report.min_effect:.1%} (same: within it by two one-sided "
            "tests; ?: neither); replay: the workload's n CPP runs' tau_k replayed under each "
            f"schedule, cost {report.cost}; SHORT / ahead: the measured interval lies above / "
            f"below the replay's and they differ by more than {report.min_effect:.1%}"
        )
        lines += textwrap.wrap(legend, 118, subsequent_indent="  ")
    if report.replayed:
        lines.append(f"replayed now: {len(report.replayed)} CPP run(s); reruns stored")
    lines += [f"skipped: {s}" for s in report.skipped]
    if report.untagged_runs:
        from pipelines.analysis.comparison.schedule_table import TAG_HINT

        note = (
            f"* {report.untagged_runs} untagged run(s) (no model fact) left out: runs of unknown "
            f"workloads are never compared with each other; tag repeats alike to compare them: "
            f"{TAG_HINT}"
        )
        lines += textwrap.wrap(note, 118, subsequent_indent="  ")
    return "\n".join(lines).rstrip()


def to_json(report) -> dict:
    return {
        "selector": report.selector,
        "cost": report.cost,
        "min_effect": report.min_effect,
        "replayed": report.replayed,
        "skipped": report.skipped,
        "untagged_runs": report.untagged_runs,
        "workloads": [
            {
                "workload": w.workload,
                "runs": w.runs,
                "notes": w.notes,
                "rows": [{k: json_value(v) for k, v in r.as_dict().items()} for r in w.rows],
            }
            for w in report.workloads
        ],
    }


def run(args: argparse.Namespace) -> int:
    from pipelines.analysis.comparison.schedule_table import compare_schedules
    from pipelines.selectors import SelectorError

    store = store_of(args)
    if not store.exists():  # the replays it stores must not create a mistyped warehouse
        print(f"tracereplay schedules: no warehouse at {store.location}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    try:
        with store.session(read_only=args.no_replay) as con:
            report = compare_schedules(
                con, args.selector, replay=not args.no_replay, min_effect=args.min_effect / 100
            )
    except SelectorError as exc:
        print(f"tracereplay schedules: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.json:
        emit_json(to_json(report))
        print()
    else:
        print(format_report(report))
    return ExitCode.OK
