"""`tracereplay show RUN`: one run's breakdown per rank, top kernels and comm ops, chunks, τ."""

from __future__ import annotations

import argparse
import math
import sys

from pipelines.cli import ExitCode
from pipelines.cli._common import (
    add_json_option,
    add_warehouse_option,
    output_folder,
    shown_path,
    store_of,
)
from pipelines.cli._json import emit_json

DESCRIPTION = """\
Show one stored run (its id, or a unique prefix of it):

  * facts: source, origin, model, schedule, lengths, parallelism, software, tags, dropped rows;
  * per rank, the step breakdown summed over its steps, from one origin per rank (the profiler's
    own figures where it wrote them, ours where they are complete; docs/step_breakdown.md), with
    the two waits: `recv wait`, the profiler's receive wait (its step_trace "Bubble", time in
    hcom_receive), and `p2p wait`, ours (time inside any send / receive with no compute
    running), and why they differ (docs/metrics.md "Names": bubble = free + pipeline wait);
  * the top kernels and communication ops by total time, with counts;
  * the chunk table and the τ_k fit when the run has chunks, else how to get them.

With --html DIR it also writes DIR/runs/<run id>.html (dashboards.site.run_page: the step
breakdown per rank, the timeline and the τ_k curves the run has, offline) and prints its path.

Exit status: 0 ok, 2 no such run (or an ambiguous prefix) or no warehouse."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "show",
        help="one run: breakdown per rank, top kernels and comm ops, chunks and tau fit",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_id", metavar="RUN", help="run id or a unique prefix of it")
    parser.add_argument("--no-fit", action="store_true", help="skip the tau_k fit")
    parser.add_argument(
        "--html",
        type=output_folder,
        default=None,
        metavar="OUT",
        help="also write the run page OUT/runs/<run id>.html (offline HTML with its PNGs)",
    )
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


def _facts(run: dict) -> list[str]:
    keys = (
        "source",
        "model",
        "schedule",
        "attention",
        "seq_len",
        "chunk_size",
        "tp",
        "pp",
        "vp",
        "dp",
        "world_size",
        "hardware",
        "collected_at",
        "replay_of",
    )
    facts = [f"{k}={run[k]}" for k in keys if run.get(k) is not None]
    lines = [f"run {run['run_id']}", f"  origin {run.get('origin')}", "  " + "  ".join(facts)]
    for key in ("software", "tags", "dropped_rows", "segmentation"):
        if run.get(key):
            value = run[key]
            text = (
                ", ".join(f"{k}={v}" for k, v in value.items())
                if isinstance(value, dict)
                else value
            )
            lines.append(f"  {key.replace('_', ' ')}: {text}")
    return lines


def _kernel_source(origin: str, source: str | None) -> str:
    """Where the top kernels come from, in the run's own terms: fct_kernel_totals' `from`
    ('kernel_details': the kernels table, which a Kineto trace and a db fill too; 'trace': the
    compute-lane slices of a trace without kernel rows)."""
    if origin == "trace":
        return "the trace's device tasks"
    return {"kineto": "the trace's kernels", "ascend_pt_db": "the db's tasks"}.get(
        source or "", "kernel_details"
    )


def _text(view) -> str:
    from pipelines.cli._format import duration, ellipsis, render_table, wrapped

    out = _facts(view.run)
    b = view.breakdown
    if b.height:
        rows = [
            (
                r["rank"],
                r["steps"],
                r["origin"],
                duration(r["computing_ns"]),
                duration(r["comm_not_overlapped_ns"]),
                duration(r["overlapped_ns"]),
                duration(r["free_ns"]),
                duration(r["stage_ns"]),
                duration(r["recv_wait_ns"]),
                duration(r["p2p_bubble_ns"]),
            )
            for r in b.iter_rows(named=True)
        ]
        headers = (
            "rank",
            "steps",
            "from",
            "computing",
            "comm excl.",
            "overlapped",
            "free",
            "stage",
            "recv wait",
            "p2p wait",
        )
        out += [
            "",
            render_table(
                headers,
                rows,
                right=tuple(range(3, 10)),
                title="Step breakdown per rank (sum over steps)",
            ),
        ]
    else:
        out += ["", "no step breakdown stored for this run"]
    if view.kernels.height:
        rows = [
            (
                ellipsis(r["name"], 64),
                r["count"],
                duration(r["total_ns"]),
                duration(r["max_ns"]),
                r["ranks"],
            )
            for r in view.kernels.iter_rows(named=True)
        ]
        source = _kernel_source(view.kernels["from"][0], view.run.get("source"))
        out += [
            "",
            render_table(
                ("kernel", "count", "total", "max", "ranks"),
                rows,
                right=(1, 2, 3, 4),
                title=f"Top kernels by time ({source})",
            ),
        ]
    if view.comm.height:
        rows = [
            (
                ellipsis(r["op"], 48),
                "p2p" if r["is_p2p"] else "collective",
                r["count"],
                duration(r["total_ns"]),
                duration(r["wait_ns"]),
                r["ranks"],
            )
            for r in view.comm.iter_rows(named=True)
        ]
        out += [
            "",
            render_table(
                ("comm op", "kind", "count", "total", "wait", "ranks"),
                rows,
                right=(2, 3, 4, 5),
                title="Top communication ops by time",
            ),
        ]
    if view.chunks.height:
        rows = [
            (
                r["rank"],
                _stage(r["vstage"]),
                r["chunks"],
                r["requests"],
                f"{r['first_k']}..{r['last_k']}",
                duration(r["mean_busy_ns"]),
                duration(r["min_busy_ns"]),
                duration(r["max_busy_ns"]),
            )
            for r in view.chunks.iter_rows(named=True)
        ]
        out += [
            "",
            render_table(
                ("rank", "vstage", "chunks", "requests", "k", "mean τ", "min", "max"),
                rows,
                right=(2, 3, 5, 6, 7),
                title="Chunks",
            ),
        ]
    if view.fits.height:
        rows = [
            (
                _stage(r.get("vstage")),
                r["n_points"],
                f"{duration(r['slope'])} [{duration(r['slope_lo'])}, {duration(r['slope_hi'])}]",
                f"{duration(r['intercept'])} [{duration(r['intercept_lo'])},"
                f" {duration(r['intercept_hi'])}]",
                f"{r['r2']:.4f}" if r["r2"] is not None and math.isfinite(r["r2"]) else "-",
                r["verdict"],
            )
            for r in view.fits.iter_rows(named=True)
        ]
        level = view.fits["level"][0]
        headers = ("vstage", "points", f"slope per k [{level:.0%} CI]", "intercept [CI]", "R²")
        out += [
            "",
            render_table(
                (*headers, "verdict"), rows, right=(1, 4), title="τ_k fit (this run alone)"
            ),
        ]
    if view.notes:
        out += [""] + [wrapped(f"note: {n}", "  ") for n in view.notes]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    from pipelines.analysis.runs.run_views import match_run_id, show_run
    from pipelines.ingest.frames import printable

    con = store_of(args).open(read_only=True)
    try:
        found = match_run_id(con, args.run_id)
        if len(found) != 1:
            why = "no run" if not found else f"{len(found)} runs ({', '.join(found[:5])})"
            print(
                f"tracereplay show: {why} matching {args.run_id!r}; `tracereplay runs` lists them",
                file=sys.stderr,
            )
            return ExitCode.BAD_INPUT
        view = show_run(con, found[0], fit=not args.no_fit)
        page = None
        if args.html is not None:
            from dashboards.site import run_page

            page = run_page(con, found[0], args.html)
    finally:
        con.close()
    if args.json:
        payload = view.as_json()
        if page is not None:
            payload["html"] = str(page)
        emit_json(payload)
    else:
        # folder names may hold control characters (ESC, TAB): shown as escapes, never sent raw
        print("\n".join(printable(line) for line in _text(view).split("\n")))
        if page is not None:
            print(f"\nrun page: {shown_path(page)}")
    return ExitCode.OK


def _stage(vstage: int | None) -> str:
    """A virtual stage as printed: '-' where the chunks carry none (ProfilerStep windows are
    stored as stage -1, as `fit` prints them)."""
    return "-" if vstage is None or vstage < 0 else str(vstage)
