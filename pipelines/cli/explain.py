"""`tracereplay explain BASE_SEL CAND_SEL`: where the time went between two run sets."""

from __future__ import annotations

import argparse
import math
import sys

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, add_warehouse_option, store_of
from pipelines.cli._format import wrapped
from pipelines.cli._json import emit_json
from pipelines.cli._report import fmt_p, fmt_pct, fmt_value, table

DESCRIPTION = """\
Attribute the change from the BASELINE runs to the CANDIDATE runs (selectors: docs/selectors.md):
(a) the kernels and communication ops whose total device time per run (summed over ranks) changed
most, names normalised so that group hashes and launch indexes do not split one op
(docs/metrics.md), with launches per run and each op's share of the net change; (b) whether
tau_k's slope (cost that grows with the prefix: attention) or its intercept (fixed cost per chunk:
linear layers, MoE, launch overhead) moved, with bootstrap intervals and Welch / Mann-Whitney
tests as `compare`. Exit status 0, 2 for a bad selector."""

OP_COLUMNS = [
    ("kind", "kind"),
    ("op", "op"),
    ("launches", "launches b->c"),
    ("base", "base/run"),
    ("cand", "cand/run"),
    ("delta", "delta"),
    ("rel", "delta %"),
    ("share", "share"),
]
TAU_COLUMNS = [
    ("metric", "tau_k"),
    ("n", "n b/c"),
    ("base", "baseline"),
    ("cand", "candidate"),
    ("effect", "effect [95% CI]"),
    ("p", "p adj"),
    ("verdict", "verdict"),
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explain",
        help="where the time went between two run sets (ops, tau_k slope vs intercept)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.add_argument("baseline", metavar="BASE_SEL")
    parser.add_argument("candidate", metavar="CAND_SEL")
    parser.set_defaults(func=run)


def _short(name: str, width: int = 36) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def tau_hint(
    chunk_counts: dict[str, int], marked: list[str], stepped: list[str] | None = None
) -> str:
    """Why there is no tau_k comparison, for the state the runs are in: their chunk counts, the
    runs whose slices carry chunk markers and those whose host slices hold ProfilerStep ranges
    (None: not looked up)."""
    if not any(chunk_counts.values()) and marked:
        return (
            f"tau_k: {len(marked)} of these runs carry chunk markers but no chunks are stored:"
            " run `tracereplay chunks`"
        )
    if not any(chunk_counts.values()) and stepped == []:
        return (
            "tau_k: these runs hold no chunks, and their slices carry neither chunk markers nor"
            " ProfilerStep ranges to cut them by (`tracereplay chunks --profiler-steps` finds"
            " nothing here): no tau_k to compare (docs/tau_k.md)"
        )
    if not any(chunk_counts.values()):
        return (
            "tau_k: these runs hold no chunks: add chunk markers (docs/tau_k.md), or treat each"
            " ProfilerStep as one chunk with `tracereplay chunks --profiler-steps`"
        )
    return (
        "tau_k: no line per run: a run needs 3 or more full chunks on a virtual stage"
        " (sql/marts/fct_run_tau_fit.sql), and these runs have fewer"
    )


def format_explanation(explanation, hint: str | None = None) -> str:
    """The text report of an Explanation."""
    lines = ["where the time went (device time per run, summed over ranks):"]
    if not explanation.ops:
        lines.append("  no kernels stored for these runs (nothing to attribute)")
    else:
        rows = [
            {
                "kind": o.kind,
                "op": _short(o.op),
                "launches": f"{o.launches_baseline:.4g} -> {o.launches_candidate:.4g}",
                "base": fmt_value(o.time_baseline_ns, "ns"),
                "cand": fmt_value(o.time_candidate_ns, "ns"),
                "delta": fmt_value(o.delta_ns, "ns"),
                "rel": fmt_pct(o.relative),
                "share": fmt_pct(o.share, signed=False),
            }
            for o in explanation.ops
        ]
        lines.append(table(OP_COLUMNS, rows))
        lines.append(f"net change of all ops: {fmt_value(explanation.net_delta_ns, 'ns')} per run")
    lines.append("")
    if not explanation.tau:
        lines.append(wrapped(hint or "tau_k: no chunk fits for these runs", "  "))
    else:
        rows = [
            {
                "metric": "slope" if t.metric == "tau_slope_ns" else "intercept",
                "n": f"{t.n_baseline}/{t.n_candidate}",
                "base": fmt_value(t.mean_baseline, "ns"),
                "cand": fmt_value(t.mean_candidate, "ns"),
                "effect": f"{fmt_pct(t.effect)} [{fmt_pct(t.effect_lo)}, {fmt_pct(t.effect_hi)}]",
                "p": fmt_p(t.p_adjusted),
                "verdict": t.verdict,
            }
            for t in explanation.tau
        ]
        lines.append(table(TAU_COLUMNS, rows))
        lines.append(f"tau_k moved: {explanation.tau_moved}")
        for h in explanation.tau_hypotheses:  # which readings of the move the runs leave standing
            state = "stands  " if h.stands else "rejected"
            if not math.isfinite(h.p_value):
                state = "untested"  # a value <= 0, or too few runs a side
            lines.append(f"  {state} {h.name} ({h.null} unchanged; {h.test}, p {fmt_p(h.p_value)})")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from pipelines.analysis.comparison.attribution import explain_run_sets
    from pipelines.selectors import SelectorError, require_runs
    from pipelines.store import queries

    try:
        with store_of(args).session(read_only=True) as con:
            base = require_runs(con, args.baseline)
            cand = require_runs(con, args.candidate)
            explanation = explain_run_sets(con, base, cand)
            hint = None
            if not explanation.tau:
                ids = base + cand
                slices = con.runs_relation("slices", ids)
                marked = queries.runs_with_markers_in(con, [slices])
                stepped = queries.runs_with_profiler_steps_in(con, [slices])
                hint = tau_hint(queries.chunk_counts(con, ids), marked, stepped)
    except SelectorError as exc:
        print(f"tracereplay explain: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.json:
        emit_json(explanation.to_json())
        print()
    else:
        print(format_explanation(explanation, hint))
    return ExitCode.OK
