"""`tracereplay compare`: two run sets, metric by metric, with intervals, a test and a verdict."""

from __future__ import annotations

import argparse
import sys
import textwrap

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, add_warehouse_option, percent, store_of
from pipelines.cli._json import emit_json
from pipelines.cli._report import fmt_p, fmt_pct, fmt_value, table
from pipelines.labels import json_value

DESCRIPTION = """\
Compare the runs CANDIDATE selects with those BASELINE selects (selectors: docs/selectors.md),
per metric (docs/metrics.md), with one estimand for the point, the interval and the test: the
ratio of geometric means - 1 (a metric with a value <= 0: the difference of arithmetic means
relative to the baseline's). n on each side; the effect with its 95 % interval (Welch's t on log
values); a one-sided test toward worse (Welch's t on log values; with >= 20 nights of the
baseline configuration's history, the moderated t of Smyth 2004, its variance shrunk to the
history's, named in the output; --no-history-prior to use the runs alone);
Benjamini-Hochberg's correction across the metrics compared (--correction holm for Holm's); a
verdict: regressed (corrected one-sided p < 0.05 and the effect worse by at least min-effect),
improved (corrected one-sided p toward better < 0.025, i.e. two-sided, and better by at least
min-effect), unchanged (within +-min-effect by two one-sided tests at 0.05: the 90 % interval
inside; or both sides identical), inconclusive (anything else, n < 3 on a side included).
Exit status 1 when a metric regressed, 2 for a bad selector or metric, else 0."""

COLUMNS = [
    ("metric", "metric"),
    ("n", "n b/c"),
    ("baseline", "base mean"),
    ("candidate", "cand mean"),
    ("effect", "effect [95% CI]"),
    ("test", "test"),
    ("p_adj", "p adj (worse)"),
    ("verdict", "verdict"),
]
TEST_LABEL = {
    "welch_t_log": "Welch-log",
    "moderated_t_log": "mod-t-log",
    "welch_t": "Welch",
    "none": "-",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare two run sets metric by metric with statistics",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.add_argument("--baseline", required=True, metavar="SEL", help="baseline runs")
    parser.add_argument("--candidate", required=True, metavar="SEL", help="candidate runs")
    parser.add_argument(
        "--metric",
        action="append",
        metavar="M",
        help="a metric to compare (repeatable; default: ttft_ns makespan_ns throughput_tok_s "
        "compute_ns bubble_ns exposed_comm_ns)",
    )
    parser.add_argument(
        "--min-effect",
        type=percent,
        default=1.0,
        metavar="PCT",
        help="smallest relative change worth flagging, in percent, 0-1000 (default 1)",
    )
    parser.add_argument(
        "--correction",
        choices=("bh", "holm"),
        default="bh",
        help="multiple-testing correction across metrics: bh (Benjamini-Hochberg, default: the "
        "metrics move together; docs/regressions.md) or holm",
    )
    parser.add_argument(
        "--no-history-prior",
        dest="history_prior",
        action="store_false",
        help="test on the runs alone, without the variance prior from the baseline "
        "configuration's nightly history (used by default when it has >= 20 nights)",
    )
    parser.set_defaults(func=run)


def format_comparison(result) -> str:
    """The text report of a RunSetComparison."""
    from pipelines.analysis.runs.run_metrics import METRICS

    rows = []
    for m in result.metrics:
        unit = METRICS[m.metric].unit
        rows.append(
            {
                "metric": m.metric,
                "n": f"{m.n_baseline}/{m.n_candidate}",
                "baseline": fmt_value(m.mean_baseline, unit),
                "candidate": fmt_value(m.mean_candidate, unit),
                "effect": f"{fmt_pct(m.effect)} [{fmt_pct(m.effect_lo)}, {fmt_pct(m.effect_hi)}]",
                "test": TEST_LABEL.get(m.test, m.test),
                "p_adj": fmt_p(m.p_adjusted),
                "verdict": m.verdict,
            }
        )
    lines = [
        f"baseline  {result.baseline or '(all runs)'}: {len(result.baseline_runs)} runs",
        f"candidate {result.candidate or '(all runs)'}: {len(result.candidate_runs)} runs",
        "",
        table(COLUMNS, rows),
        "",
        *textwrap.wrap(
            f"{result.correction} correction across {len(result.metrics)} "
            f"metric{'s' if len(result.metrics) != 1 else ''}; flagged only when "
            f"significant (regressed: one-sided p adj toward worse < 0.05; improved: toward better "
            f"< 0.025) and the effect beyond +-{result.min_effect:.1%}; effect and interval: ratio "
            "of geometric means - 1",
            118,
            subsequent_indent="  ",
            break_on_hyphens=False,
        ),
    ]
    reasons = sorted({(m.test, m.test_reason) for m in result.metrics if m.test != "none"})
    for t, r in reasons:
        lines += textwrap.wrap(f"test {TEST_LABEL[t]}: {r}", 118, subsequent_indent="  ")
    lines += _prior_lines(result)
    for m in result.metrics:
        if m.verdict == "inconclusive":
            lines.append(f"{m.metric}: inconclusive, {m.reason}")
    if result.overlap:
        lines.append(f"warning: {len(result.overlap)} run(s) are on both sides")
    return "\n".join(lines)


def _prior_lines(result) -> list[str]:
    """Which metrics were tested against the nightly history's variance, and why not the rest."""
    lines = []
    used = [m for m in result.metrics if m.test == "moderated_t_log"]
    if used:
        prior = result.priors[used[0].metric]
        names = ", ".join(m.metric for m in used)
        lines += textwrap.wrap(
            f"variance prior (moderated t, Smyth 2004) for {names}: the run-to-run variance of "
            f"{prior.nights} nights of {prior.source} (runs compared left out)",
            118,
            subsequent_indent="  ",
        )
    if result.prior_note:
        lines += textwrap.wrap(result.prior_note, 118, subsequent_indent="  ")
    return lines


def to_json(result) -> dict:
    return {
        "baseline": {"selector": result.baseline, "runs": result.baseline_runs},
        "candidate": {"selector": result.candidate, "runs": result.candidate_runs},
        "correction": result.correction,
        "min_effect": result.min_effect,
        "metrics": [{k: json_value(v) for k, v in m.as_dict().items()} for m in result.metrics],
        "variance_priors": {
            k: {f: json_value(v) for f, v in p.as_dict().items()} for k, p in result.priors.items()
        },
        "variance_prior_note": result.prior_note,
    }


def run(args: argparse.Namespace) -> int:
    from pipelines.analysis.comparison.run_sets import compare_run_sets
    from pipelines.analysis.runs.run_metrics import UnknownMetricError
    from pipelines.selectors import SelectorError

    correction = {"holm": "holm", "bh": "fdr_bh"}[args.correction]
    try:
        with store_of(args).session(read_only=True) as con:
            result = compare_run_sets(
                con,
                args.baseline,
                args.candidate,
                args.metric,
                min_effect=args.min_effect / 100,
                correction=correction,
                history_prior=args.history_prior,
            )
            explanation = None
            if result.regressed:
                from pipelines.analysis.comparison.attribution import explain_run_sets

                explanation = explain_run_sets(
                    con, result.baseline_runs, result.candidate_runs, build=False
                )
    except (SelectorError, UnknownMetricError) as exc:
        print(f"tracereplay compare: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    if args.json:
        payload = to_json(result)
        if explanation is not None:
            payload["attribution"] = explanation.to_json()
        emit_json(payload)
        print()
    else:
        print(format_comparison(result))
        if explanation is not None:
            from pipelines.cli.explain import format_explanation

            print()
            print(format_explanation(explanation))
    return ExitCode.CHECK_FAILED if result.regressed else ExitCode.OK
