"""`tracereplay fit`: fit tau_k per configuration and stage and print the linearity verdicts."""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING

from pipelines.cli import ExitCode
from pipelines.cli._common import add_json_option, add_warehouse_option, store_of
from pipelines.cli._format import wrapped
from pipelines.cli._json import emit_json
from pipelines.labels import UNTAGGED, json_value

if TYPE_CHECKING:  # polars loads when a fit runs, not when the parser is built
    import polars as pl


DESCRIPTION = """\
Fit the per-chunk, per-stage prefill latency tau_k = a + b*k of every configuration in the
warehouse (chunks joined with runs: model, schedule, chunk size, sequence length, tp/pp/vp,
hardware, virtual stage), pooling repeated runs of the same configuration, and classify each
curve by shape, then scale (docs/tau_k.md §4): knee (a break at k, k=0->1 for a first chunk on
its own path), staircase (steps every n chunks), convex/concave; else linear, or flattened (a/b
so large that VPP keeps at most 60% of a proportional curve's gain); drift, too_noisy and
too_short decide nothing. Variable-chunk (DCPP) curves are fitted by the cost law
tau(c,p) = alpha + beta*c + gamma*(c*p + c(c+1)/2), verdict cost_model, a/b the law implies at the
nominal chunk size; they are never judged against k. Intervals are 95%: GLS of the per-k mean
curve under multiplicative AR(1) noise with the runs' pure error for fewer than 20 runs,
cluster-robust by run from 20; a/b by Fieller; the VPP balance residual
sum|tau_{k-1}+tau_{k+1}-2tau_k| / sum 2tau_k of the fitted curve with a parametric-bootstrap
interval; the whole-run bubble ratio VPP would leave for the configuration (pp=2, vp=2, free
transfers, one request; exact identity over its virtual-stage curves) and VPP's gain, CPP's
bubble minus VPP's, with the same bootstrap (docs/tau_k.md §6.2).
An operator-latency table's curves (docs/latency_tables.md) are judged at the table's whole
range and, as requests of each --context length shorter than it, as curves of their own (seq_len
the length, N = seq_len / chunk); a progress line goes to stderr when a fit takes over 5 s.
Times are printed in ms. Every curve of the warehouse is fitted and stored as the table tau_fits
(the same step as the demo and the Dagster asset tau_fits); --model / --schedule only filter what
is printed. The verdict policy is summarised: runs with dense attention (runs.attention) are
expected linear, runs with sparse attention flagged; too_noisy and too_short decide nothing.
Exit status 0 (verdicts are reported, not enforced)."""

TEXT_COLUMNS = (
    ("model", "model"),
    ("source", "source"),
    ("schedule", "sched"),
    ("chunk", "chunk"),
    ("seq_len", "seq_len"),
    ("stage", "vs"),
    ("n_runs", "runs"),
    ("n_points", "pts"),
    ("slope", "slope ms/chunk [95% CI]"),
    ("slope_robust", "robust slope CI"),
    ("intercept", "intercept ms [CI]"),
    ("ab", "a/b [CI]"),
    ("r2", "R2"),
    ("balance", "balance resid [CI]"),
    ("vpp_bubble", "VPP bubble pred [CI]"),
    ("vpp_gain", "VPP gain"),
    ("curv_p", "curv p"),
    ("breakpoint", "break k (p_adj)"),
    ("verdict", "verdict"),
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fit",
        help="fit tau_k per model/config/stage and report linearity verdicts",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.add_argument(
        "--wide",
        action="store_true",
        help="every statistic (intercept, balance residual, VPP bubble prediction, shape "
        "tests); the default table fits 120 columns",
    )
    parser.add_argument("--model", help="only this model")
    parser.add_argument("--schedule", help="only this schedule")
    parser.add_argument(
        "--no-segment",
        action="store_true",
        help="do not segment (in memory) runs whose slices carry chunk markers but that have no "
        "rows in the chunks table yet",
    )
    parser.add_argument(
        "--context",
        default="64K,128K,256K,512K",
        help="request lengths (tokens; K = 1,024) an operator-latency table's curves are also "
        "judged at, each a curve of its own (seq_len); 'none': the table's whole range only "
        "(default 64K,128K,256K,512K: the VPP paper's long-context sequences; docs/tau_k.md)",
    )
    parser.add_argument(
        "--keep-partial",
        action="store_true",
        help="keep each request's shorter remainder chunk in the fit (left out by default)",
    )
    parser.set_defaults(func=run)


def _ms(x: float) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x / 1e6:.3g}"


def _num(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def _pct(x: float | None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.1%}"


def _fact(x: object) -> str:
    """A run fact as text: '-' when unknown (never 'None')."""
    return "-" if x is None else str(x)


def _text_row(row: dict) -> dict[str, str]:
    stage = row.get("vstage")
    model = _fact(row.get("model"))
    if model.startswith(UNTAGGED):  # a run without a model fact: its own curve, named by run
        model = model.removeprefix(UNTAGGED).strip() + "*"
    robust = (row.get("slope_robust_lo"), row.get("slope_robust_hi"))
    return {
        "model": model,
        # the reader: runs of one model from two profilers' exports are two curves
        "source": _fact(row.get("source")),
        # a history split at a confirmed change point: which side ("1/2 from 2026-11-02")
        "segment": row.get("segment") or "",
        # a curve of an operator-latency table has no schedule: its operator (table:layer, ...)
        "schedule": (
            f"table:{row['operator']}" if row.get("operator") else _fact(row.get("schedule"))
        ),
        "chunk": _fact(row.get("chunk_size")),
        "seq_len": _fact(row.get("seq_len")),
        # -1: chunks cut by ProfilerStep windows carry no virtual stage
        "stage": "-" if stage is None or stage < 0 else str(stage),
        "n_runs": str(row["n_runs"]),
        "n_points": str(row["n_points"]),
        "slope": f"{_ms(row['slope'])} [{_ms(row['slope_lo'])}, {_ms(row['slope_hi'])}]",
        # few runs: the slope interval that also holds under AR(1) noise and a small step
        "slope_robust": "-" if None in robust else f"[{_ms(robust[0])}, {_ms(robust[1])}]",
        "intercept": (
            f"{_ms(row['intercept'])} [{_ms(row['intercept_lo'])}, {_ms(row['intercept_hi'])}]"
        ),
        "ab": f"{_num(row['ab_ratio'])} [{_num(row['ab_lo'])}, {_num(row['ab_hi'])}]",
        "r2": _num(row["r2"]),
        "balance": (
            f"{_num(row['balance_est'], 2)} [{_num(row['balance_lo'], 2)}, "
            f"{_num(row['balance_hi'], 2)}]"
        ),
        "vpp_bubble": (
            f"{_pct(row['vpp_bubble_pred'])} [{_pct(row['vpp_bubble_lo'])}, "
            f"{_pct(row['vpp_bubble_hi'])}]"
        ),
        "vpp_gain": _pct(row["vpp_gain_pred"]),
        "curv_p": _num(row["curvature_p"], 2),
        "breakpoint": (
            "-"
            if row["breakpoint_k"] is None or math.isnan(row["breakpoint_k"])
            else f"{row['breakpoint_k']:.0f} (p {_num(row['breakpoint_p'], 2)})"
        ),
        "verdict": verdict_text(row),
    }


def verdict_text(row: dict) -> str:
    """The verdict with where it applies: `knee k=0->1`, `staircase /2` (steps every 2 chunks),
    `cost_model` for a curve fitted by tau(c, p)."""
    verdict = str(row.get("verdict"))
    if verdict == "knee" and row.get("knee_at"):
        return f"knee k={row['knee_at']}"
    period = row.get("stair_period")
    if verdict == "staircase" and period is not None and math.isfinite(period):
        return f"staircase /{period:.0f}"
    return verdict


# the default table fits 120 columns; --wide adds the intercept, balance, VPP prediction and
# shape tests (a/b with its interval is in both: issue 32)
COMPACT_COLUMNS = (
    ("model", "model"),
    ("source", "source"),
    ("schedule", "sched"),
    ("length", "seq/chunk"),
    ("stage", "vs"),
    ("n_runs", "runs"),
    ("n_points", "pts"),
    ("slope", "slope ms/chunk [95% CI]"),
    ("ab", "a/b [CI]"),
    ("r2", "R2"),
    ("verdict", "verdict"),
)


def _tokens(text: str) -> str:
    return f"{int(text) // 1024}K" if text.isdigit() and int(text) % 1024 == 0 else text


def format_table(curves: pl.DataFrame, wide: bool = False) -> str:
    """Fixed-width text table of the fit results (`wide`: every statistic)."""
    columns = TEXT_COLUMNS if wide else COMPACT_COLUMNS
    gap = "  " if wide else " "
    rows = [_text_row(r) for r in curves.to_dicts()]
    for r in rows:
        r["length"] = f"{_tokens(r['seq_len'])}/{_tokens(r['chunk'])}"
        if r["segment"]:  # compact: "[1/2]"; wide: "[1/2 from 2026-11-02]"
            r["model"] += f" [{r['segment'] if wide else r['segment'].split()[0]}]"
    widths = {key: max([len(title)] + [len(r[key]) for r in rows]) for key, title in columns}
    if not wide:
        _narrowed(rows, widths, gap)
    lines = [gap.join(title.ljust(widths[key]) for key, title in columns)]
    lines += [gap.join(r[key].ljust(widths[key]) for key, _ in columns) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


# the compact table's text columns that give way when it passes 120 columns, each down to a
# floor: a latency table's operator (aiconfigurator's "table:msa_context_module kv=bf16
# gemm=fp8") made it 210 wide
NARROWED = (("schedule", 16), ("model", 10), ("source", 8))


def _narrowed(rows: list[dict[str, str]], widths: dict[str, int], gap: str) -> None:
    """Cut the widest narrowable column (middle_ellipsis: the tail tells two curves apart) one
    character at a time until the compact table fits 120 columns or every one is at its floor."""
    while sum(widths.values()) + len(gap) * (len(widths) - 1) > 120:
        over = [(widths[key] - floor, key) for key, floor in NARROWED if widths[key] > floor]
        if not over:
            return
        key = max(over)[1]
        widths[key] -= 1
        for r in rows:
            r[key] = middle_ellipsis(r[key], widths[key])


def middle_ellipsis(text: str, width: int) -> str:
    """`text` cut to `width` characters by a '…' in its middle (its start and its end kept)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def untagged_note(curves: pl.DataFrame) -> str:
    """The line that names runs fitted alone for lack of a model fact, and how to pool them."""
    if curves.is_empty() or "model" not in curves.columns:
        return ""
    models = curves["model"].drop_nulls().unique().to_list()
    runs = sorted(m for m in models if str(m).startswith(UNTAGGED))
    if not runs:
        return ""
    return wrapped(
        f"* {len(runs)} untagged runs (no model fact) are fitted one curve per run, never pooled"
        " with each other; tag repeats alike to pool them:"
        " tracereplay ingest DIR --tag model=NAME --tag schedule=cpp"
    )


def policy_summary(curves: pl.DataFrame) -> str:
    """One line per expectation of the verdict policy (pipelines.analysis.tau.verdict_policy)."""
    from pipelines.analysis.tau.verdict_policy import check_fits

    results = [r for r in check_fits(curves) if r.covered.height]
    if not results:
        return (
            "verdict policy: no curve's runs name their attention (dense / sparse), nothing "
            "expected; tag them at ingest: tracereplay ingest DIR --tag attention=dense"
        )
    return "\n".join(
        f"{'ok  ' if r.passed else 'FAIL'} {r.expectation.name}: {r.description()}" for r in results
    )


def _nothing_to_fit(con, model: str | None) -> str:
    """Why no curve came out, and what to do about it."""
    from pipelines.store import queries

    counts = queries.row_counts(con, ["runs", "chunks"])
    if counts["runs"] == 0:
        return (
            "nothing to fit: the warehouse holds no runs. Ingest profiler output first"
            " (`tracereplay ingest PATH`), or run `tracereplay demo` for a simulated campaign."
        )
    if counts["chunks"] == 0:
        return (
            f"nothing to fit: {counts['runs']} runs but no chunks. tau_k needs per-chunk timings:"
            " wrap each prefill forward in record_function('chunk[req=<id>,k=<k>,vs=<stage>,"
            "tokens=<c>,prefix=<p>]') (docs/tau_k.md), or treat each ProfilerStep as one chunk"
            " with `tracereplay chunks --profiler-steps`; `tracereplay show RUN` says what a run"
            " holds."
        )
    return f"no curve for model {model!r}; `tracereplay runs` lists the models stored"


def _unknown_filter(con, args: argparse.Namespace) -> str | None:
    """Why --model / --schedule can match no curve (a name no stored run has, an empty one),
    or None: a typo printed an empty table and exit 0 before."""
    for option, column, value in (
        ("--model", "model", args.model),
        ("--schedule", "schedule", args.schedule),
    ):
        if value is None:
            continue
        stored = [
            r[0]
            for r in con.execute(
                f"select distinct {column} from runs where {column} is not null order by 1"
            ).fetchall()
        ]
        if value not in stored:
            known = ", ".join(stored[:12]) or "none: the runs carry no such tag"
            return f"{option} {value!r}: no stored run has it (stored: {known})"
    return None


def _progress_printer(first_after_s: float = 5.0, every_s: float = 10.0):
    """A fit's progress on stderr (also with --json): nothing for a fit done within
    `first_after_s`, then a line every `every_s` and one at the end (a latency table of 1,362
    curves takes about a minute)."""
    import time

    start, shown = time.monotonic(), [0.0]

    def progress(done: int, total: int) -> None:
        elapsed = time.monotonic() - start
        final = done == total and shown[0] > 0
        if final or (elapsed >= first_after_s and elapsed - shown[0] >= every_s):
            shown[0] = elapsed
            print(
                f"tracereplay fit: {done:,} of {total:,} configurations fitted, {elapsed:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    return progress


def run(args: argparse.Namespace) -> int:
    import polars as pl

    from pipelines.analysis.tau.fit_store import FitOptions, fit_and_store

    store = store_of(args)
    if not store.exists():
        print(f"tracereplay fit: no warehouse at {store.location}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    from pipelines.analysis.tau.table_points import parse_contexts

    try:
        contexts = parse_contexts(args.context)
    except ValueError as error:
        print(f"tracereplay fit: --context: {error}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    options = FitOptions(
        segment=not args.no_segment, drop_partial=not args.keep_partial, contexts=contexts
    )
    con = store.open()
    try:
        unknown = _unknown_filter(con, args)
        if unknown:
            print(f"tracereplay fit: {unknown}; nothing fitted", file=sys.stderr)
            return ExitCode.BAD_INPUT
        report = fit_and_store(con, options, progress=_progress_printer())
        hint = _nothing_to_fit(con, args.model) if report.fits.is_empty() or args.model else None
    finally:
        con.close()
    if report.segmented:
        print(
            f"tracereplay fit: segmented {len(report.segmented)} run(s) without stored chunks "
            "from their chunk markers (in memory)",
            file=sys.stderr,
        )
    curves = report.fits
    if args.model:
        curves = curves.filter(pl.col("model") == args.model)
    if args.schedule:
        curves = curves.filter(pl.col("schedule") == args.schedule)
    if args.json:
        records = [{k: json_value(v) for k, v in row.items()} for row in curves.to_dicts()]
        from pipelines.analysis.tau.vpp_gain import predicted_gains

        gains = [
            {k: json_value(v) for k, v in r.items()} for r in predicted_gains(curves).to_dicts()
        ]
        emit_json({"curves": records, "vpp_gains": gains})
        print()
        return ExitCode.OK
    if curves.is_empty():
        from pipelines.cli._format import wrapped

        print(wrapped(hint))
        return ExitCode.OK
    print(format_table(curves, wide=args.wide))
    counts = curves.group_by("verdict").len().sort("verdict")
    summary = ", ".join(f"{v}: {n}" for v, n in counts.iter_rows())
    print(f"\n{curves.height} curves ({summary}); evidence per curve with --json")
    untagged = untagged_note(curves)
    if untagged:
        print(untagged)
    print(policy_summary(curves))
    from pipelines.cli._vpp_gain import format_gains  # the predicted VPP gain: issue 32 item 3

    gains = format_gains(curves)
    if gains:
        print(f"\n{gains}")
    print(f"stored {report.fits.height} curves as table tau_fits in {store.warehouse_file}")
    return ExitCode.OK
