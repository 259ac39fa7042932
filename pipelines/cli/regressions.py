"""`tracereplay regressions`: change points in each configuration's nightly history."""

from __future__ import annotations

import argparse
import sys
import textwrap

from pipelines.analysis.changes.changepoint_defaults import (
    DEFAULT_CONFIRM,
    DEFAULT_FDR,
    DEFAULT_MAX_PVALUE,
    DEFAULT_MIN_MAGNITUDE,
    DEFAULT_PERSIST,
    DEFAULT_SPIKE_SIGMAS,
    PERSIST_PVALUE,
    RESCAN_CONFIRM_RATE,
)
from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, add_warehouse_option, day, percent, store_of
from pipelines.cli._format import MAX_WIDTH, render_table
from pipelines.cli._json import emit_json
from pipelines.cli._report import fmt_p, fmt_pct, table
from pipelines.labels import UNTAGGED, config_label, json_value

DESCRIPTION = textwrap.fill(
    f"""\
Find change points per configuration (model, schedule, seq_len, chunk_size, tp, pp, vp,
hardware) and metric over collected_at, in the runs SEL selects (docs/selectors.md): ruptures'
binary segmentation proposes points, each is kept only when its split is significant as the
best of every split of the segments on either side (t on log values against the simulated
largest t of a segment without a change: p <= {DEFAULT_MAX_PVALUE:g}, the search paid for) and
their medians differ by at least --min-magnitude (default {DEFAULT_MIN_MAGNITUDE:.1%}), so
noise raises nothing; a single night far off the nights on both sides of it (a spike) is left
out before any test (docs/regressions.md). A point with fewer than {DEFAULT_CONFIRM} runs after
it is `pending` until later nights confirm it, and so is one whose split does not still stand
(p <= {PERSIST_PVALUE:g} within 2 nights of it) in each of the histories one to {
        DEFAULT_PERSIST - 1
    } nights shorter (unless its p is 25x smaller): nightly use re-scans. A point is dated by the
centre of the 5-night window holding the most posterior probability of its split, with the 95 %
posterior set of its date: the runs among which the first run after the change lies (the runs
to bisect). Each
point's q is Benjamini-Hochberg's across the series scanned; a confirmed regression with q >
{DEFAULT_FDR:g} is listed, not counted. Points a recent nightly scan confirmed and this one
contradicts are listed as withdrawn. Runs without a model fact share one history, labelled
(untagged). Exit status 1 when a confirmed regression is reported, 2 for a bad selector or
metric, else 0.""",
    width=96,
)

HEADERS = ("configuration", "metric", "nights", "n b/a", "magnitude [95% CI]", "p", "q", "status")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "regressions",
        help="change points per configuration and metric over the nightly history",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.add_argument(
        "selector",
        nargs="?",
        default=None,
        metavar="SEL",
        help="runs to search (docs/selectors.md), e.g. model=deepseek-v3.1,schedule=vpp; "
        "default: every run",
    )
    parser.add_argument(
        "--metric",
        action="append",
        metavar="M",
        help="metric (repeatable; default ttft_ns makespan_ns throughput_tok_s, and for "
        "configurations whose runs have no chunks total_ns compute_ns exposed_comm_ns)",
    )
    parser.add_argument(
        "--since", metavar="DATE", type=day, help="only runs collected on or after DATE"
    )
    parser.add_argument(
        "--min-magnitude",
        type=percent,
        default=DEFAULT_MIN_MAGNITUDE * 100,
        metavar="PCT",
        help="smallest change of the segment medians worth reporting, percent "
        "(default %(default)g)",
    )
    parser.set_defaults(func=run)


def _nights(before: str, after: str) -> str:
    """'2026-02-07 → 02-08': the last night before the change and the first after it."""
    b, a = before[:10], after[:10]
    return f"{b} → {a[5:] if a[:4] == b[:4] else a}"


def format_changes(changes: list) -> str:
    """The change points as the table `tracereplay regressions` prints (at most 120 columns)."""
    return render_table(HEADERS, [_row(ch) for ch in changes], right=(3, 5, 6))


def _row(ch) -> tuple[str, ...]:
    return (
        config_label(ch.config),
        ch.metric,
        _nights(ch.collected_before, ch.collected_after),
        f"{ch.n_before}/{ch.n_after}",
        f"{fmt_pct(ch.magnitude)} [{fmt_pct(ch.magnitude_lo)}, {fmt_pct(ch.magnitude_hi)}]",
        fmt_p(ch.p_value),
        fmt_p(ch.q_value),
        _status(ch),
    )


def _status(ch) -> str:
    if ch.status != "confirmed":
        return f"pending {ch.direction}"
    if ch.direction == "regression" and not ch.is_regression:
        return f"regression, q > {DEFAULT_FDR:g}"
    return ch.direction


def run(args: argparse.Namespace) -> int:
    from pipelines.analysis.changes.history import find_changes, runs_around
    from pipelines.analysis.comparison.attribution import explain_run_sets
    from pipelines.analysis.runs.run_metrics import UnknownMetricError
    from pipelines.selectors import SelectorError

    explanations = {}
    explained = {}  # one attribution per pair of run sets
    try:
        with store_of(args).session(read_only=True) as con:
            scan = find_changes(
                con,
                args.selector,
                args.metric,
                since=args.since,
                min_magnitude=args.min_magnitude / 100,
            )
            changes, series = scan.changes, scan.series
            withdrawn = scan.withdrawn
            for i, ch in enumerate(changes):
                if ch.is_regression:
                    before, after = runs_around(con, ch)
                    key = (tuple(before), tuple(after))
                    if key not in explained:
                        explained[key] = explain_run_sets(con, before, after, build=False)
                    explanations[i] = explained[key]
    except (SelectorError, UnknownMetricError) as exc:
        print(f"tracereplay regressions: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    regressed = any(ch.is_regression for ch in changes)
    if args.json:
        rows = []
        for i, ch in enumerate(changes):
            row = {k: json_value(v) for k, v in ch.as_dict().items()}
            if i in explanations:
                row["attribution"] = explanations[i].to_json()
            rows.append(row)
        for w in withdrawn:
            rows.append(
                {"status": "withdrawn", **{k: json_value(v) for k, v in w.as_dict().items()}}
            )
        emit_json(rows)
        print()
        return ExitCode.CHECK_FAILED if regressed else ExitCode.OK
    if not changes:
        print(
            f"no change points in {series} series (configuration x metric); a series needs at "
            "least 10 runs with collected_at"
        )
        _print_withdrawn(withdrawn)
        _print_false_alarms(scan)
        _print_spikes(scan.spikes)
        _print_untagged(scan.untagged_runs)
        return ExitCode.OK
    from pipelines.cli.explain import format_explanation

    print(format_changes(changes))
    print(f"\n{len(changes)} change point(s) in {series} series")
    # metrics of one configuration that changed between the same two runs: one block, with
    # the runs and, for a regression, where the time went
    blocks: dict[tuple, list[int]] = {}
    for i, ch in enumerate(changes):
        blocks.setdefault((config_label(ch.config), ch.run_before, ch.run_after), []).append(i)
    for (config, before, after), members in blocks.items():
        metrics = ", ".join(changes[i].metric for i in members)
        print(f"\n{config} {metrics}:")
        print(f"last run before: {before}\nfirst run after: {after}")
        print(_date_interval([changes[i] for i in members]))
        explained_here = next((explanations[i] for i in members if i in explanations), None)
        if explained_here is not None:
            print(format_explanation(explained_here))
    _print_withdrawn(withdrawn)
    _print_false_alarms(scan)
    _print_spikes(scan.spikes)
    _print_untagged(scan.untagged_runs)
    return ExitCode.CHECK_FAILED if regressed else ExitCode.OK


def _print_withdrawn(withdrawn: list) -> None:
    """Points an earlier nightly scan confirmed that this scan contradicts: one line each."""
    for w in withdrawn:
        print(
            f"\nwithdrawn: {config_label(w.config)} {w.metric} change before {w.run_after} "
            f"({w.collected_after[:10]}, {fmt_pct(w.magnitude)}, p {fmt_p(w.p_value)}), confirmed "
            f"by the scan through {w.confirmed_through[:10]}, is not found by the nights since"
        )


def _print_false_alarms(scan) -> None:
    """What noise alone would raise: per scan (each series' gate) and per quarter of nightly
    re-scans (measured, `tracereplay bench changepoints`)."""
    text = (
        f"expected false alarms: at most {scan.expected_false_alarms:.2g} of these "
        f"{scan.series} series raise a point from noise alone in one scan (each at most "
        f"{DEFAULT_MAX_PVALUE:.2%}); re-scanned every night for 90 nights, a series without a "
        f"change confirms one in {RESCAN_CONFIRM_RATE:.1%} (bench changepoints): "
        f"{scan.series * RESCAN_CONFIRM_RATE:.2g} expected per 90 nights here"
    )
    print("\n" + textwrap.fill(text, width=MAX_WIDTH, break_on_hyphens=False))


def _print_untagged(runs: int) -> None:
    """Runs without a model fact share one history per rank layout: say so, and how to fix it."""
    if runs:
        note = (
            f"note: {runs} run(s) have no model fact and are read as one workload {UNTAGGED}; "
            "if they are several, give them facts (profiler_metadata.json keys model, seq_len, "
            "chunk_size, written by torch_npu's prof.add_metadata) or tag them:"
        )
        print("\n" + textwrap.fill(note, width=MAX_WIDTH, break_on_hyphens=False))
        print("  tracereplay ingest --tag model=NAME PATH")


def _date_interval(members: list) -> str:
    """Where the first run after the change may lie (95 % posterior set), widest over the
    metrics of one block: the runs to bisect."""
    first = min(members, key=lambda ch: ch.earliest_after_at)
    last = max(members, key=lambda ch: ch.latest_after_at)
    if first.earliest_after_run == last.latest_after_run:
        return "dated to that run (95 % posterior set of the date)"
    return (
        f"first run after it, 95 % set: {first.earliest_after_at[:10]} … "
        f"{last.latest_after_at[:10]}\n  from {first.earliest_after_run}"
        f"\n  to   {last.latest_after_run}"
    )


SPIKES_SHOWN = 10


def _print_spikes(spikes: list) -> None:
    """The single-night spikes set aside before the search (none is a change point)."""
    if not spikes:
        return
    text = (
        f"{len(spikes)} single-night spike(s) set aside, not change points (beyond"
        f" {DEFAULT_SPIKE_SIGMAS} robust sigma of the nights on both sides; off: how far off"
        " its neighbours):"
    )
    print("\n" + textwrap.fill(text, width=MAX_WIDTH, break_on_hyphens=False))
    rows = [
        {
            "configuration": config_label(s.config),
            "metric": s.metric,
            # the run id holds its collection date when the profiler recorded one
            "night": s.run_id
            if s.collected_at[:10].replace("-", "") in s.run_id
            else f"{s.collected_at[:10]} {s.run_id}",
            "off": f"{s.deviation:+.1%}",
        }
        for s in spikes[:SPIKES_SHOWN]
    ]
    columns = [("configuration", "configuration"), ("metric", "metric"), ("night", "night")]
    print(table([*columns, ("off", "off")], rows))
    if len(spikes) > SPIKES_SHOWN:
        print(f"... and {len(spikes) - SPIKES_SHOWN} more")
