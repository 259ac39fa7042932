"""`tracereplay advise`: the best chunk size and schedule for a prompt length and pipeline depth,
with its predicted TTFT / throughput and whether its lead over the runner-up is inside the noise."""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

from pipelines import schedule_kinds
from pipelines.cli import ExitCode
from pipelines.cli._common import (
    add_json_option,
    add_warehouse_option,
    number,
    one_run,
    shown_path,
    store_of,
)
from pipelines.cli._json import emit_json

DESCRIPTION = """\
Sweep chunk size x schedule on one cost model with the simulator (pipelines/sim, the same one
`simulate` and `replay` run) for a prompt of --seq-len tokens on --pp ranks, and recommend the
configuration with the highest throughput (or the lowest mean TTFT: --objective ttft), with its
predicted TTFT, throughput and bubble, and its margin over the runner-up.

The cost model comes from one of:
  --preset NAME     a simulator preset (deepseek-v3.1, qwen3-coder-30b-a3b, glm-5.2, llama3-8b):
                    its calibrated cost, links and TP/EP collectives
  --run RUN_ID      a stored run: tau(c, p) fitted to its chunks, as `replay --cost fitted`
  --curve A,B@C     a fitted full-model line tau_k = A + B k (ms) at chunk size C (e.g. 24K)
  --table FILE      an operator-latency table (Vidur's attention/mlp CSV, or the generic
                    tokens / prefix / time_* layout of docs/latency_tables.md; --operator picks
                    one operator or sums them), tau(c, p) fitted to its prefill points

Is the lead real? Each side is measured as the mean of --runs runs; a run is one simulation with
--task-noise per stage call times a --run-noise run-level factor (lognormal). Over --draws such
paired measurements the margin's central 95 % range is printed; when it reaches 0 the margin is
inside the noise and the runner-up is as good a choice. With one request VPP-Pack has nothing
to pack and ties VPP-Async (listed as a tie). docs/advise.md says what the sweep relies on and
which of the VPP paper's findings (Shi et al., 2026, arXiv 2608.26523) it reproduces.

Progress goes to stderr. Exit status: 0 ok, 2 bad arguments, unknown run or unreadable table."""

EPILOG = """examples:
  tracereplay advise --preset deepseek-v3.1 --seq-len 512K
  tracereplay advise --preset glm-5.2 --seq-len 64K --chunks 8K:32K:4K --json
  tracereplay advise --run <run_id> --seq-len 256K --pp 2
  tracereplay advise --curve 180,12@16K --seq-len 128K"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "advise",
        help="best chunk size and schedule for a prompt length, with its margin and noise",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", metavar="NAME", help="a simulator preset (see above)")
    source.add_argument("--run", metavar="RUN_ID", help="a stored run with chunks")
    source.add_argument(
        "--curve",
        metavar="A,B@C",
        type=_checked("curve"),
        help="tau_k = A + B k ms at chunk size C",
    )
    source.add_argument("--table", metavar="FILE", type=Path, help="a latency table")
    parser.add_argument(
        "--operator",
        metavar="NAME",
        help="with --table: the operator's points (e.g. attn_prefill), or sum: all added up",
    )
    parser.add_argument(
        "--seq-len",
        metavar="TOKENS",
        type=_checked("tokens"),
        help="prompt length, e.g. 512K (default with --run: the run's seq_len)",
    )
    parser.add_argument(
        "--chunks",
        default="paper",
        type=_checked("chunks"),
        metavar="LIST",
        help="chunk sizes: a list and lo:hi:step ranges, 'paper' (8K,16K,24K,32K, the VPP "
        "paper's budgets) or 'fine' (8K:32K:4K) (default: paper)",
    )
    parser.add_argument(
        "--schedules",
        default="cpp,dcpp,dcpp_sglang,vpp,vpp_async,vpp_pack",
        metavar="LIST",
        help=f"comma-separated, from {', '.join(schedule_kinds.NAMES)} "
        "(default: all but dcpp_vllm_ascend, which is dcpp)",
    )
    positive = number(int, low=1, what="a whole number")
    parser.add_argument("--pp", type=positive, default=2, help="pipeline ranks (default: 2)")
    parser.add_argument(
        "--vp", type=positive, default=2, help="virtual stages per rank for vpp* (default: 2)"
    )
    parser.add_argument(
        "--requests",
        type=positive,
        default=1,
        help="prompts queued back to back (default: 1, the paper's long-sequence workload)",
    )
    parser.add_argument(
        "--objective",
        choices=("throughput", "ttft"),
        default="throughput",
        help="rank by throughput (makespan) or mean TTFT (default: throughput)",
    )
    pct = number(float, low=0, high=50, what="a percentage 0-50")
    parser.add_argument(
        "--task-noise", type=pct, default=3.0, help="%% per stage call (default: 3)"
    )
    parser.add_argument("--run-noise", type=pct, default=2.0, help="%% run-to-run (default: 2)")
    parser.add_argument(
        "--runs", type=positive, default=4, help="runs a side in a measurement (default: 4)"
    )
    parser.add_argument(
        "--draws",
        type=number(int, low=100, high=1_000_000, what="a whole number 100-1000000"),
        default=2000,
        help="paired measurements drawn (default: 2000)",
    )
    parser.add_argument("--seed", type=number(int, low=0, what="a seed"), default=0)
    add_warehouse_option(parser)
    add_json_option(parser)
    parser.set_defaults(func=run)


def _checked(kind: str):
    """An argparse type that parses the text as `run` will (tokens, a chunk grid, a curve) and
    keeps the text: a bad value is one `argument --X: ...` line at the parser (exit 2)."""

    def check(text: str) -> str:
        from pipelines.analysis.advice.grid import parse_chunk_grid, parse_tokens

        try:
            {"tokens": parse_tokens, "chunks": parse_chunk_grid, "curve": _curve}[kind](text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return text

    check.__name__ = kind
    return check


CURVE_MAX_MS = 1e7
"""The largest A or B of --curve, in ms (2.8 h): 1e308 ms passed and the simulator's int64
nanoseconds wrapped to a negative TTFT."""


def _fail(message: str) -> int:
    print(f"tracereplay advise: {message}", file=sys.stderr)
    return ExitCode.BAD_INPUT


def _curve(text: str) -> tuple[float, float, int]:
    from pipelines.analysis.advice.grid import parse_tokens

    try:
        line, chunk = text.split("@")
        a, b = (float(v) for v in line.split(","))
    except ValueError:
        raise ValueError(
            f"--curve {text!r}: expected A,B@C, e.g. 180,12@16K (ms, tokens)"
        ) from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"--curve {text!r}: A and B must be finite")
    if not (0 < a <= CURVE_MAX_MS and 0 <= b <= CURVE_MAX_MS):
        raise ValueError(
            f"--curve {text!r}: A must be > 0 and B >= 0, both at most {CURVE_MAX_MS:g} ms"
            " (a chunk of hours overflows the simulator's integer nanoseconds)"
        )
    return a * 1e6, b * 1e6, parse_tokens(chunk)


def _source(args: argparse.Namespace):
    """(cost source, the run's seq_len or None)."""
    from pipelines.analysis import advice

    if args.operator is not None and args.table is None:
        raise ValueError("--operator picks an operator of a --table; give --table FILE too")
    if args.preset is not None:  # '' is an unknown preset, not "no preset"
        return advice.preset_source(args.preset), None
    if args.curve is not None:
        return advice.curve_source(*_curve(args.curve)), None
    if args.table is not None:
        if not args.table.is_file():
            raise ValueError(f"--table {shown_path(args.table)}: no such file")
        return advice.table_source(args.table, args.operator), None
    store = store_of(args)
    if not store.exists():
        raise ValueError(f"no warehouse at {store.location}")
    session = store.open(read_only=True)
    try:
        run_id = one_run(session, args.run, "--run")
        source = advice.run_source(session, run_id)
        seq = session.run_row(run_id)["seq_len"][0]
    finally:
        session.close()
    return source, int(seq) if seq else None


def run(args: argparse.Namespace) -> int:
    from pipelines.analysis import advice
    from pipelines.analysis.advice.grid import parse_chunk_grid, parse_tokens

    started = time.perf_counter()
    schedules = tuple(s.strip() for s in args.schedules.split(",") if s.strip())
    try:
        for name in schedules:
            schedule_kinds.get(name)
        chunks = parse_chunk_grid(args.chunks)
        seq_len = parse_tokens(args.seq_len) if args.seq_len else None
        source, run_seq = _source(args)
    except ValueError as exc:
        return _fail(str(exc))
    seq_len = seq_len or run_seq
    if seq_len is None:
        return _fail("give --seq-len (e.g. --seq-len 512K)")
    try:
        scenario = advice.Scenario(
            seq_len,
            pp=args.pp,
            vp=args.vp,
            requests=args.requests,
            chunks=chunks,
            schedules=schedules,
            objective=args.objective,
        )
        noise = advice.NoiseModel(
            task=args.task_noise / 100,
            run=args.run_noise / 100,
            runs=args.runs,
            draws=args.draws,
            seed=args.seed,
        )
    except ValueError as exc:
        return _fail(str(exc))

    def progress(line: str) -> None:
        print(f"[advise {time.perf_counter() - started:5.1f} s] {line}", file=sys.stderr)

    try:
        result = advice.advise(source, scenario, noise, progress)
    except ValueError as exc:  # a cost model the sweep cannot use (issue 36 round five: a
        # table whose points lie on a plane gave the chunk predictor a = -1.3e-14, a traceback)
        return _fail(str(exc))
    progress("done")
    if args.json:
        emit_json(result.as_dict())
    else:
        print(format_advice(result))
    return ExitCode.OK


def _share(value: float) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.1%}"


def _pct(value: float) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:+.2%}"


def format_advice(result: Any) -> str:
    """The sweep table (rows = chunk sizes, columns = schedules: throughput), the best of each
    schedule, and the recommendation with its margin; fits 120 columns for up to 9 schedules."""
    from pipelines.analysis.advice.grid import remainder_note, tokens_label
    from pipelines.cli._format import duration

    sc, rows, best = result.scenario, result.rows, result.best
    cell = {(r["schedule"], r["chunk_size"]): r for r in rows}
    tops = {s: min((r for r in rows if r["schedule"] == s), key=_cost(sc)) for s in sc.schedules}
    lines = [
        f"advise: {result.source['label']}",
        f"  {tokens_label(sc.seq_len)} tokens x {sc.requests} request(s), pp {sc.pp}, vp {sc.vp}; "
        f"{len(sc.schedules)} schedules x {len(sc.chunks)} chunk sizes, ranked by {sc.objective}",
        *(f"  source: {note}" for note in result.source["notes"]),
        "",
        "throughput (tok/s) by chunk size and schedule; * best of its schedule, ** best overall",
    ]
    width = max(11, *(len(s) + 2 for s in sc.schedules))
    lines.append("chunk  " + "".join(s.rjust(width) for s in sc.schedules))
    for chunk in sc.chunks:
        text = f"{tokens_label(chunk):<7}"
        for s in sc.schedules:
            r = cell[(s, chunk)]
            mark = "**" if r is best else ("*" if r is tops[s] else "")
            text += f"{r['throughput_tok_s']:,.0f}{mark:<2}".rjust(width)
        lines.append(text.rstrip())
    lines += ["", "best of each schedule:"]
    head = (
        f"  {'schedule':<12}{'chunk':>6}{'TTFT':>11}{'tok/s':>11}{'bubble':>8}{'steps':>6}  trend"
    )
    lines.append(head)
    for s in sc.schedules:
        r = tops[s]
        bubble = r["bubble_ratio"]
        lines.append(
            f"  {s:<12}{tokens_label(r['chunk_size']):>6}{duration(r['ttft_mean_ns']):>11}"
            f"{r['throughput_tok_s']:>11,.0f}"
            f"{_share(bubble):>8}{r['scheduling_steps']:>6}"
            f"  {result.trends[s]}"
        )
    lines += [
        "",
        f"recommended: {best['schedule']} at {tokens_label(best['chunk_size'])} chunks "
        f"({remainder_note(sc.seq_len, best['chunk_size'])})",
        f"  predicted TTFT {duration(best['ttft_mean_ns'])}, throughput "
        f"{best['throughput_tok_s']:,.0f} tok/s, makespan {duration(best['makespan_ns'])}, "
        f"bubble {_share(best['bubble_ratio'])}",
    ]
    if result.ties:
        lines.append(f"  same result: {', '.join(result.ties)}")
    runner = result.runner_up
    if runner is None:
        lines.append("  no runner-up: every configuration has the same result")
    else:
        n = result.noise
        verdict = (
            "inside the noise: the runner-up is as good a choice"
            if result.inside_noise
            else "outside the noise"
        )
        what = "makespan" if sc.objective == "throughput" else "mean TTFT"
        lines += [
            f"  runner-up: {runner['schedule']} at {tokens_label(runner['chunk_size'])}, "
            f"{what} longer by {_pct(result.margin)}",
            f"  as measured with {n.runs} runs a side ({n.task:.0%} task, {n.run:.0%} run noise, "
            f"{n.draws} draws): margin {n.level:.0%} range [{_pct(result.margin_lo)}, "
            f"{_pct(result.margin_hi)}],",
            f"  runner-up measured faster in {result.runner_up_faster:.1%}: {verdict}",
        ]
    lines += [f"  note: {note}" for note in result.notes]
    return "\n".join(lines)


def _cost(sc: Any):
    key = "makespan_ns" if sc.objective == "throughput" else "ttft_mean_ns"
    return lambda r: r[key]
